"""Configuration rules of the split-K family: footprint, fit to chip limits, split rule, program counts, workspaces,
and the errors for bad input and unknown chip limits."""

from __future__ import annotations

import functools

import pytest
import torch

from hardware_profiles import load_profile
from kernels.chip import ChipLimits, ChipLimitsUnset, UnknownChipLimit, chip_limits, set_chip_limits
from kernels.splitk_gemm import workspace
from kernels.splitk_gemm.common import Problem
from kernels.splitk_gemm.config import FamilyConfig, fit_to_limits, shrink_once, smem_footprint_kb
from kernels.splitk_gemm.family import plan_launch, run_family
from kernels.splitk_gemm.schedule import (
    IN_FLIGHT_BYTES,
    SPLIT_MARGIN,
    auto_split_k,
    pipeline_stages,
    program_count,
    split_candidates,
    stream_k_time,
    tile_count,
    tiles_time,
    weighted_stage_bytes,
)
from kernels.splitk_gemm.space import FAMILY
from kernels.splitk_gemm.spec import TASK, make_inputs
from kernels.splitk_gemm.tuned import (
    CHOICE_MARGIN,
    STREAM_K_BELOW,
    TILE_CANDIDATES,
    choose_config,
    dot_config,
    splitk_gemm,
)
from tests.kernels.splitk_gemm.helpers import SMALL_CHIP, check_impl

H200 = ChipLimits.from_profile(load_profile("h200"))
A100 = ChipLimits.from_profile(load_profile("a100"))
SMALL_SMEM = ChipLimits(num_compute_units=36, smem_per_block_kb=48.0, warp_size=32, max_threads_per_block=1024)
WIDE_WARPS = ChipLimits(num_compute_units=304, smem_per_block_kb=64.0, warp_size=64, max_threads_per_block=256)
CHIPS = {"h200": H200, "a100": A100, "48kb-36cu": SMALL_SMEM, "64kb-wave64": WIDE_WARPS}
BENCH = {c.id: Problem(c.params["m"], c.params["n"], c.params["k"], torch.bfloat16) for c in TASK.bench_cases}


def test_h200_limits_come_from_its_profile():
    assert H200 == ChipLimits(num_compute_units=132, smem_per_block_kb=227.0, warp_size=32, max_threads_per_block=1024)


def test_footprint_formula_by_hand():
    # bf16, 4 stages x (16 + 128) rows x 128 columns x 2 bytes = 147456 B = 144 KiB
    cfg = FamilyConfig(block_m=16, block_n=128, block_k=128, num_stages=4)
    assert smem_footprint_kb(cfg, torch.bfloat16) == pytest.approx(144.0)
    assert smem_footprint_kb(cfg, torch.float32) == pytest.approx(288.0)


@pytest.mark.parametrize("chip", CHIPS, ids=list(CHIPS))
@pytest.mark.parametrize("case_id", list(BENCH))
def test_chosen_configs_fit_every_chip(case_id, chip):
    limits, prob = CHIPS[chip], BENCH[case_id]
    cfg = choose_config(limits, prob.m, prob.n, prob.k, prob.dtype)
    assert smem_footprint_kb(cfg, prob.dtype) <= limits.smem_per_block_kb
    assert cfg.num_warps * limits.warp_size <= limits.max_threads_per_block
    assert cfg.block_m >= min(prob.m, 128), "one row block covers M <= 128 (B read once)"


def test_shrink_order_keeps_two_stages_first():
    cfg = FamilyConfig(block_m=16, block_n=128, block_k=128, num_stages=4)
    steps = []
    while (cfg := shrink_once(cfg)) is not None:
        steps.append((cfg.num_stages, cfg.block_k, cfg.block_n, cfg.block_m))
    assert steps[:4] == [(3, 128, 128, 16), (2, 128, 128, 16), (2, 64, 128, 16), (2, 32, 128, 16)]
    assert steps[4:6] == [(2, 32, 64, 16), (2, 32, 32, 16)]
    assert steps[6] == (1, 32, 32, 16) and steps[-1] == (1, 16, 16, 16)


