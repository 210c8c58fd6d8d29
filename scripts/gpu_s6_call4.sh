#!/usr/bin/env bash
# GPU session 6, call 4 (one H200, no wheels): the 9-case benchmark of the tuned kernel with sweep 7's rule
# (several sequences or D <= 64: 64x64 tiles, 4 warps, two programs per SM), alone on the machine, then the
# kernels' GPU tests (bf16, full sizes, offsets beyond 2^31, TMA).
set -u
export PYTHONUNBUFFERED=1 COLUMNS=160 PYTHONPATH=$PWD
timeout 260 python3 benchmarks/bench_extend_attention.py --chip h200 --out $OUT/bench.json > $OUT/bench.log 2>&1
timeout 280 python3 -m pytest -q -m gpu tests/kernels -p no:cacheprovider > $OUT/pytest_kernels_gpu.log 2>&1
tail -25 $OUT/bench.log; tail -4 $OUT/pytest_kernels_gpu.log
