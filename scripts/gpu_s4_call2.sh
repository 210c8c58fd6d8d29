#!/usr/bin/env bash
# GPU session 4, call 2 (x2, carry .whl), after sweep 4 was encoded in kernels/extend_attention/tuned.py:
# GPU 0: the kernel benchmark (baseline vs tuned vs flex_attention, 9 cases); GPU 1: the GPU tests of the tuned
# entry point, then where a verification's time goes, per trial (benchmarks/diagnose_verify_time.py).
set -u
export PYTHONUNBUFFERED=1 COLUMNS=160
env -u PYTHONPATH python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .whl/*.whl 2>&1 | tail -3
export PYTHONPATH=$PWD
(
  CUDA_VISIBLE_DEVICES=1 timeout 200 python3 -m pytest -q -m gpu tests/kernels/test_extend_attention_gpu.py \
    -k "tuned or tma" -p no:cacheprovider > $OUT/pytest_tuned_gpu.log 2>&1
  CUDA_VISIBLE_DEVICES=1 timeout 120 python3 benchmarks/diagnose_verify_time.py > $OUT/verify_time.txt 2>&1
) &
CUDA_VISIBLE_DEVICES=0 timeout 320 python3 benchmarks/bench_extend_attention.py --chip h200 --out $OUT/bench.json \
  > $OUT/bench.log 2>&1
wait
tail -3 $OUT/pytest_tuned_gpu.log; cat $OUT/verify_time.txt; tail -25 $OUT/bench.log
