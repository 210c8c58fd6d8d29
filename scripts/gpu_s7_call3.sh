#!/usr/bin/env bash
# GPU session 7, call 3 (one H200, no wheels): gather-ahead with the slot loads two tiles ahead (call 2: rows one
# tile ahead, slots loaded in front of them: mixed batch 731 us at 16 rows per tile against 666 us without).
# Also the launch split alone: eight per-KV-head launches after a full pre-gather, no copy in the loop.
set -u
export PYTHONUNBUFFERED=1 COLUMNS=160 PYTHONPATH=$PWD
timeout 300 python3 - > $OUT/probe3.log 2>&1 <<'PY'
import torch
import kernels.extend_attention.family as family
from benchmarks._util import input_sets, max_error, reference_output
from kernels.extend_attention.family import FamilyConfig, run_family
from kernels.extend_attention.spec import TASK
from kernels.timing import bench
case = TASK.case("mixed-batch")
sets = input_sets(case, 2)
ref = reference_output(sets[0])
base = FamilyConfig(128, 128, 8, 3, 1, True, pregather=True, tma=True)
variants = [("base", base)]
variants += [(f"ahead{a}", FamilyConfig(**{**base.to_dict(), "gather_ahead": a})) for a in (16, 32)]
variants += [("ahead16-64x64", FamilyConfig(64, 64, 4, 3, 1, True, pregather=True, tma=True, gather_ahead=8))]

def run(name, cfg):
    fn = (lambda c: lambda **a: run_family(c, **a))(cfg)
    try:
        sets[0]["o_extend"].fill_(float("nan"))
        fn(**sets[0]); torch.cuda.synchronize()
        ok, err = max_error(sets[0]["o_extend"], ref, case)
        t = bench(fn, sets, reps=20, warmup=3)
        print(f"PROBE {name}: ok={ok} err={err:.2e} median {t.median_us:.1f} us p25 {t.p25_us:.1f} "
              f"p75 {t.p75_us:.1f}", flush=True)
    except Exception as exc:  # noqa: BLE001
        print(f"PROBE {name}: FAILED {type(exc).__name__}: {str(exc)[:400]}", flush=True)

for name, cfg in variants:
    run(name, cfg)
# the launch split alone: every head pre-gathered, per-head launches with no copy in the loop
orig_gather, orig_launch = family.gather_prefix, family._launch_kernel
family.gather_prefix = lambda k, v, idx, v_is_k=False, head=None: orig_gather(k, v, idx, v_is_k)
family._launch_kernel = lambda *a: orig_launch(*a[:21], 0, *a[22:])
run("split-launches-no-copy", FamilyConfig(**{**base.to_dict(), "gather_ahead": 16}))
PY
cat $OUT/probe3.log
