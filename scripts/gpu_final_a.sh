#!/usr/bin/env bash
# GPU session, part A (H200; 1 or 2 GPUs): GPU tests, profile detect, kernel benchmark vs flex_attention,
# verifier corpus. Needs the wheels of scripts/prepare_device_bundle.py (carry .whl). Results under $OUT.
set -u
export PYTHONUNBUFFERED=1 COLUMNS=160
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || { echo "wheel install failed"; exit 1; }
export PYTHONPATH=/tmp/site:$PWD
NG=$(nvidia-smi -L | wc -l)
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.mem,memory.used --format=csv > $OUT/nvidia-smi.txt
bench() { CUDA_VISIBLE_DEVICES=$1 timeout $2 python3 benchmarks/bench_extend_attention.py --chip h200 --out $OUT/bench.json > $OUT/bench.log 2>&1; }
if [ "$NG" -gt 1 ]; then bench 1 480 & fi
export CUDA_VISIBLE_DEVICES=0
timeout 150 python3 -m pytest -q -m gpu tests -n 8 -p no:cacheprovider > $OUT/pytest_gpu.log 2>&1
mkdir -p /tmp/chome && export CHIPLORE_HOME=/tmp/chome
{ python3 -m agent.cli profile detect --as h200; python3 -m agent.cli profile show h200; } > $OUT/profile_detect.log 2>&1
unset CHIPLORE_HOME
if [ "$NG" -le 1 ]; then bench 0 300; fi
timeout 280 python3 scripts/verify_corpus_gpu.py --chip h200 --out $OUT/verify_corpus_h200.json > $OUT/verify_corpus.log 2>&1
wait
tail -5 $OUT/pytest_gpu.log; grep -i "compute\|smem\|shared" $OUT/profile_detect.log | head -8
tail -14 $OUT/bench.log; tail -4 $OUT/verify_corpus.log
