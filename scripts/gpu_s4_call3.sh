#!/usr/bin/env bash
# GPU session 4, call 3 (x2, carry .whl), after the verifier moved to three sandbox children per candidate and a
# float32 trial at head dim 16: GPU 0: where a verification's time goes (per trial), then the tf32 test and the
# split/float32 GPU tests; GPU 1: the whole verifier corpus.
set -u
export PYTHONUNBUFFERED=1 COLUMNS=160
env -u PYTHONPATH python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .whl/*.whl 2>&1 | tail -3
export PYTHONPATH=$PWD
CUDA_VISIBLE_DEVICES=1 timeout 330 python3 scripts/verify_corpus_gpu.py --chip h200 \
  --out $OUT/verify_corpus_h200.json > $OUT/verify_corpus.log 2>&1 &
CUDA_VISIBLE_DEVICES=0 timeout 120 python3 benchmarks/diagnose_verify_time.py --runs 3 > $OUT/verify_time.txt 2>&1
CUDA_VISIBLE_DEVICES=0 timeout 150 python3 -m pytest -q -m gpu tests/verifier/test_gpu.py -p no:cacheprovider \
  > $OUT/pytest_verifier_gpu.log 2>&1
# the tuned entry point's GPU tests that call 2's 200 s limit cut off (129 of 141 had passed)
CUDA_VISIBLE_DEVICES=0 timeout 200 python3 -m pytest -q -m gpu tests/kernels/test_extend_attention_gpu.py \
  -k "full_size and tuned and not prefill or offsets and tuned or tma_on or tma_launch" -p no:cacheprovider > $OUT/pytest_tuned_tail.log 2>&1
wait
cat $OUT/verify_time.txt; tail -4 $OUT/pytest_verifier_gpu.log; tail -3 $OUT/pytest_tuned_tail.log
grep "NO \|cheat runs" $OUT/verify_corpus.log | tail -8
