#!/usr/bin/env bash
# The one GPU runner: runs named suites on a GPU machine, each with its own time limit and log under $OUT.
#
# Usage:  bash scripts/gpu.sh SUITE[:SECONDS] [SUITE[:SECONDS] ...]
#         bash scripts/gpu.sh --list
# Environment: OUT (results folder; default ./gpu_out), CHIPLORE_COMMIT (the commit measured: the device copy of
# the tree has no usable .git), SUITE_ARGS_<suite> (extra arguments for one suite, e.g. SUITE_ARGS_bench="--cases decode").
#
# What travels (device tool `carry`): `.whl` (python3.12 wheels from scripts/prepare_device_bundle.py, plus the
# FlashInfer wheels of the development setup's shared/tools/flashinfer, copied into `.fi/`; carried only by calls that benchmark against it), `.model`
# (the fp16 embedding model), `.cache/sglang` (SGLang 0.5.23's kernel files, benchmarks/sglang_kernel.py --fetch).
# Wheels go into the interpreter's own site-packages: the verifier's sandbox starts `python -I`, which ignores
# PYTHONPATH (docs/GPU_RUNBOOK.md). Suites run one after another; a suite that times out or fails does not stop
# the next. Each suite's log is $OUT/<suite>.log; JSON results are $OUT/<suite>.json where the suite writes one.
# A summary line per suite goes to $OUT/summary.txt.
set -u
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 COLUMNS=160 PYTHONPATH="$PWD"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT="${OUT:-$PWD/gpu_out}"
mkdir -p "$OUT"
export CHIPLORE_COMMIT="${CHIPLORE_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"

