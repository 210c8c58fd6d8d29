#!/usr/bin/env bash
# GPU session 6, call 2 (x2, carry .whl; call 3 follows at once on the warm machine with .model:
# `bash scripts/gpu_s2_call2.sh runs 8.7`).
# GPU 0: sweep 7 (4-warp programs two to an SM, issue 7), then the whole verifier corpus in its own copy of the tree
#        with the defaults (Landlock on; GPU children may write only the device nodes: runbook item 2b).
# GPU 1: which /dev paths CUDA needs under Landlock (probe --narrow), the six honest candidates with the defaults
#        (or, if the device-node grant broke CUDA, with gpu_dev_writes="all"), the verifier's GPU tests.
set -u
export PYTHONUNBUFFERED=1 COLUMNS=160
env -u PYTHONPATH python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .whl/*.whl 2>&1 | tail -3
env -u PYTHONPATH python3 -c "import chromadb, pydantic, openai, bm25s; print('wheels ok')" || exit 1
rm -rf /tmp/corpus /tmp/vtests && cp -r "$PWD" /tmp/corpus && cp -r "$PWD" /tmp/vtests
(
  export PYTHONPATH=$PWD CUDA_VISIBLE_DEVICES=0
  timeout 200 python3 benchmarks/sweep_extend_attention.py --occupancy --out $OUT/sweep7.json > $OUT/sweep7.log 2>&1
  cd /tmp/corpus && PYTHONPATH=/tmp/corpus timeout 380 python3 scripts/verify_corpus_gpu.py --chip h200 \
    --out $OUT/verify_corpus_h200.json > $OUT/verify_corpus.log 2>&1
) &
export CUDA_VISIBLE_DEVICES=1
cd /tmp/vtests && export PYTHONPATH=/tmp/vtests
timeout 120 python3 scripts/probe_landlock_cuda.py --narrow > $OUT/probe_landlock_narrow.log 2>&1
DEV=nodes
grep -q "nodes (child default): ok" $OUT/probe_landlock_narrow.log || DEV=all
DEV=$DEV timeout 170 python3 - > $OUT/honest_landlock.log 2>&1 <<'PY'
import os
from agent.verifier import Verifier, VerifyOptions
from hardware_profiles import load_profile
from tests.verifier.corpus import HONEST
opts = VerifyOptions(device="cuda", gpu_dev_writes=os.environ["DEV"])
print("gpu_dev_writes:", opts.gpu_dev_writes)
with Verifier("extend_attention", load_profile("h200"), opts) as v:
    for h in HONEST:
        d = v.verify(h.path)
        print(h.name, d.stage, d.config.get("fs_isolation"), f"{d.verify_seconds:.1f} s", d.reasons[:1])
PY
timeout 170 python3 -m pytest -q -m gpu tests/verifier -p no:cacheprovider > $OUT/pytest_verifier_gpu.log 2>&1
wait
cat $OUT/probe_landlock_narrow.log $OUT/honest_landlock.log; tail -4 $OUT/pytest_verifier_gpu.log
grep "NO \|cheat runs\|honest" $OUT/verify_corpus.log | tail -8; tail -40 $OUT/sweep7.log
