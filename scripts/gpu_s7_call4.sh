#!/usr/bin/env bash
# GPU session 7, call 4 (one H200, no wheels): gather-ahead ordered inside one launch (ahead_sync: work tickets,
# per-(sequence, head) copy counters, acquire/release at GPU scope, proxy fence before TMA) against the launch per
# head of call 3 (mixed batch 647 us against 667 us without gather-ahead; the eight launches alone cost 42 us), then
# the gather-ahead GPU tests.
set -u
export PYTHONUNBUFFERED=1 COLUMNS=160 PYTHONPATH=$PWD
timeout 240 python3 - > $OUT/probe4.log 2>&1 <<'PY'
import torch
from benchmarks._util import input_sets, max_error, reference_output
from kernels.extend_attention.family import FamilyConfig, run_family
from kernels.extend_attention.spec import TASK
from kernels.timing import bench
case = TASK.case("mixed-batch")
sets = input_sets(case, 2)
ref = reference_output(sets[0])
base = FamilyConfig(128, 128, 8, 3, 1, True, pregather=True, tma=True)
variants = [("base", {}), ("ahead16", {"gather_ahead": 16}), ("ahead16-h2", {"gather_ahead": 16, "ahead_heads": 2})]
variants += [(f"sync{a}-h{h}", {"gather_ahead": a, "ahead_heads": h, "ahead_sync": True})
             for a, h in ((16, 1), (16, 2), (16, 3), (32, 2), (8, 2))]
for name, knobs in variants:
    cfg = FamilyConfig(**{**base.to_dict(), **knobs})
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
cat $OUT/probe4.log
timeout 280 python3 -m pytest -q -m gpu tests/kernels/test_extend_attention_gpu.py -k "ahead" -p no:cacheprovider \
  > $OUT/tests_ahead4.log 2>&1
tail -8 $OUT/tests_ahead4.log
