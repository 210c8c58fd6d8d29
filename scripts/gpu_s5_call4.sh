#!/usr/bin/env bash
# GPU session 5, call 4 (x2, carry .whl; call 5 follows at once on the warm machine with .model:
# `bash scripts/gpu_s2_call2.sh runs 8.5`). Installs the wheels and checks Landlock on the GPU after the tempfile fix:
# GPU 0 the six honest candidates with the default options (isolation on); GPU 1 the verifier's GPU tests, in a
# copy of the tree (the tamper check must not see the other's writes).
set -u
export PYTHONUNBUFFERED=1 COLUMNS=160
env -u PYTHONPATH python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .whl/*.whl 2>&1 | tail -3
env -u PYTHONPATH python3 -c "import chromadb, pydantic, openai, bm25s; print('wheels ok')" || exit 1
rm -rf /tmp/vtests && cp -r "$PWD" /tmp/vtests
( cd /tmp/vtests && CUDA_VISIBLE_DEVICES=1 PYTHONPATH=/tmp/vtests timeout 150 python3 -m pytest -q -m gpu \
    tests/verifier -p no:cacheprovider > $OUT/pytest_verifier_gpu.log 2>&1 ) &
CUDA_VISIBLE_DEVICES=0 PYTHONPATH=$PWD timeout 150 python3 - > $OUT/honest_landlock.log 2>&1 <<'PY'
from agent.verifier import Verifier, VerifyOptions
from hardware_profiles import load_profile
from tests.verifier.corpus import HONEST
with Verifier("extend_attention", load_profile("h200"), VerifyOptions(device="cuda")) as v:
    for h in HONEST:
        d = v.verify(h.path)
        print(h.name, d.stage, d.config.get("fs_isolation"), f"{d.verify_seconds:.1f} s", d.reasons[:1])
PY
wait
cat $OUT/honest_landlock.log; tail -4 $OUT/pytest_verifier_gpu.log
