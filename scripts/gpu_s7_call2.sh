#!/usr/bin/env bash
# GPU session 7, call 2 (one H200, no wheels): the gather-ahead copy pipelined by one tile (call 1: unpipelined,
# mixed batch 807-983 us against 667 us without it). Mixed batch, each variant checked against the fp32 reference,
# 20 timed calls (cold L2, fresh inputs); the one-head and full pre-gathers timed alone.
set -u
export PYTHONUNBUFFERED=1 COLUMNS=160 PYTHONPATH=$PWD
timeout 300 python3 - > $OUT/probe2.log 2>&1 <<'PY'
import torch
from benchmarks._util import input_sets, max_error, reference_output
from kernels.extend_attention.family import FamilyConfig, run_family
from kernels.extend_attention.prefix_gather import gather_prefix
from kernels.extend_attention.spec import TASK
from kernels.timing import bench
case = TASK.case("mixed-batch")
sets = input_sets(case, 2)
ref = reference_output(sets[0])
for name, head in (("gather-all", None), ("gather-head0", 0)):
    t = bench(lambda **a: gather_prefix(a["k_buffer"], a["v_buffer"], a["kv_indices"], head=head), sets, reps=20,
              warmup=3)
    print(f"PROBE {name}: median {t.median_us:.1f} us", flush=True)
base = FamilyConfig(128, 128, 8, 3, 1, True, pregather=True, tma=True)
variants = [("base", base)]
variants += [(f"ahead{a}", FamilyConfig(**{**base.to_dict(), "gather_ahead": a})) for a in (16, 32, 64, 256)]
variants += [(f"ahead{a}-st2", FamilyConfig(**{**base.to_dict(), "gather_ahead": a, "num_stages": 2}))
             for a in (16, 32)]
for name, cfg in variants:
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
PY
cat $OUT/probe2.log
