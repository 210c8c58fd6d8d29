#!/usr/bin/env bash
# GPU session 5, call 3 (x2, carry .whl): Landlock write isolation now on by default (children may write their
# scratch, the Triton cache -- created before the restriction --, /dev and /proc/self).
# GPU 1: the whole corpus in its own copy of the tree, defaults (isolation on).
# GPU 0: the six honest candidates (isolation on, per-candidate seconds), the verifier's GPU tests (incl. Landlock),
# the verify-time diagnosis of the baseline with isolation on; then the full-size bench cases of the tuned kernel
# (chunked prefill now split in two over the prefix) and the pre-gather's GPU tests.
set -u
export PYTHONUNBUFFERED=1 COLUMNS=160
env -u PYTHONPATH python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .whl/*.whl 2>&1 | tail -3
env -u PYTHONPATH python3 -c "import chromadb, pydantic, openai, bm25s; print('wheels ok')" || exit 1
rm -rf /tmp/corpus && cp -r "$PWD" /tmp/corpus
(
  cd /tmp/corpus && export PYTHONPATH=/tmp/corpus
  CUDA_VISIBLE_DEVICES=1 timeout 400 python3 scripts/verify_corpus_gpu.py --chip h200 \
    --out $OUT/verify_corpus_h200.json > $OUT/verify_corpus.log 2>&1
) &
export PYTHONPATH=$PWD
CUDA_VISIBLE_DEVICES=0 timeout 150 python3 - > $OUT/honest_landlock.log 2>&1 <<'PY'
from agent.verifier import Verifier, VerifyOptions
from hardware_profiles import load_profile
from tests.verifier.corpus import HONEST
with Verifier("extend_attention", load_profile("h200"), VerifyOptions(device="cuda")) as v:
    for h in HONEST:
        d = v.verify(h.path)
        print(h.name, d.stage, d.config.get("fs_isolation"), f"{d.verify_seconds:.1f} s", d.reasons[:1])
PY
CUDA_VISIBLE_DEVICES=0 timeout 150 python3 -m pytest -q -m gpu tests/verifier -p no:cacheprovider \
  > $OUT/pytest_verifier_gpu.log 2>&1
CUDA_VISIBLE_DEVICES=0 timeout 80 python3 benchmarks/diagnose_verify_time.py --runs 2 > $OUT/verify_time.txt 2>&1
CUDA_VISIBLE_DEVICES=0 timeout 150 python3 -m pytest -q -m gpu \
  tests/kernels/test_extend_attention_gpu.py -k "gather or full_size or 2_31 or tma_on" -p no:cacheprovider \
  > $OUT/pytest_kernels_gpu.log 2>&1
wait
cat $OUT/honest_landlock.log; tail -3 $OUT/pytest_verifier_gpu.log; head -4 $OUT/verify_time.txt
tail -3 $OUT/pytest_kernels_gpu.log; grep "NO \|cheat runs" $OUT/verify_corpus.log | tail -8
