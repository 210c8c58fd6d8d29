#!/usr/bin/env bash
# GPU session 2, call 1 (x2, carry .whl): wheels into site-packages; GPU 0: verifier + timing GPU tests;
# GPU 1: verifier timing diagnosis, then the honest candidates through the verifier (times vs kernels.timing.bench).
set -u
export PYTHONUNBUFFERED=1 COLUMNS=160
env -u PYTHONPATH python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .whl/*.whl 2>&1 | tail -3
env -u PYTHONPATH python3 -c "import chromadb, pydantic, openai, bm25s; print('wheels ok')" || exit 1
export PYTHONPATH=$PWD
(CUDA_VISIBLE_DEVICES=1 timeout 100 python3 benchmarks/diagnose_verifier_timing.py --case decode > $OUT/diag.txt 2>&1
 CUDA_VISIBLE_DEVICES=1 timeout 200 python3 scripts/verify_corpus_gpu.py --chip h200 --only "${HONEST_ONLY:-baseline,tuned_wrapper,family_split3_pack,simple_triton}" \
   --out $OUT/verify_honest_h200.json > $OUT/verify_honest.log 2>&1) &
CUDA_VISIBLE_DEVICES=0 timeout 250 python3 -m pytest -q -m gpu tests/verifier tests/kernels/test_timing_gpu.py \
  -p no:cacheprovider > $OUT/pytest_gpu.log 2>&1
wait
tail -6 $OUT/pytest_gpu.log; cat $OUT/diag.txt | tail -20; tail -12 $OUT/verify_honest.log
