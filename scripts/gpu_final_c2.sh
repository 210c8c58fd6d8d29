#!/usr/bin/env bash
# Part C2: wheels into site-packages, then the baseline and tuned candidates through the verifier on GPU 1
# (CUDA_VISIBLE_DEVICES set, as the optimize runs do).
set -u
export PYTHONUNBUFFERED=1 COLUMNS=160
env -u PYTHONPATH python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .whl/*.whl 2>&1 | tail -3
export PYTHONPATH=$PWD
CUDA_VISIBLE_DEVICES=1 timeout 120 python3 scripts/verify_corpus_gpu.py --chip h200 --only baseline,tuned_wrapper \
  --out $OUT/verify_baseline.json > $OUT/verify_baseline.log 2>&1
tail -6 $OUT/verify_baseline.log
