#!/usr/bin/env bash
# GPU session, part C (2 GPUs): install the wheels into the interpreter's own site-packages (the verifier's sandbox
# runs `python -I`, which ignores PYTHONPATH), then the verifier's GPU tests (GPU 0) beside the corpus run (GPU 1).
set -u
export PYTHONUNBUFFERED=1 COLUMNS=160
env -u PYTHONPATH python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .whl/*.whl 2>&1 | tail -3
env -u PYTHONPATH python3 -c "import chromadb, pydantic, openai, bm25s; print('wheels ok')" || exit 1
export PYTHONPATH=$PWD
(CUDA_VISIBLE_DEVICES=1 timeout 300 python3 scripts/verify_corpus_gpu.py --chip h200 --out $OUT/verify_corpus_h200.json > $OUT/verify_corpus.log 2>&1) &
CUDA_VISIBLE_DEVICES=0 timeout 240 python3 -m pytest -q -m gpu tests/verifier -p no:cacheprovider > $OUT/pytest_verifier_gpu.log 2>&1
wait
tail -4 $OUT/pytest_verifier_gpu.log; tail -8 $OUT/verify_corpus.log
