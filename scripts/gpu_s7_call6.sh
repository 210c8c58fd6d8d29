#!/usr/bin/env bash
# GPU session 7, call 6 (one H200; carry .whl: the bench imports pydantic through hardware_profiles):
# 1. the 9-case bench (baseline / tuned / flex_attention; tuned now runs the mixed batch with gather-ahead);
# 2. the kernels' GPU tests in full, in 8 pytest-xdist workers (preinstalled there; serial, session 6's call 4 ran
#    out of 280 s after more than half).
set -u
export PYTHONUNBUFFERED=1 COLUMNS=160
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  > $OUT/pip.log 2>&1
export PYTHONPATH=$PWD:/tmp/site
timeout 250 python3 benchmarks/bench_extend_attention.py --chip h200 --out $OUT/bench.json > $OUT/bench.log 2>&1
tail -25 $OUT/bench.log
export PYTHONPATH=$PWD
timeout 240 python3 -m pytest -q -m gpu tests/kernels -p no:cacheprovider -n 8 --ignore=tests/kernels/test_timing_gpu.py \
  > $OUT/tests_kernels_gpu.log 2>&1
echo "pytest rc=$?"
tail -15 $OUT/tests_kernels_gpu.log
