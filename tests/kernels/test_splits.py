"""One split-KV rule (kernels/extend_attention/splits.py) for the family's num_splits=0, the tuned entry point and
the catalog's formula function; expected values worked out by hand from the rule's statement."""

from __future__ import annotations

import math

import pytest
import torch

from kernels.extend_attention.common import Problem
from kernels.extend_attention.family import ChipLimits, FamilyConfig, auto_splits
from kernels.extend_attention.spec import TASK
from kernels.extend_attention.splits import split_factor
from kernels.extend_attention.tuned import choose_config
from kernels.extend_attention.variables import bind_functions

H200 = ChipLimits(num_compute_units=132, smem_per_block_kb=227, warp_size=32, max_threads_per_block=1024)
M890 = ChipLimits(num_compute_units=36, smem_per_block_kb=48, warp_size=32, max_threads_per_block=1024)


def _problem(case) -> Problem:
    p = case.params
    return Problem(len(p["extend_lens"]), sum(p["extend_lens"]), sum(p["prefix_lens"]), p["num_q_heads"],
                   p["num_kv_heads"], p["head_dim"], p["head_dim_v"], torch.bfloat16)


@pytest.mark.parametrize(("programs", "units", "prefix", "rows", "expected"), [
    (512, 132, 4096, 16, 2),  # spec-verify on an H200: ceil(528 / 512) = 2
    (512, 36, 4096, 16, 1),  # the same grid on 36 units is 14 waves already
    (8, 36, 32768, 4, 18),  # one decoding sequence: ceil(144 / 8) = 18, 128 allowed by length, cap 32
    (1, 132, 1 << 20, 4, 32),  # the memory-bound cap
    (8, 132, 32768, 2048, 2),  # compute-bound (2048 rows per sequence): at most 2
    (512, 132, 32768, 8192, 2),  # chunked prefill: ceil(528 / 512) = 2
    (1024, 132, 4096, 1024, 1),  # mixed batch: 8 programs per unit already
    (8, 132, 300, 4, 1),  # 300 keys: one split of at least 256
    (8, 132, 0, 4, 1),  # no prefix
])
def test_split_factor_by_hand(programs, units, prefix, rows, expected):
    assert split_factor(programs, units, prefix, rows) == expected


def test_split_factor_rejects_a_chip_without_units():
    with pytest.raises(ValueError, match="compute_units"):
        split_factor(8, 0, 4096, 4)


@pytest.mark.parametrize("limits", [H200, M890], ids=["h200", "m890"])
def test_tuned_family_and_catalog_use_the_same_rule(limits):
    """For every bench case: the tuned entry point's split count is the family's (`auto_splits`) for the
    compute-bound configurations of head dims D_qk + D_v <= 256 (wider ones run one split, memory-bound ones
    leave it to the family: num_splits=0), and the catalog's formula function gives the rule's value for the same
    programs."""
    for case in TASK.bench_cases:
        prob = _problem(case)
        config = choose_config(prob, limits, max(case.params["extend_lens"]))
        family = auto_splits(config, prob, limits)
        if config.num_splits != 0 and prob.head_dim + prob.head_dim_v <= 256:
            assert config.num_splits == family, case.id
        pack = prob.group if config.pack_gqa else 1
        heads = prob.num_kv_heads if pack > 1 else prob.num_q_heads
        programs = heads * prob.batch * math.ceil(prob.total_extend * pack // prob.batch / config.block_m)
        catalog = bind_functions(case)["split_factor"](programs, limits.num_compute_units)
        assert catalog == family, case.id


def test_h200_bench_splits():
    """Chunked prefill (512 programs) splits in two, the mixed batch (1024) and the prefill (no prefix) do not;
    decode and speculative verify leave it to the family (num_splits=0), which splits in two."""
    got = {}
    for case in TASK.bench_cases:
        prob = _problem(case)
        config = choose_config(prob, H200, max(case.params["extend_lens"]))
        got[case.id] = (config.num_splits, config.num_splits or auto_splits(config, prob, H200))
    assert got["chunked-prefill"] == (2, 2) and got["mixed-batch"] == (1, 1) and got["prefill"] == (1, 1)
    assert got["decode"] == (0, 2) and got["spec-verify"] == (0, 2)
    assert FamilyConfig().num_splits == 0
