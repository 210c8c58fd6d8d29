#!/usr/bin/env bash
# GPU session, part B (same warm machine as part A, which installed the wheels into /tmp/site): the optimize runs
# of issue 6 with the fp16 embedding model carried in .model. Results packed into $OUT/optimize.tgz.
set -u
export PYTHONUNBUFFERED=1 COLUMNS=160 PYTHONPATH=$PWD CHIPLORE_EMBED_MODEL=$PWD/.model/minilm
# the verifier's sandbox runs `python -I` (PYTHONPATH ignored): the wheels go into the interpreter's own site-packages
env -u PYTHONPATH python3 -c "import chromadb, pydantic" || { echo "wheels missing: run part C first"; exit 1; }
timeout 560 bash scripts/optimize_gpu.sh $OUT/opt --minutes ${1:-8.6} > $OUT/optimize.log 2>&1
tar czf $OUT/optimize.tgz -C $OUT opt
tail -40 $OUT/optimize.log
