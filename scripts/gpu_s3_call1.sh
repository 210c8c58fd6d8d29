#!/usr/bin/env bash
# Next GPU session, call 1 (x2, carry .whl): wheels into site-packages; GPU 0: the GPU tests added since the last
# session (timing delay, shared-memory shrink) and the verifier's GPU tests; GPU 1: the whole verifier corpus
# (every cheat with all layers and with the static stage off, every honest candidate) at this commit; then GPU 0:
# where a verification's time goes (benchmarks/diagnose_verify_time.py).
# Then call 2: `bash scripts/gpu_s2_call2.sh kill 4` (carry .model) for the SIGKILL + resume check of issue 6.
set -u
export PYTHONUNBUFFERED=1 COLUMNS=160
env -u PYTHONPATH python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .whl/*.whl 2>&1 | tail -3
env -u PYTHONPATH python3 -c "import chromadb, pydantic, openai, bm25s; print('wheels ok')" || exit 1
export PYTHONPATH=$PWD
(CUDA_VISIBLE_DEVICES=1 timeout 420 python3 scripts/verify_corpus_gpu.py --chip h200 \
   --out $OUT/verify_corpus_h200.json > $OUT/verify_corpus.log 2>&1) &
CUDA_VISIBLE_DEVICES=0 timeout 400 python3 -m pytest -q -m gpu tests/verifier tests/kernels/test_timing_gpu.py \
  "tests/kernels/test_extend_attention_gpu.py::test_a_configuration_triton_refuses_for_shared_memory_is_shrunk_until_it_compiles" \
  -p no:cacheprovider > $OUT/pytest_gpu.log 2>&1
CUDA_VISIBLE_DEVICES=0 timeout 200 python3 benchmarks/diagnose_verify_time.py > $OUT/verify_time.txt 2>&1
wait
tail -6 $OUT/pytest_gpu.log; cat $OUT/verify_time.txt; tail -25 $OUT/verify_corpus.log