def test_fit_shrinks_to_48_kib():
    cfg = fit_to_limits(FamilyConfig(block_m=16, block_n=128, block_k=128, num_stages=4), BENCH["m1-n4096-k4096"],
                        SMALL_SMEM)
    # 4 -> 2 stages (72 KiB), then BLOCK_K 128 -> 64: 2 x (16 + 128) x 64 x 2 B = 36 KiB
    assert (cfg.num_stages, cfg.block_k, cfg.block_n, cfg.block_m) == (2, 64, 128, 16)


def test_fit_bounds_warps_by_threads_per_block():
    cfg = fit_to_limits(FamilyConfig(num_warps=8), BENCH["m128-n4096-k4096"], WIDE_WARPS)
    assert cfg.num_warps == 4  # 256 threads / 64 per wavefront


def test_float32_tiles_are_capped():
    cfg = fit_to_limits(FamilyConfig(block_m=128, block_n=128, block_k=128, num_stages=4),
                        Problem(64, 256, 256, torch.float32), H200)
    assert (cfg.block_m, cfg.block_n, cfg.block_k, cfg.num_stages) == (32, 32, 32, 2)


def test_skinny_calls_split_until_the_units_are_full():
    # M = 1, N = 4096: 32 tiles of 128 columns on 132 units; K = 4096: 32 iterations of 128
    cfg = FamilyConfig(block_m=16, block_n=128, block_k=128)
    prob = BENCH["m1-n4096-k4096"]
    splits = auto_split_k(cfg, prob, H200)
    assert splits > 1 and tile_count(cfg, prob) * splits <= H200.num_compute_units
    assert tile_count(cfg, prob) * splits > H200.num_compute_units / 2


def test_grids_that_fill_the_chip_do_not_split():
    cfg = FamilyConfig(block_m=16, block_n=128, block_k=128)
    # N = 14336: 112 tiles; a second split would make 224 programs, two waves on 132 units
    assert auto_split_k(cfg, BENCH["m1-n14336-k4096"], H200) == 1


def test_fewer_units_split_less():
    cfg = FamilyConfig(block_m=16, block_n=128, block_k=128)
    prob = BENCH["m1-n4096-k14336"]
    few = ChipLimits(num_compute_units=36, smem_per_block_kb=227.0, warp_size=32, max_threads_per_block=1024)
    assert auto_split_k(cfg, prob, few) < auto_split_k(cfg, prob, H200)


@pytest.mark.parametrize("case_id", list(BENCH))
def test_split_rule_takes_the_fewest_splits_near_its_model_minimum(case_id):
    cfg, prob = FamilyConfig(block_m=16, block_n=128, block_k=128), BENCH[case_id]
    chosen = auto_split_k(cfg, prob, H200)
    times = {s: tiles_time(cfg, prob, s, 132) for s in split_candidates(cfg, prob)}
    assert times[chosen] <= (1 + SPLIT_MARGIN) * min(times.values())
    assert all(times[s] > (1 + SPLIT_MARGIN) * min(times.values()) for s in times if s < chosen)


def test_stages_keep_the_in_flight_bytes_by_hand():
    """bf16 on H200: a 16 x 128 x 128 stage weighs 128*128*2 + 0.5*16*128*2 = 34816 B, so 3 stages in flight
    (98304 B = IN_FLIGHT_BYTES) need 4; a 128 x 128 x 64 stage weighs 16384 + 8192 = 24576 B: 4 in flight, 5."""
    assert IN_FLIGHT_BYTES == 98304
    skinny = FamilyConfig(block_m=16, block_n=128, block_k=128)
    assert weighted_stage_bytes(skinny, BENCH["m16-n4096-k4096"]) == 34816
    assert pipeline_stages(skinny, BENCH["m16-n4096-k4096"], 227.0) == 4
    wide = FamilyConfig(block_m=128, block_n=128, block_k=64)
    assert pipeline_stages(wide, BENCH["m128-n4096-k4096"], 227.0) == 5
    # 48 KiB holds one 16 x 128 x 128 bf16 stage (36 KiB): the rule still asks for 2 (fit_to_limits shrinks tiles)
    assert pipeline_stages(skinny, BENCH["m16-n4096-k4096"], 48.0) == 2
    assert pipeline_stages(skinny, BENCH["m16-n4096-k4096"], 100.0) == 2


