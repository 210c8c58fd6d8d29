#!/usr/bin/env bash
# GPU session 4, call 1 (x2, carry .whl): wheels into site-packages; GPU 0: sweep 4 of the family on the
# compute-bound cases (prefix pre-gather x TMA x stages x gather pipelining), then where a verification's time goes;
# GPU 1: the GPU tests of kernels and verifier (float32 now IEEE, pre-gather, TMA, the shrink test) beside the whole
# verifier corpus. Then call 2: `bash scripts/gpu_s2_call2.sh kill 4` (carry .model).
set -u
export PYTHONUNBUFFERED=1 COLUMNS=160
env -u PYTHONPATH python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .whl/*.whl 2>&1 | tail -3
env -u PYTHONPATH python3 -c "import chromadb, pydantic, openai, bm25s; print('wheels ok')" || exit 1
export PYTHONPATH=$PWD
(
  CUDA_VISIBLE_DEVICES=1 timeout 420 python3 -m pytest -q -m gpu tests/kernels tests/verifier -p no:cacheprovider \
    > $OUT/pytest_gpu.log 2>&1 &
  CUDA_VISIBLE_DEVICES=1 timeout 420 python3 scripts/verify_corpus_gpu.py --chip h200 \
    --out $OUT/verify_corpus_h200.json > $OUT/verify_corpus.log 2>&1
  wait
) &
CUDA_VISIBLE_DEVICES=0 timeout 300 python3 benchmarks/sweep_extend_attention.py --compute --workers 14 \
  --out $OUT/sweep4.json > $OUT/sweep4.log 2>&1
CUDA_VISIBLE_DEVICES=0 timeout 110 python3 benchmarks/diagnose_verify_time.py > $OUT/verify_time.txt 2>&1
wait
tail -4 $OUT/pytest_gpu.log; cat $OUT/verify_time.txt; grep -A60 "^case " $OUT/sweep4.log | head -60
grep "NO \|cheat runs" $OUT/verify_corpus.log | tail -8
