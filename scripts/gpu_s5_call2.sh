#!/usr/bin/env bash
# GPU session 5, call 2 (one H200, carry .whl), everything in sequence so that timings see an idle machine:
# 1. which writable directories CUDA needs under Landlock (the honest candidates failed CUDA init with
#    fs_isolation=True in call 1), then the honest candidates again with fs_isolation=True (child now adds /proc/self);
# 2. verify time of the baseline with its float32 tiles capped (call 1: 37.5 s cold, 30.1 s warm, 19-22 s of it the
#    float32 trial's compile);
# 3. pre-gather bandwidth against a contiguous copy (call 1's run failed on a bench() argument) and its GPU tests;
# 4. the 9-case benchmark, alone on the machine (call 1's sweep ran beside the corpus and was noisy), with
#    chunked prefill now split in two over the prefix.
set -u
export PYTHONUNBUFFERED=1 COLUMNS=160 PYTHONPATH=$PWD
env -u PYTHONPATH python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .whl/*.whl 2>&1 | tail -3
timeout 100 python3 scripts/probe_landlock_cuda.py > $OUT/probe_landlock.log 2>&1
timeout 150 python3 - > $OUT/fs_isolation_gpu.log 2>&1 <<'PY'
from agent.verifier import Verifier, VerifyOptions
from hardware_profiles import load_profile
from tests.verifier.corpus import HONEST
with Verifier("extend_attention", load_profile("h200"), VerifyOptions(device="cuda", fs_isolation=True)) as v:
    for h in HONEST:
        d = v.verify(h.path)
        print(h.name, d.stage, d.config.get("fs_isolation"), f"{d.verify_seconds:.1f} s", d.reasons[:1])
PY
timeout 100 python3 benchmarks/diagnose_verify_time.py --runs 2 > $OUT/verify_time.txt 2>&1
timeout 60 python3 -m pytest -q tests/kernels/test_prefix_gather.py -p no:cacheprovider > $OUT/gather.log 2>&1
timeout 90 python3 benchmarks/bench_prefix_gather.py >> $OUT/gather.log 2>&1
timeout 240 python3 benchmarks/bench_extend_attention.py --chip h200 --out $OUT/bench.json > $OUT/bench.log 2>&1
cat $OUT/probe_landlock.log $OUT/fs_isolation_gpu.log; head -4 $OUT/verify_time.txt; cat $OUT/gather.log
tail -25 $OUT/bench.log
