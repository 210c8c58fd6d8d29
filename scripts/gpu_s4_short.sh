#!/usr/bin/env bash
# GPU session 4, the one short call left (1 GPU, carry .whl): where a verification's time goes with the verifier
# as merged today (two children per candidate, the parent's per-trial work prefetched, the float32 trial), then the
# compute-bound sweep restricted to the prefix-heavy cases (prefix pre-gather on/off).
set -u
export PYTHONUNBUFFERED=1 COLUMNS=160
env -u PYTHONPATH python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .whl/*.whl 2>&1 | tail -3
export PYTHONPATH=$PWD
timeout 110 python3 benchmarks/diagnose_verify_time.py > $OUT/verify_time.txt 2>&1
cat $OUT/verify_time.txt
timeout 150 python3 benchmarks/sweep_extend_attention.py --compute --workers 14 --cases chunked-prefill,mixed-batch,prefill \
  --out $OUT/sweep4.json > $OUT/sweep4.log 2>&1
grep -A40 "^case " $OUT/sweep4.log | head -40; tail -3 $OUT/sweep4.log
