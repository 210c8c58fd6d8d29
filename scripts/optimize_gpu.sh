#!/usr/bin/env bash
# Issue 6 on the H200: onboard, optimize with and without retrieval, SIGKILL + resume; results under $1.
# Usage: bash scripts/optimize_gpu.sh OUT_DIR [extra args of scripts/optimize_gpu.py, e.g. --minutes 8]
set -euo pipefail
cd "$(dirname "$0")/.."
OUT_DIR="${1:?usage: scripts/optimize_gpu.sh OUT_DIR}"
shift
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.mem,memory.used --format=csv > /dev/null 2>&1 || true
exec python3 scripts/optimize_gpu.py --out "$OUT_DIR" "$@"
