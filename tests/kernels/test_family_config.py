"""Configuration rules of the family: chip-fitted tiles, split-KV sizing, workspace reuse."""

from __future__ import annotations

import pytest
import torch

from kernels.extend_attention.common import Problem, head_dim_blocks
from kernels.extend_attention.family import (
    ChipLimits,
    FamilyConfig,
    auto_splits,
    fit_to_chip,
    shrink_once,
    smem_footprint_kb,
)
from kernels.extend_attention.tuned import choose_config
from kernels.extend_attention.workspace import get_workspace

M890 = ChipLimits(num_compute_units=36, smem_per_block_kb=48, warp_size=32, max_threads_per_block=1024)
MI300X = ChipLimits(num_compute_units=304, smem_per_block_kb=64, warp_size=64, max_threads_per_block=1024)
H200 = ChipLimits(num_compute_units=132, smem_per_block_kb=227, warp_size=32, max_threads_per_block=1024)


def problem(batch, ext, pre, hq=32, hkv=8, d=128, dv=None):
    return Problem(batch, batch * ext, batch * pre, hq, hkv, d, dv or d, torch.bfloat16)


SPEC_VERIFY = problem(64, 4, 4096)
DECODE = problem(64, 1, 8192)
MLA = problem(4, 512, 8192, hq=16, hkv=1, d=576, dv=512)


@pytest.mark.parametrize("limits", [M890, MI300X, H200], ids=["m890", "mi300x", "h200"])
@pytest.mark.parametrize("prob", [SPEC_VERIFY, DECODE, MLA, problem(1, 8192, 0)], ids=["spec", "decode", "mla", "pre"])
def test_fitted_tiles_fit_shared_memory(prob, limits):
    mla = prob.head_dim == 576
    cfg = fit_to_chip(choose_config(prob, limits), prob, limits, v_is_k=mla)
    assert smem_footprint_kb(cfg, prob, mla) <= limits.smem_per_block_kb
    assert cfg.num_warps * limits.warp_size <= limits.max_threads_per_block


def test_footprint_formula_by_hand():
    # MLA, V a view of K: elem 2 * (stages 2 * BLOCK_N 32 * 576 + BLOCK_M 64 * 576) / 1024 = 108 KiB
    cfg = FamilyConfig(block_m=64, block_n=32, num_stages=2)
    assert smem_footprint_kb(cfg, MLA, v_is_k=True) == pytest.approx(2 * (2 * 32 * 576 + 64 * 576) / 1024)
    assert head_dim_blocks(576, 512) == (512, 64, 512)
    assert head_dim_blocks(80, 80) == (128, 0, 128)
    assert head_dim_blocks(13, 13) == (16, 0, 16)