@pytest.mark.parametrize("chip", CHIPS, ids=list(CHIPS))
@pytest.mark.parametrize("case_id", list(BENCH))
def test_tuned_rule_is_deterministic_and_the_modeled_minimum(case_id, chip):
    """Never the atomic mode (the default is deterministic), and no candidate schedule of the tensor-core tile rule
    models faster than the chosen one by more than CHOICE_MARGIN (each candidate recomputed here from the model)."""
    limits, prob = CHIPS[chip], BENCH[case_id]
    units = limits.num_compute_units
    assert not choose_config(limits, prob.m, prob.n, prob.k, prob.dtype).atomic
    chosen = dot_config(limits, prob.m, prob.n, prob.k, prob.dtype)
    assert not chosen.atomic and not chosen.gemv

    def modeled(cfg: FamilyConfig) -> float:
        if cfg.stream_k:
            return stream_k_time(cfg, prob, units) / STREAM_K_BELOW
        return tiles_time(cfg, prob, cfg.split_k, units)

    block_m = chosen.block_m
    others = []
    for block_n, block_k in TILE_CANDIDATES:
        tiles = FamilyConfig(block_m=block_m, block_n=block_n, block_k=block_k, num_warps=chosen.num_warps)
        tiles = fit_to_limits(FamilyConfig(**{**tiles.to_dict(), "num_stages": pipeline_stages(
            tiles, prob, limits.smem_per_block_kb)}), prob, limits)
        for fused in (True, False):
            cfg = FamilyConfig(**{**tiles.to_dict(), "fused_reduce": fused})
            others.append(FamilyConfig(**{**cfg.to_dict(), "split_k": auto_split_k(cfg, prob, limits)}))
        others.append(FamilyConfig(**{**tiles.to_dict(), "stream_k": True}))
    assert modeled(chosen) <= min(modeled(c) for c in others) / (1 - CHOICE_MARGIN) + 1e-6


#: The GEMV rule at M = 1, bf16, by hand: a 1 x 128 x 64 stage weighs 128*64*2 + 0.5*1*64*2 = 16448 B, so
#: IN_FLIGHT_BYTES (98304 B) needs 6 in flight, 7 stages, capped at MAX_STAGES = 6; 16.125 KiB per stage
#: (2 B x (1 + 128) x 64). H200 / A100: 6 stages (96.75 KiB); 48 KiB: 2 (3 are 48.4 KiB); 64 KiB with 256-thread
#: blocks of 64-wide wavefronts: 4 warps and 3 stages (4 are 64.5 KiB).
GEMV_BY_HAND = {"h200": (8, 6), "a100": (8, 6), "48kb-36cu": (8, 2), "64kb-wave64": (4, 3)}


