"""The hidden long-extend trial: a kernel wrong only past the first query block is rejected (CPU, interpreter).

A fresh-clone walkthrough found that the baseline with a causal off-by-one (each 128-row query block stopping its
extend keys one short) passed every CPU trial, all of which had <= 24 extend tokens. The candidate here is made at
test time from the real baseline's source, so it stays that kernel with exactly one edit.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from agent.verifier import Verifier, VerifyOptions
from agent.verifier.plan import COVERING_LABEL, PlanSettings, build_plan
from hardware_profiles import load_profile
from kernels.extend_attention.cases import LONG_EXTEND_TOKENS, long_extend_case
from kernels.extend_attention.spec import TASK

BASELINE = Path(__file__).resolve().parents[2] / "kernels" / "extend_attention" / "baseline.py"
RIGHT = "end_n = tl.minimum(ext_len, (block_m + 1) * BLOCK_M)"
OFF_BY_ONE = "end_n = tl.minimum(ext_len, (block_m + 1) * BLOCK_M - 1)"


def test_long_extend_case_has_more_rows_than_a_query_block():
    for small, block in ((True, 128), (False, 1024)):
        case = long_extend_case(random.Random(5), small)
        low, high = LONG_EXTEND_TOKENS[small]
        assert block < low <= case.params["extend_lens"][0] <= high
        assert case.params["is_causal"] and not case.params["custom_mask"]
    cpu = long_extend_case(random.Random(6), True)
    assert cpu.params["head_dim"] == 16 and cpu.params["num_q_heads"] == 4  # kept cheap for the interpreter


def test_every_plan_has_a_long_extend_trial():
    settings = PlanSettings(include_test_cases=True, include_bench_cases=False, random_cases=2, small=True,
                            timing=False)
    labels = [t.label for t in build_plan(TASK, "cpu", settings).trials]
    assert labels.count("long extend") == 1


@pytest.mark.slow  # ~34 s on 2 cores
@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="CPU (interpreter) check")
def test_a_causal_off_by_one_at_block_edges_is_rejected(tmp_path):
    source = BASELINE.read_text()
    assert source.count(RIGHT) == 1
    candidate = tmp_path / "baseline_off_by_one.py"
    candidate.write_text(source.replace(RIGHT, OFF_BY_ONE))
    with Verifier("extend_attention", load_profile("h200"), VerifyOptions(device="cpu", timeout_s=300)) as verifier:
        for _ in range(3):  # every plan draws new secret seeds and features: rejected on each draw, not by luck
            verdict = verifier.verify(candidate)
            assert verdict.stage == "mismatch", verdict.summary()
            # caught by a trial with more extend rows than a query block: the long extend, or a long-prefix trial
            # (the drawn long case and the covering trials also hold a long extend), whichever the plan runs first
            label = re.search(r"\((.+?), trial \d+, seed", verdict.reasons[0]).group(1)
            assert label in ("long extend", "long prefix") or label.startswith(COVERING_LABEL), verdict.reasons[0]