@pytest.mark.parametrize("limits", [M890, H200], ids=["m890", "h200"])
def test_split_kv_fills_the_compute_units(limits):
    cfg = FamilyConfig(block_m=16, pack_gqa=True)
    # spec-verify: 64 sequences x 8 KV heads x 1 row block = 512 programs: 14 waves of 36 units, 3.9 of 132
    expected = 1 if 512 >= 4 * limits.num_compute_units else 2
    assert auto_splits(cfg, SPEC_VERIFY, limits) == expected
    few = problem(2, 4, 4096)  # 2 x 8 = 16 programs: needs splits to fill 4 waves
    splits = auto_splits(cfg, few, limits)
    assert splits == min(-(-4 * limits.num_compute_units // 16), 4096 // 256)
    assert auto_splits(cfg, few, M890) < auto_splits(cfg, few, H200)


def test_no_prefix_means_no_split():
    assert auto_splits(FamilyConfig(), problem(1, 8192, 0), H200) == 1


def test_workspace_is_reused_within_a_size_class():
    dev = torch.device("cpu")
    o1, l1 = get_workspace(dev, 4, 100, 8, 64)
    o2, l2 = get_workspace(dev, 4, 90, 8, 64)
    assert o1.untyped_storage().data_ptr() == o2.untyped_storage().data_ptr()
    assert o2.shape == (4, 90, 8, 64) and l2.shape == (4, 90, 8)


def test_config_rejects_bad_knobs():
    with pytest.raises(ValueError, match="block_m"):
        FamilyConfig(block_m=48)
    with pytest.raises(ValueError, match="unknown FamilyConfig knob"):
        FamilyConfig.from_dict({"block_q": 16})


def test_shrink_steps_down_gather_then_stages_then_tiles():
    cfg = FamilyConfig(block_m=32, block_n=32, num_stages=2, gather_stages=2)
    steps = []
    while cfg is not None:
        steps.append((cfg.gather_stages, cfg.num_stages, cfg.block_n, cfg.block_m))
        cfg = shrink_once(cfg)
    assert steps == [(2, 2, 32, 32), (1, 2, 32, 32), (1, 1, 32, 32), (1, 1, 16, 32), (1, 1, 16, 16)]


@pytest.mark.slow
def test_a_configuration_refused_for_shared_memory_is_shrunk_and_remembered(monkeypatch, device):
    """Triton refuses a kernel whose shared memory exceeds the chip at compile time (OutOfResources); the
    interpreter has no such limit, so the refusal is raised here for num_stages > 1 and the real kernel runs the
    rest. The output must still match the reference, and the next call must go straight to the fitted config."""
    from triton.runtime.errors import OutOfResources

    from kernels.extend_attention import family
    from kernels.extend_attention.spec import TASK
    from tests.kernels.helpers import check_impl

    real, seen = family._family_fwd_kernel, []

    class RefusingKernel:
        def __getitem__(self, grid):
            def launch(*args, **kwargs):
                seen.append(kwargs["num_stages"])
                if kwargs["num_stages"] > 1:
                    raise OutOfResources(245760, 232448, "shared memory")
                return real[grid](*args, **kwargs)
            return launch

    monkeypatch.setattr(family, "_family_fwd_kernel", RefusingKernel())
    monkeypatch.setattr(family, "_KNOWN_FITS", {})
    cfg = FamilyConfig(block_m=16, block_n=16, num_stages=3, num_splits=2)
    case = TASK.case("gqa-4")
    check_impl(lambda **a: family.run_family(cfg, **a), case, device)
    assert seen == [3, 2, 1]
    check_impl(lambda **a: family.run_family(cfg, **a), case, device)
    assert seen == [3, 2, 1, 1]  # remembered: no second refusal
    assert list(family._KNOWN_FITS.values()) == [FamilyConfig(block_m=16, block_n=16, num_stages=1, num_splits=2)]


@pytest.mark.parametrize("d", [16, 64, 128])
def test_float32_tiles_are_capped_and_other_dtypes_are_not(d):
    """IEEE float32 dots are FMA loops: 32x32 tiles at most, 2 stages (compile time; family.FLOAT32_TILE_CAP)."""
    from dataclasses import replace

    from kernels.extend_attention.common import FLOAT32_TILE_CAP

    big = FamilyConfig(block_m=128, block_n=128, num_warps=8, num_stages=3, num_splits=1, pack_gqa=True)
    fp32 = replace(problem(2, 300, 100, d=d), dtype=torch.float32)
    cfg = fit_to_chip(big, fp32, H200, v_is_k=False)
    assert (cfg.block_m, cfg.block_n, cfg.num_stages) == FLOAT32_TILE_CAP == (32, 32, 2)
    assert cfg.pack_gqa and cfg.num_warps == 8  # nothing else changes
    bf16 = fit_to_chip(big, problem(2, 300, 100, d=d), H200, v_is_k=False)
    assert (bf16.block_m, bf16.block_n) == (128, 128)


@pytest.mark.parametrize("d, bf16_tiles", [(64, (128, 64, 4)), (128, (128, 64, 8)), (256, (64, 64, 8))])
def test_baseline_float32_tiles_are_capped_and_the_timed_dtypes_keep_the_public_table(d, bf16_tiles):
    """The baseline's Hopper table (reference document: (128, 64) up to D 128, (64, 64) up to 256) for 2-byte
    dtypes; float32 at most 32x32 (IEEE dots compile slowly), num_warps unchanged."""
    from kernels.extend_attention.baseline import baseline_tiles

    assert baseline_tiles(d, 2, 227.0) == bf16_tiles
    assert baseline_tiles(d, 4, 227.0) == (32, 32, bf16_tiles[2])


@pytest.mark.parametrize("prob, block_m, splits", [
    (problem(1, 2048, 32768), 128, 2),  # chunked prefill: 1 x 8 KV heads x 64 packed row blocks = 512 < 4 x 132
    (problem(16, 256, 4096), 128, 1),  # mixed batch: 16 x 8 x 8 = 1024 programs
    (problem(1, 2048, 0), 128, 1),  # as few programs, but no prefix to split
], ids=["chunked-prefill", "mixed-batch", "no-prefix"])
def test_compute_bound_calls_split_the_prefix_only_when_the_grid_is_small(prob, block_m, splits):
    cfg = choose_config(prob, H200)
    assert (cfg.block_m, cfg.num_splits, cfg.pregather, cfg.tma) == (block_m, splits, True, True)


@pytest.mark.parametrize("prob, max_len, tiles", [
    (problem(1, 8192, 0), 8192, (128, 128, 8, True)),  # one sequence: 128-row blocks, one 8-warp program per SM
    (problem(16, 256, 4096), 256, (128, 128, 8, True)),  # uniform batch
    (problem(16, 256, 4096), None, (128, 128, 8, True)),  # no bound given: treated as uniform
    (problem(8, 1038, 4096), 8192, (64, 64, 4, True)),  # ragged (max 8192 > 2 x mean 1038): two programs per SM
    (problem(8, 1038, 4096), 2076, (128, 128, 8, True)),  # max exactly 2 x mean: not ragged
    (problem(4, 4096, 4096, hq=8, hkv=8, d=64), 4096, (64, 64, 4, False)),  # D = 64 (no GQA group to pack)
    (problem(2, 2048, 8192, hq=16, hkv=8, d=256), 2048, (64, 64, 4, False)),  # D = 256
], ids=["prefill", "uniform", "no-bound", "ragged", "ragged-edge", "small-heads", "large-heads"])
def test_compute_bound_tiles_by_raggedness_and_head_dim(prob, max_len, tiles):
    cfg = choose_config(prob, H200, max_len)
    assert (cfg.block_m, cfg.block_n, cfg.num_warps, cfg.pack_gqa) == tiles



@pytest.mark.parametrize("prob, limits, rows", [
    (problem(16, 256, 4096), H200, 16),  # mixed batch: 8 row blocks per sequence, 128 programs per KV head
    (problem(32, 256, 4096), H200, 16),  # more programs per head: still one head ahead
    (problem(12, 256, 4096), H200, 0),  # 96 programs per head < 0.9 x 132: head h would wait on head h - 1
    (problem(64, 512, 4096), H200, 8),  # 16 row blocks per sequence: 8 rows per tile
    (problem(64, 128, 4096), H200, 0),  # 4 row blocks: 32 rows per tile (measured slower)
    (problem(16, 256, 0), H200, 0),  # no prefix to copy
    (problem(16, 256, 4096, hq=8, hkv=1), H200, 0),  # one KV head: nothing to copy ahead
    (problem(1, 2048, 32768), H200, 0),  # chunked prefill: split-KV, not gather-ahead
], ids=["mixed-batch", "bigger-batch", "small-grid", "16-blocks", "4-blocks", "no-prefix", "one-kv-head",
        "chunked"])
def test_gather_ahead_only_where_a_wave_of_programs_per_head_copies_inside_the_loop(prob, limits, rows):
    cfg = choose_config(prob, limits, max_len_extend=prob.total_extend // prob.batch)
    assert cfg.gather_ahead == rows
    assert cfg.ahead_sync == (rows > 0)


@pytest.mark.parametrize("max_len", [None, 257, 300])
def test_gather_ahead_needs_equal_extend_lengths(max_len):
    """[256] * 15 + [16] has the mixed batch's mean but a one-block sequence that would copy its whole prefix."""
    prob = Problem(16, 15 * 256 + 16, 16 * 4096, 32, 8, 128, 128, torch.bfloat16)
    assert choose_config(prob, H200, max_len).gather_ahead == 0
    assert choose_config(problem(16, 256, 4096), H200, 256).gather_ahead == 16
