#!/usr/bin/env bash
# Ran at e92463c (the two knobs it measures were reverted in the next commit: neither helped, BENCHMARKS.md session 6).
# GPU session 6, call 1 (one H200, no wheels): issue 7's mixed-batch levers.
# 1. Does Triton's automatic warp specialization (tl.range(..., warp_specialize=True)) compile and pass on Hopper
#    for the family's TMA loops, and does the pre-gather overlapped with attention (gather_overlap) pass? One
#    mixed-batch run of each, checked against the fp32 reference, with times.
# 2. Sweep 6 (benchmarks/sweep_extend_attention.py --overlap): warp specialization x gather overlap on the
#    compute-bound cases (without warp specialization when step 1 says it does not compile).
set -u
export PYTHONUNBUFFERED=1 COLUMNS=160 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $OUT/probe.log 2>&1
timeout 240 python3 - >> $OUT/probe.log 2>&1 <<'PY'
import torch
from benchmarks._util import input_sets, max_error, reference_output
from kernels.extend_attention.family import FamilyConfig, run_family
from kernels.extend_attention.spec import TASK
from kernels.timing import bench
case = TASK.case("mixed-batch")
sets = input_sets(case, 2)
ref = reference_output(sets[0])
base = FamilyConfig(128, 128, 8, 3, 1, True, pregather=True, tma=True)
for name, cfg in [("tuned-now", base), ("overlap2", FamilyConfig(**{**base.to_dict(), "gather_overlap": 2})),
                  ("overlap4", FamilyConfig(**{**base.to_dict(), "gather_overlap": 4})),
                  ("ws", FamilyConfig(**{**base.to_dict(), "warp_specialize": True})),
                  ("ws-w4-st2", FamilyConfig(**{**base.to_dict(), "warp_specialize": True, "num_warps": 4,
                                               "num_stages": 2}))]:
    try:
        sets[0]["o_extend"].fill_(float("nan"))
        run_family(cfg, **sets[0]); torch.cuda.synchronize()
        ok, err = max_error(sets[0]["o_extend"], ref, case)
        t = bench(lambda **a: run_family(cfg, **a), sets, reps=20, warmup=3)
        print(f"PROBE {name}: ok={ok} err={err:.2e} median {t.median_us:.1f} us p25 {t.p25_us:.1f} p75 {t.p75_us:.1f}",
              flush=True)
    except Exception as exc:  # noqa: BLE001
        print(f"PROBE {name}: FAILED {type(exc).__name__}: {str(exc)[:400]}", flush=True)
PY
WS=""
grep -q "PROBE ws: ok=True" $OUT/probe.log || WS="--no-ws"
timeout 420 python3 benchmarks/sweep_extend_attention.py --overlap $WS --out $OUT/sweep6.json > $OUT/sweep6.log 2>&1
cat $OUT/probe.log; tail -60 $OUT/sweep6.log
