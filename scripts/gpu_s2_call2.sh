#!/usr/bin/env bash
# GPU session 2, call 2 or 3 (same warm x2 machine as call 1, carry .model): the optimize runs of issue 6
# (PART=runs) or the SIGKILL + resume check (PART=kill). Results packed into $OUT/<part>.tgz.
set -u
PART=${1:-runs}
MINUTES=${2:-9.2}
export PYTHONUNBUFFERED=1 COLUMNS=160 PYTHONPATH=$PWD CHIPLORE_EMBED_MODEL=$PWD/.model/minilm
env -u PYTHONPATH python3 -c "import chromadb, pydantic" || { echo "wheels missing: run call 1 first"; exit 1; }
timeout 575 bash scripts/optimize_gpu.sh $OUT/$PART --part $PART --minutes $MINUTES --kill-evals 4 > $OUT/$PART.log 2>&1
tar czf $OUT/$PART.tgz -C $OUT $PART
tail -45 $OUT/$PART.log