@pytest.mark.parametrize("chip", CHIPS, ids=list(CHIPS))
@pytest.mark.parametrize("case_id", list(BENCH))
def test_one_row_calls_take_the_gemv_mode_and_the_others_the_tile_rule(case_id, chip):
    limits, prob = CHIPS[chip], BENCH[case_id]
    chosen = choose_config(limits, prob.m, prob.n, prob.k, prob.dtype)
    if prob.m > 1:
        assert chosen == dot_config(limits, prob.m, prob.n, prob.k, prob.dtype) and not chosen.gemv
        return
    warps, stages = GEMV_BY_HAND[chip]
    assert chosen.gemv and chosen.fused_reduce and not chosen.atomic and not chosen.stream_k
    assert (chosen.block_m, chosen.block_n, chosen.block_k, chosen.num_warps, chosen.num_stages) == (
        1, 128, 64, warps, stages)
    # the split is the family's rule: the explicit count launches the grid split_k = 0 launches from the
    # configuration as measured (BLOCK_M 16, lowered to the GEMV rows at launch)
    measured = FamilyConfig(block_m=16, block_n=128, block_k=64, num_warps=8, num_stages=chosen.num_stages,
                            split_k=0, fused_reduce=True, gemv=True)
    mine, theirs = plan_launch(chosen, prob, limits), plan_launch(measured, prob, limits)
    assert (mine.programs, mine.splits, mine.per_split, mine.mode) == (theirs.programs, theirs.splits,
                                                                       theirs.per_split, theirs.mode)
    assert mine.config == FamilyConfig(**{**theirs.config.to_dict(), "split_k": chosen.split_k})
    assert chosen.split_k == auto_split_k(chosen, prob, limits) >= 1


def test_gemv_splits_of_the_bench_layers_on_the_h200():
    """By hand: 4096 / 128 = 32 column tiles; K = 14336 is 224 iterations of 64, 4 splits of 56 fill 128 of the
    132 units; N = 14336 is 112 tiles alone (one wave; a second split would make two)."""
    splits = {cid: choose_config(H200, p.m, p.n, p.k, p.dtype).split_k for cid, p in BENCH.items() if p.m == 1}
    assert splits["m1-n4096-k14336"] == 4 and splits["m1-n14336-k4096"] == 1


def test_program_counts():
    prob = Problem(1, 4096, 4096, torch.bfloat16)
    tiles = FamilyConfig(block_m=16, block_n=128, block_k=128, split_k=3)
    assert program_count(tiles, prob, None) == 32 * 3
    stream = FamilyConfig(block_m=16, block_n=128, block_k=128, stream_k=True)
    assert program_count(stream, prob, H200) == 132
    assert program_count(stream, Problem(1, 128, 256, torch.bfloat16), H200) == 1  # 2 iterations: one program


@pytest.mark.parametrize("missing", ["num_compute_units", "smem_per_block_kb", "warp_size", "max_threads_per_block"])
def test_unknown_limit_in_the_profile_is_an_error_naming_it(missing):
    profile = {**{k: v for k, v in H200.to_dict().items() if k != "chip"}, missing: None}
    with pytest.raises(UnknownChipLimit, match=missing):
        FAMILY.programs(dict(split_k=0), FAMILY.features(TASK.case("m1-n4096-k4096")), profile)


def test_no_limits_is_an_error_for_the_tuned_entry_point():
    args = make_inputs(TASK.case("odd-3x13x37"))
    previous = set_chip_limits(None)
    try:
        with pytest.raises(ChipLimitsUnset, match="set_chip_limits"):
            splitk_gemm(**args)
    finally:
        set_chip_limits(previous)


def test_auto_split_needs_compute_units():
    args = make_inputs(TASK.case("odd-3x13x37"))
    previous = set_chip_limits(None)
    try:
        with pytest.raises(ChipLimitsUnset, match="num_compute_units"):
            run_family(FamilyConfig(split_k=0), **args)
    finally:
        set_chip_limits(previous)


def test_the_process_chip_limits_are_used(device):
    with chip_limits(SMALL_CHIP):
        check_impl(splitk_gemm, TASK.case("decode-1x80x257"), device)
        check_impl(lambda **args: run_family(FamilyConfig(split_k=0), **args), TASK.case("decode-1x80x257"), device)


