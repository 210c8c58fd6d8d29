#!/usr/bin/env bash
# GPU session 7, call 9 (one H200; carry .whl): after the review fixes (proxy fence only with TMA; gather-ahead only
# for equal extend lengths; gather-ahead tests on a NaN-poisoned workspace, the shipped ordered one-head-ahead
# configuration included): the kernels' gather-ahead and full-size GPU tests, and the mixed batch bench.
set -u
export PYTHONUNBUFFERED=1 COLUMNS=160 PYTHONPATH=$PWD
timeout 200 python3 -m pytest -q -m gpu tests/kernels/test_extend_attention_gpu.py -k "ahead or full_size or 2_31" \
  -p no:cacheprovider -n 8 > $OUT/tests_ahead9.log 2>&1
echo "pytest rc=$?"; tail -4 $OUT/tests_ahead9.log
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONPATH=$PWD:/tmp/site
timeout 100 python3 benchmarks/bench_extend_attention.py --chip h200 --out $OUT/bench9.json --cases mixed-batch,ragged \
  --no-flex --reps 40 > $OUT/bench9.log 2>&1
cat $OUT/bench9.md
