#!/usr/bin/env bash
# GPU session 5, call 1 (x2, carry .whl): the verifier at the final commit of session 4 (issue 4).
# GPU 0: where a verification's time goes (baseline, float32 trial now at head dim 64), then the verifier's GPU
# tests. GPU 1: the whole corpus, in a copy of the tree of its own (the tamper check must not see GPU 0's writes),
# then the honest candidates again with Landlock write isolation on (fs_isolation=True; off on GPUs by default).
# Then on GPU 0 the mixed-batch gap (issue 7): the one-launch K+V pre-gather's bandwidth against a contiguous copy,
# and sweep 5 (split-KV, 64-row blocks, heavy-first off, all with pre-gather + TMA).
set -u
export PYTHONUNBUFFERED=1 COLUMNS=160
env -u PYTHONPATH python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .whl/*.whl 2>&1 | tail -3
env -u PYTHONPATH python3 -c "import chromadb, pydantic, openai, bm25s; print('wheels ok')" || exit 1
rm -rf /tmp/corpus && cp -r "$PWD" /tmp/corpus
(
  cd /tmp/corpus && export PYTHONPATH=/tmp/corpus
  CUDA_VISIBLE_DEVICES=1 timeout 330 python3 scripts/verify_corpus_gpu.py --chip h200 \
    --out $OUT/verify_corpus_h200.json > $OUT/verify_corpus.log 2>&1
  CUDA_VISIBLE_DEVICES=1 timeout 150 python3 - > $OUT/fs_isolation_gpu.log 2>&1 <<'PY'
from agent.verifier import Verifier, VerifyOptions
from hardware_profiles import load_profile
from tests.verifier.corpus import HONEST
with Verifier("extend_attention", load_profile("h200"), VerifyOptions(device="cuda", fs_isolation=True)) as v:
    for h in HONEST:
        d = v.verify(h.path)
        print(h.name, d.stage, d.config.get("fs_isolation"), f"{d.verify_seconds:.1f} s", d.reasons[:1])
PY
) &
export PYTHONPATH=$PWD
CUDA_VISIBLE_DEVICES=0 timeout 120 python3 benchmarks/diagnose_verify_time.py --runs 2 > $OUT/verify_time.txt 2>&1
CUDA_VISIBLE_DEVICES=0 timeout 200 python3 -m pytest -q -m gpu tests/verifier -p no:cacheprovider \
  > $OUT/pytest_verifier_gpu.log 2>&1
CUDA_VISIBLE_DEVICES=0 timeout 90 python3 benchmarks/bench_prefix_gather.py > $OUT/gather.log 2>&1
CUDA_VISIBLE_DEVICES=0 timeout 230 python3 benchmarks/sweep_extend_attention.py --tma --workers 14 \
  --out $OUT/sweep5.json > $OUT/sweep5.log 2>&1
wait
cat $OUT/verify_time.txt; tail -3 $OUT/pytest_verifier_gpu.log; cat $OUT/fs_isolation_gpu.log
grep "NO \|cheat runs" $OUT/verify_corpus.log | tail -8
cat $OUT/gather.log; grep -A3 "^mixed-batch\|^chunked\|^prefill\|^ragged" $OUT/sweep5.log | cut -c1-200