@pytest.mark.parametrize("bad, message", [
    (dict(a=torch.zeros(3, 4, dtype=torch.float16)), "b has shape"),
    (dict(c=torch.zeros(3, 5, dtype=torch.float16)), "c has shape"),
    (dict(b=torch.zeros(13, 37, dtype=torch.float32)), "b has dtype"),
    (dict(a=torch.zeros(3, 37, 1, dtype=torch.float16)), "a must be a 2-D tensor"),
    (dict(a=torch.zeros(3, 37, dtype=torch.int8)), "a has dtype"),
], ids=["k-mismatch", "c-shape", "dtype-mix", "rank", "int8"])
def test_bad_input_is_one_clear_error(bad, message):
    args = {**make_inputs(TASK.case("odd-3x13x37")), **bad}
    with pytest.raises(ValueError, match=message):
        run_family(FamilyConfig(), **args, limits=SMALL_CHIP)


def test_config_rejects_bad_knobs():
    with pytest.raises(ValueError, match="block_k"):
        FamilyConfig(block_k=48)
    with pytest.raises(ValueError, match="atomic"):
        FamilyConfig(atomic="yes")
    with pytest.raises(ValueError, match="unknown FamilyConfig knob"):
        FamilyConfig.from_dict({"splits": 2})
    assert FamilyConfig.from_dict(FamilyConfig(split_k=4).to_dict()) == FamilyConfig(split_k=4)


def test_knob_space_is_valid():
    """Every allowed value of every knob builds a FamilyConfig; the first values are the baseline's structure."""
    for name, values in TASK.knobs.items():
        for value in values:
            FamilyConfig(**{name: value})
    assert FamilyConfig(**{name: values[0] for name, values in TASK.knobs.items()}) == FamilyConfig()


# --- workspaces ---------------------------------------------------------------------------------------------------

def _zeroed_buffers(device: torch.device) -> list[torch.Tensor]:
    return [buf for key, buf in workspace._POOL.items() if key[0] == device.type and key[-1]]


@pytest.mark.parametrize("knobs", [dict(split_k=3, fused_reduce=True), dict(split_k=3, atomic=True),
                                   dict(stream_k=True)], ids=["fused", "atomic", "stream-k"])
@pytest.mark.slow
def test_zeroed_workspaces_are_left_at_zero(knobs, device):
    """After calls of several shapes, the arrival counters and the atomic accumulator are all zero again (the next
    call relies on it; a reset that misses an element, or one a late partial lands after, leaves it non-zero)."""
    run = functools.partial(run_family, FamilyConfig(block_m=16, block_n=16, block_k=16, **knobs), limits=SMALL_CHIP)
    for case_id in ("long-k-33x96x300", "m-over-block-17x123x37", "decode-1x80x257"):
        check_impl(run, TASK.case(case_id), device)
    buffers = _zeroed_buffers(torch.device(device))
    assert buffers and all(int(torch.count_nonzero(buf)) == 0 for buf in buffers)


@pytest.mark.parametrize("knobs", [dict(split_k=3), dict(split_k=3, fused_reduce=True),
                                   dict(stream_k=True)], ids=["workspace", "fused", "stream-k"])
def test_stale_partials_are_never_read(knobs, device):
    """A NaN-poisoned partials buffer must not show in the output: every partial read was written in the call."""
    run = functools.partial(run_family, FamilyConfig(block_m=16, block_n=16, block_k=16, **knobs), limits=SMALL_CHIP)
    case = TASK.case("m-over-block-17x123x37")
    check_impl(run, case, device)
    for key, buf in workspace._POOL.items():
        if key[3] == "splitk_partials":
            buf.fill_(float("nan"))
    check_impl(run, case, device)


def test_workspace_is_reused_across_calls(device):
    dev = torch.device(device)
    first = workspace.partials(dev, 3000)
    second = workspace.partials(dev, 2500)
    assert first.untyped_storage().data_ptr() == second.untyped_storage().data_ptr()
    assert workspace.partials(dev, 3 * 4096).numel() == workspace.size_class(3 * 4096)


def test_plan_of_an_auto_split():
    prob = Problem(1, 4096, 4096, torch.bfloat16)
    plan = plan_launch(FamilyConfig(block_m=16, block_n=128, block_k=128, split_k=0), prob, H200)
    assert plan.splits == auto_split_k(plan.config, prob, H200) and plan.programs == 32 * plan.splits