install_wheels() {  # idempotent: chromadb & co. into site-packages, FlashInfer into /tmp/fi (benchmark peer only)
  if compgen -G ".whl/*.whl" > /dev/null && ! python3 -c "import chromadb" 2>/dev/null; then
    env -u PYTHONPATH python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .whl/*.whl \
      > "$OUT/pip.log" 2>&1 || echo "wheel install failed (see pip.log)"
  fi
  if [ -d .fi ] && [ ! -d /tmp/fi/flashinfer ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/fi \
      .fi/*.whl >> "$OUT/pip.log" 2>&1 || echo "flashinfer install failed (see pip.log)"
  fi
  if [ -d /tmp/fi/flashinfer ]; then
    export CHIPLORE_FLASHINFER_PATH=/tmp/fi FLASHINFER_CUDA_ARCH_LIST=9.0a FLASHINFER_WORKSPACE_BASE=/tmp/fiws \
      FLASHINFER_DISABLE_JIT=1
  fi
  if [ -d .model/minilm ]; then export CHIPLORE_EMBED_MODEL="$PWD/.model/minilm"; fi
}

# --- suites: one function each, named suite_<name>; "$@" holds SUITE_ARGS_<name> ---------------------------------

suite_env() {  # device, driver and package versions
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"
  python3 -c "import chromadb, pydantic; print('chromadb', chromadb.__version__, 'pydantic', pydantic.__version__)" || true
  PYTHONPATH=/tmp/fi:$PYTHONPATH python3 -c "import flashinfer; print('flashinfer', flashinfer.__version__)" || true
}

suite_bench() {  # extend attention: baseline, tuned, SGLang 0.5.23 (.cache/sglang), flex, FlashInfer (.fi)
  # on the 9 bench cases; per case GPU (graph replay) / back-to-back / host times and the +-30 % SGLang band
  python3 benchmarks/bench_extend_attention.py --chip h200 --out "$OUT/bench.json" "$@"
}

suite_host_overhead() {  # issue 20 (~30 s after bench, whose compiled kernels it reuses; limit 120): host us per
  # replayed tuned call on the 9 cases, prepared launcher (tensor maps once per buffer) vs Triton's launcher
  python3 benchmarks/host_overhead_extend.py --device cuda --calls 200 --out "$OUT/host-overhead.json" "$@"
}

suite_mla_sweep() {  # MLA kernels (Gluon route; its scores-ahead variants (lazy, P . V halves, warpgroup-local statistics) and the tuned entry point isolated in child processes; --only gluon-ws... for the warp-specialized ones) and FlashInfer (.fi) on the mla case, each checked against the fp32 reference: PASS/FAIL, us, % of floor per row (< 200 s)
  python3 benchmarks/sweep_mla.py --out "$OUT/mla-sweep.json" "$@"
}

suite_mla_tests() {  # the MLA path's GPU tests (bf16 edge cases, full bench size, warp-specialized and Gluon and Triton kernels) in 4 xdist workers (kernel compiles in parallel; a device fault poisons one worker's CUDA context, not all): each test's PASSED/FAILED line as it ends, a test past 60 s fails with its stack, then one PASS/FAIL line
  pytest_checked "MLA GPU tests" -v -n 4 --tb=line -rfE -p no:cacheprovider --timeout 60 -m gpu tests/kernels/test_mla_gpu.py "$@"
}

suite_kernel_tests() {  # the kernels' GPU tests (pytest-xdist is preinstalled there), then the timing test alone
  python3 -m pytest -q -m gpu tests/kernels -p no:cacheprovider -n 8 --ignore=tests/kernels/test_timing_gpu.py \
    --ignore=tests/kernels/test_sglang_gpu.py "$@"
  python3 -m pytest -q -m gpu tests/kernels/test_timing_gpu.py -p no:cacheprovider
}

suite_sglang_tests() {  # tuned, baseline and the report's drop-in against SGLang 0.5.23's own kernel (.cache/sglang):
  # SGLang-style calls on the bench and edge cases and SGLang's three extend unit tests' inputs, bf16; the NaN case;
  # the tuned entry point's replays (alternating shape classes, compiled-kernel launches)
  python3 benchmarks/sglang_kernel.py || exit 1
  python3 -m pytest -q -m gpu tests/kernels/test_sglang_gpu.py tests/kernels/test_index_tail.py \
    tests/kernels/test_replay_gpu.py -p no:cacheprovider -n 4 -rfE --junitxml="$OUT/sglang-tests.xml" "$@"
}

suite_verifier_tests() {  # the verifier's GPU tests
  python3 -m pytest -q -m gpu tests/verifier -p no:cacheprovider "$@"
}

suite_corpus() {  # every cheat of the corpus must be rejected, every honest kernel pass; run alone in its own copy
  rm -rf /tmp/corpus && cp -r "$PWD" /tmp/corpus
  (cd /tmp/corpus && PYTHONPATH=/tmp/corpus python3 scripts/verify_corpus_gpu.py --chip h200 \
    --out "$OUT/corpus.json" "$@")
}

suite_sweep() {  # extend-attention family sweep (e.g. SUITE_ARGS_sweep="--quick" or "--tma --cases mixed-batch")
  python3 benchmarks/sweep_extend_attention.py --out "$OUT/sweep.json" "$@"
}

suite_verify_time() {  # where a verification's seconds go, per phase and child (needs .whl)
  python3 benchmarks/diagnose_verify_time.py --chip h200 "$@"
}

suite_optimize() {  # chiplore optimize runs (scripts/optimize_gpu.py; e.g. SUITE_ARGS_optimize="--part runs --minutes 8")
  python3 scripts/optimize_gpu.py --out "$OUT/optimize" "$@"
  tar czf "$OUT/optimize.tgz" -C "$OUT" optimize && rm -rf "$OUT/optimize"
}

suite_optimize_splitk() {  # issue 17 (~420 s, one H200; limit 540): chiplore optimize splitk_gemm --chip h200 in
  # three arms one after another (empty findings store + retrieval; --no-retrieval; store seeded with the H200's
  # extend-attention findings + retrieval), each up to 10 evaluations in ~110 s on 6 bench cases (M = 1..128), then
  # one bench process: baseline, tuned, cuBLAS and each arm's best kernel. PASS/FAIL lines (setup, arms, bench,
  # >= 0.9x cuBLAS geomean, faster than cuBLAS at M <= 16); results.md/.json. Needs .whl installed and .model
  python3 scripts/optimize_splitk_gpu.py --out "$OUT/optimize-splitk" "$@"
  cp "$OUT/optimize-splitk/results.json" "$OUT/optimize-splitk.json" 2>/dev/null
  cp "$OUT/optimize-splitk/results.md" "$OUT/optimize-splitk.md" 2>/dev/null
  tar czf "$OUT/optimize-splitk.tgz" -C "$OUT" optimize-splitk && rm -rf "$OUT/optimize-splitk"
}

suite_optimize_tuned() {  # issue 20 (~9.5 min, one H200; limit 600): chiplore optimize extend_attention --chip h200
  # from an empty findings store (up to 40 evaluations in the budget), then one bench process: baseline, tuned and
  # the run's best kernel. PASS/FAIL lines: run, bench, geomean time(tuned)/time(best) >= 0.95, every case within
  # 10 % of tuned, evaluation at which 95 % of tuned's geomean was reached. Needs .whl installed and .model
  python3 scripts/optimize_tuned_gpu.py --out "$OUT/optimize-tuned" "$@"
  cp "$OUT/optimize-tuned/results.json" "$OUT/optimize-tuned.json" 2>/dev/null
  cp "$OUT/optimize-tuned/results.md" "$OUT/optimize-tuned.md" 2>/dev/null
  tar czf "$OUT/optimize-tuned.tgz" -C "$OUT" optimize-tuned && rm -rf "$OUT/optimize-tuned"
}

pytest_checked() {  # LABEL PYTEST-ARGS...: pytest, then its outcome as one PASS/FAIL line
  local label=$1 rc
  shift
  python3 -m pytest "$@"
  rc=$?
  if [ "$rc" -eq 0 ]; then echo "PASS $label"; else echo "FAIL $label (pytest exit $rc)"; fi
  return "$rc"
}
export -f pytest_checked  # the suites run in child shells (bash -c)

suite_probe() {  # issue 19 (~100 s): chiplore profile probe on the full H200 and in a 40-SM partition, the SMs the
  # driver gives for 36/40/66 asked (counted inside each partition), then the probe's kernels' GPU tests: PASS/FAIL lines
  python3 scripts/check_probe.py --out "$OUT/probe" "$@"
  cp "$OUT/probe/check.json" "$OUT/probe.json" 2>/dev/null
  tar czf "$OUT/probe.tgz" -C "$OUT" probe && rm -rf "$OUT/probe"
  pytest_checked "probe kernels on the GPU" -q --tb=short -p no:cacheprovider --timeout 60 \
    tests/hardware_profiles/test_probe_kernels.py
}

suite_virtual_chips_tests() {  # issue 19 (~100 s): GPU tests of virtual chips (green contexts counted by %smid,
  # the probe's knee inside one, the shared-memory cap, the verifier's children inside the partition). -v prints
  # each test's outcome as it ends; --timeout fails a test that runs past 75 s (with its stack) and goes on, so the
  # tracebacks at the end are printed within the suite's limit
  pytest_checked "virtual-chip GPU tests" -v --tb=short -p no:cacheprovider --timeout 75 --durations=0 -m gpu \
    tests/hardware_profiles/test_virtual_gpu.py tests/hardware_profiles/test_device_query.py "$@"
}

suite_transfer() {  # issue 19's experiment, resumable (~9 min for SUITE_ARGS_transfer="--chips s --arms setup,a,d,c";
  # defaults --max-evals 6 --budget-min 2.5 per arm, --deadline-s 520): setup stops with FAIL lines when the partition,
  # the probe or the profile's limits are not the chip asked for; PASS/FAIL per arm and for the issue's claims at the
  # end. Needs the wheels installed (.whl) and .model; the previous call's $OUT/transfer_state.tgz travels back in as
  # .cache/transfer/state.tgz (carry .cache/transfer). A finished arm continues when --max-evals / --patience /
  # --budget-min raise the limit that ended it; --reset-arms a,... runs the named arms afresh (their code changed)
  python3 benchmarks/transfer_virtual_chips.py run --out "$OUT/transfer" --state-in .cache/transfer/state.tgz \
    --state-out "$OUT/transfer_state.tgz" "$@"
  cp "$OUT/transfer/results.md" "$OUT/transfer.md" 2>/dev/null
  cp "$OUT/transfer/results.json" "$OUT/transfer.json" 2>/dev/null
  rm -rf "$OUT/transfer"
}

suite_mcp() {  # chiplore mcp over stdio with timed tools (profile_kernel, a run with a timed baseline); needs mcp wheels
  CHIPLORE_GPU_OUT="$OUT" python3 -m pytest -q -m gpu tests/agent/mcp -p no:cacheprovider "$@"
}

suite_splitk_bench() {  # split-K GEMM: baseline, tuned, cuBLAS on the 18 bench cases (bf16; needs .whl for the profile)
  python3 benchmarks/bench_splitk_gemm.py --chip h200 --out "$OUT/splitk-bench.json" "$@"
}

suite_splitk_sweep() {  # split-K GEMM: the bench plus ~13 variants of the tuned configuration per case (previous rule too)
  python3 benchmarks/bench_splitk_gemm.py --chip h200 --sweep --out "$OUT/splitk-sweep.json" "$@"
}

suite_splitk_gemv() {  # split-K GEMM at M 1, 2, 4 on the 6 bench layers (~70 s; limit 150; needs .whl): cuBLAS, tuned
  # and 5 GEMV-mode variants ("gemv rule": the GEMV tile rule's pick per case; at M 2, 4 the several-rows element-wise
  # accumulator), median us (% of spec bandwidth); the last lines are per M the geomean vs cuBLAS
  python3 benchmarks/bench_splitk_gemm.py --chip h200 --few-rows --reps 15 --budget-s 110 \
    --out "$OUT/splitk-gemv.json" "$@"
}

suite_splitk_m16() {  # split-K GEMM at M <= 16 on the 10 bench cases (limit 200; needs .whl): cuBLAS, tuned, a read of B
  # and ~10 streaming-read variants (evict-first weights, atomics, 2x programs, stream-K, deep pipelines, GEMV at M 1),
  # each checked, then median us, % of floor and ratio to cuBLAS after a dirty and after a clean L2 flush; JSON and .md
  # rewritten after every case, so a run cut by its limit keeps the cases it finished
  python3 benchmarks/bench_splitk_gemm.py --chip h200 --m16 --reps 15 --budget-s 130 \
    --out "$OUT/splitk-m16.json" "$@"
}

suite_splitk_verifier_tests() {  # the verifier on split-K GEMM on a GPU (~2-3 min, limit 300): baseline and tuned pass
  # (rounding bound of bf16 outputs), ptr_cache / side_stream / scratch_nan_gate fail, free-memory poison follows the
  # trial's prefill
  python3 -m pytest -q -m gpu tests/verifier/test_splitk_gemm_gpu.py -p no:cacheprovider "$@"
}

suite_splitk_tests() {  # split-K GEMM GPU tests alone (bench shapes in bf16, every reduction mode, stream-K)
  python3 -m pytest -q -m gpu tests/kernels/splitk_gemm -p no:cacheprovider -n 8 "$@"
}

# --------------------------------------------------------------------------------------------------------------------

list_suites() { declare -F | awk '{print $3}' | sed -n 's/^suite_//p' | tr '_' '-'; }

if [ "${1:-}" = "--list" ] || [ $# -eq 0 ]; then
  echo "suites:"; list_suites; exit 0
fi
install_wheels
echo "commit $CHIPLORE_COMMIT, $(date -u +%FT%TZ)" | tee -a "$OUT/summary.txt"
for spec in "$@"; do
  name="${spec%%:*}"; limit=600
  [ "$spec" != "$name" ] && limit="${spec#*:}"
  fn="suite_${name//-/_}"
  if ! declare -F "$fn" > /dev/null; then echo "unknown suite $name (bash scripts/gpu.sh --list)"; continue; fi
  var="SUITE_ARGS_${name//-/_}"
  start=$(date +%s)
  # shellcheck disable=SC2086
  ( export -f "$fn"; timeout "$limit" bash -c "$fn ${!var:-}" ) > "$OUT/$name.log" 2>&1
  rc=$?
  line="$name rc=$rc $(( $(date +%s) - start ))s (limit ${limit}s)"
  echo "$line" | tee -a "$OUT/summary.txt"
  tail -n 15 "$OUT/$name.log"
done
