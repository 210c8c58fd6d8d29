#!/usr/bin/env bash
# GPU session 7, call 1 (one H200, no wheels): issue 7's mixed batch with gather-ahead (FamilyConfig.gather_ahead:
# KV head 0's prefix copied first, each later head's by the previous head's launch, under its tensor-core work).
# 1. Probe: mixed batch, the tuned configuration against gather-ahead variants, each checked against the fp32
#    reference, 20 timed calls (cold L2, fresh inputs).
# 2. GPU tests of gather-ahead (edge cases in bf16/fp16, NaN-poisoned workspace on bench shapes, no host sync).
# 3. Sweep 8 (benchmarks/sweep_extend_attention.py --ahead) on the compute-bound cases with a prefix.
set -u
export PYTHONUNBUFFERED=1 COLUMNS=160 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $OUT/probe.log 2>&1
timeout 200 python3 - >> $OUT/probe.log 2>&1 <<'PY'
import torch
from benchmarks._util import input_sets, max_error, reference_output
from kernels.extend_attention import extend_attention_fwd
from kernels.extend_attention.family import FamilyConfig, run_family
from kernels.extend_attention.spec import TASK
from kernels.timing import bench
case = TASK.case("mixed-batch")
sets = input_sets(case, 2)
ref = reference_output(sets[0])
base = FamilyConfig(128, 128, 8, 3, 1, True, pregather=True, tma=True)
variants = [("tuned", None), ("base", base)]
variants += [(f"ahead{a}", FamilyConfig(**{**base.to_dict(), "gather_ahead": a})) for a in (8, 16, 32)]
variants += [("ahead16-st2", FamilyConfig(**{**base.to_dict(), "gather_ahead": 16, "num_stages": 2})),
             ("ahead4-64x64", FamilyConfig(64, 64, 4, 3, 1, True, pregather=True, tma=True, gather_ahead=4)),
             ("ahead8-64x64", FamilyConfig(64, 64, 4, 3, 1, True, pregather=True, tma=True, gather_ahead=8))]
for name, cfg in variants:
    fn = extend_attention_fwd if cfg is None else (lambda c: lambda **a: run_family(c, **a))(cfg)
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
cat $OUT/probe.log
timeout 150 python3 -m pytest -q -m gpu tests/kernels/test_extend_attention_gpu.py -k "ahead" -p no:cacheprovider \
  > $OUT/tests_ahead.log 2>&1
tail -15 $OUT/tests_ahead.log
timeout 200 python3 benchmarks/sweep_extend_attention.py --ahead --cases mixed-batch,small-heads,large-heads,chunked-prefill \
  --reps 10 --out $OUT/sweep8.json > $OUT/sweep8.log 2>&1
tail -40 $OUT/sweep8.log
