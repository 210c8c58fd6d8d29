#!/usr/bin/env bash
# Ran at 1648bce: its program-id variant sets the kernel's AHEAD_TICKET constexpr, removed afterwards (tickets kept).
# GPU session 7, call 5 (one H200, no wheels): where the ordered gather-ahead's time goes (call 4: mixed batch
# 637.4 us with one launch, tickets and one head ahead, against 531 us of attention + 22 us of one-head pre-gather
# + ~50 us of copying inside the loop). Components timed alone, the ticket against program-id order, and the
# machinery with neither copy nor wait (AHEAD_HEADS forced past the last head: timing only, its output is wrong).
set -u
export PYTHONUNBUFFERED=1 COLUMNS=160 PYTHONPATH=$PWD
timeout 240 python3 - > $OUT/probe5.log 2>&1 <<'PY'
import torch
import kernels.extend_attention.family as family
from benchmarks._util import input_sets, max_error, reference_output
from kernels.extend_attention.family import FamilyConfig, run_family
from kernels.extend_attention.prefix_gather import gather_prefix
from kernels.extend_attention.spec import TASK
from kernels.extend_attention.workspace import pooled
from kernels.timing import bench
case = TASK.case("mixed-batch")
sets = input_sets(case, 2)
ref = reference_output(sets[0])
for name, heads in (("gather-all", None), ("gather-1-head", 1), ("gather-2-heads", 2)):
    t = bench(lambda **a: gather_prefix(a["k_buffer"], a["v_buffer"], a["kv_indices"], first_heads=heads), sets,
              reps=20, warmup=3)
    print(f"PROBE {name}: median {t.median_us:.1f} us", flush=True)
cnt = pooled(torch.device("cuda"), torch.int32, "probe_counters", 1 + 16 * 8)
t = bench(lambda **a: cnt.zero_(), sets, reps=20, warmup=3)
print(f"PROBE counters-zero: median {t.median_us:.1f} us", flush=True)
base = FamilyConfig(128, 128, 8, 3, 1, True, pregather=True, tma=True)
sync = FamilyConfig(**{**base.to_dict(), "gather_ahead": 16, "ahead_sync": True})
orig_launch = family._launch_kernel

def with_flags(**over):
    def launch(*a):
        return orig_launch(*a[:-1], {**a[-1], **over})
    return launch

def run(name, cfg, check=True, **over):
    family._launch_kernel = with_flags(**over) if over else orig_launch
    fn = (lambda c: lambda **a: run_family(c, **a))(cfg)
    try:
        sets[0]["o_extend"].fill_(float("nan"))
        fn(**sets[0]); torch.cuda.synchronize()
        ok, err = max_error(sets[0]["o_extend"], ref, case) if check else ("unchecked", float("nan"))
        t = bench(fn, sets, reps=20, warmup=3)
        print(f"PROBE {name}: ok={ok} err={err:.2e} median {t.median_us:.1f} us p25 {t.p25_us:.1f} "
              f"p75 {t.p75_us:.1f}", flush=True)
    except Exception as exc:  # noqa: BLE001
        print(f"PROBE {name}: FAILED {type(exc).__name__}: {str(exc)[:400]}", flush=True)

run("base", base)
run("sync16-h1-ticket", sync)
run("sync16-h1-program-id", sync, AHEAD_TICKET=False)
run("sync16-h1-no-copy-no-wait", sync, check=False, AHEAD_HEADS=64)
run("sync16-h1-program-id-no-copy-no-wait", sync, check=False, AHEAD_HEADS=64, AHEAD_TICKET=False)
run("ahead16-h2-launches", FamilyConfig(**{**base.to_dict(), "gather_ahead": 16, "ahead_heads": 2}))
PY
cat $OUT/probe5.log
