#!/usr/bin/env bash
# GPU session 5, call 6 (single H200, carry .whl, the last ~200 device seconds): under Landlock (on by default since
# session 5, after the tempfile fix) the file-writing cheats and a timing cheat are still rejected at their expected
# stages, and the baseline passes. The whole corpus under Landlock is runbook session 6, item 2.
set -u
export PYTHONUNBUFFERED=1 COLUMNS=160
env -u PYTHONPATH python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .whl/*.whl 2>&1 | tail -3
rm -rf /tmp/corpus && cp -r "$PWD" /tmp/corpus && cd /tmp/corpus && export PYTHONPATH=/tmp/corpus
timeout 150 python3 scripts/verify_corpus_gpu.py --chip h200 --out $OUT/landlock_subset.json \
  --only baseline,shadow_torch,triton_cache_write,storage_file_write,replay_when_timed,fp32_wide_heads_as_fp16 \
  > $OUT/landlock_subset.log 2>&1
echo "rc=$?"; grep -i "landlock\|cheat runs\|NO " $OUT/landlock_subset.log | tail -12; tail -14 $OUT/landlock_subset.log
