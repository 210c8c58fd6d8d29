"""GPU-only checks: bf16, full benchmark sizes, 64-bit offsets, no host sync, no per-call allocation."""

from __future__ import annotations

import pytest
import torch

from kernels.extend_attention import baseline, extend_attention_fwd
from kernels.extend_attention.cases import BENCH_CASES, TEST_CASES
from kernels.extend_attention.family import FamilyConfig, run_family, tma_plan
from kernels.extend_attention.spec import TASK, make_inputs, reference
from kernels.task import Case
from tests.kernels.helpers import check_impl, on_poisoned_workspace

pytestmark = pytest.mark.gpu
IMPLS = {
    "baseline": baseline.extend_attention_fwd,
    "tuned": extend_attention_fwd,
    "split4-pack": lambda **a: run_family(FamilyConfig(16, 64, 4, 3, 4, True), **a),
    "m128-nopack": lambda **a: run_family(FamilyConfig(128, 64, 8, 3, 1, False), **a),
    "tma-m128-nopack": lambda **a: run_family(FamilyConfig(128, 64, 8, 3, 1, False, tma=True), **a),
    "tma-pregather-split4-pack": lambda **a: run_family(
        FamilyConfig(16, 64, 4, 3, 4, True, pregather=True, tma=True), **a),
    "ahead4-pack": on_poisoned_workspace(lambda **a: run_family(
        FamilyConfig(16, 64, 4, 3, 1, True, pregather=True, tma=True, gather_ahead=4), **a)),
    "ahead4-sync-pack": on_poisoned_workspace(lambda **a: run_family(
        FamilyConfig(16, 64, 4, 3, 1, True, pregather=True, tma=True, gather_ahead=4, ahead_sync=True), **a)),
}
TMA_COMPUTE = FamilyConfig(128, 64, 8, 3, 1, False, pregather=True, tma=True)
#: the mixed batch's tiles with gather-ahead (16 rows per key tile: a 4096-token prefix over 8 row blocks)
AHEAD_COMPUTE = FamilyConfig(128, 128, 8, 3, 1, True, pregather=True, tma=True, gather_ahead=16)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("impl", sorted(IMPLS))
@pytest.mark.parametrize("case", TEST_CASES, ids=[c.id for c in TEST_CASES])
def test_edge_cases_gpu(case, impl, dtype):
    if case.params["dtype"] == "float32":
        dtype = "float32"
    check_impl(IMPLS[impl], case, "cuda", dtype)


@pytest.mark.parametrize("impl", ["baseline", "tuned"])
@pytest.mark.parametrize("case", BENCH_CASES, ids=[c.id for c in BENCH_CASES])
def test_bench_cases_full_size(case, impl):
    check_impl(IMPLS[impl], case, "cuda", seed=77)


def _tail_reference(args, first_seq):
    """Reference of sequences first_seq.. only (rebased inputs), to keep the fp32 reference small."""
    qo, kv = args["qo_indptr"].long(), args["kv_indptr"].long()
    q0, p0 = int(qo[first_seq]), int(kv[first_seq])
    sub = dict(args)
    for key in ("q_extend", "k_extend", "v_extend"):
        sub[key] = args[key][q0:]
    sub["qo_indptr"], sub["kv_indptr"] = qo[first_seq:] - q0, kv[first_seq:] - p0
    sub["kv_indices"] = args["kv_indices"][p0:]
    return q0, reference(sub)["o_extend"]


@pytest.mark.parametrize("impl", ["baseline", "tuned"])
def test_offsets_beyond_2_31_elements(impl):
    """ΣE * H_q * D > 2^31: q/o offsets must be 64-bit (the last sequences sit past the int32 range)."""
    case = Case("big-offsets", {"extend_lens": [520] * 1040, "prefix_lens": [16] * 1040, "num_q_heads": 32,
                                "num_kv_heads": 8, "head_dim": 128}, 5)
    from kernels.extend_attention.cases import full_params
    case = Case(case.id, full_params(dict(case.params)), 5)
    args = make_inputs(case, 5, "cuda")
    assert args["q_extend"].numel() > 2**31
    IMPLS[impl](**args)
    q0, expected = _tail_reference(args, 1036)
    got = args["o_extend"][q0:].float()
    tol = TASK.tolerances["bfloat16"]
    assert torch.isfinite(got).all()
    assert ((got - expected).abs() <= tol.atol + tol.rtol * expected.abs()).all()


def test_launch_path_has_no_host_sync_and_no_allocation():
    args = make_inputs(TASK.case("decode"), 3, "cuda")
    extend_attention_fwd(**args)  # compile and size the workspace
    torch.cuda.synchronize()
    before = torch.cuda.memory_stats()["allocation.all.allocated"]
    torch.cuda.set_sync_debug_mode("error")
    try:
        extend_attention_fwd(**args)
        extend_attention_fwd(**args)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    torch.cuda.synchronize()
    assert torch.cuda.memory_stats()["allocation.all.allocated"] == before


def test_a_configuration_triton_refuses_for_shared_memory_is_shrunk_until_it_compiles():
    """Limits that claim 10 MB of shared memory keep the footprint model from shrinking a 6-stage 128x128 tile.
    At D_qk=192, D_v=128 (case qk192-v128; tiles 128 + 64 and 128) in fp16 one stage holds a 128x192 K tile
    (48 KiB) and a 128x128 V tile (32 KiB): 80 KiB, so >= 400 KiB even if Triton keeps one stage fewer than
    num_stages, beside a 48 KiB Q tile. Triton refuses it on the real chip (227 KiB per block), and run_family
    must shrink and still give the reference's answer. (Small head dims do not do: at D=32 the same tile is
    16 KiB per stage, about 100 KiB in all, and compiles as asked.)"""
    from kernels.extend_attention import family

    huge = family.ChipLimits(num_compute_units=132, smem_per_block_kb=10_000, warp_size=32, max_threads_per_block=1024)
    cfg = FamilyConfig(block_m=128, block_n=128, num_warps=8, num_stages=6, num_splits=1, pack_gqa=False)
    check_impl(lambda **a: run_family(cfg, limits=huge, **a), TASK.case("qk192-v128"), "cuda", "float16")
    fitted = [v for k, v in family._KNOWN_FITS.items() if k[0] == cfg]
    assert fitted and fitted[0] != cfg  # a smaller configuration was remembered


def _hopper() -> bool:
    return torch.version.hip is None and torch.cuda.get_device_capability()[0] >= 9


@pytest.mark.parametrize("case_id", ["prefill", "chunked-prefill", "mixed-batch", "ragged"])
def test_tma_on_the_compute_bound_cases(case_id):
    """On Hopper the descriptor path runs on the bench shapes (bf16, D=128, contiguous heads) and matches."""
    case = TASK.case(case_id)
    args = make_inputs(case, 77, "cuda")
    has_prefix = args["kv_indices"].shape[0] > 0
    assert tma_plan(TMA_COMPUTE, **args) == ((True, has_prefix) if _hopper() else (False, False))
    check_impl(lambda **a: run_family(TMA_COMPUTE, **a), case, "cuda", seed=77)


def test_tma_launch_path_has_no_host_sync_and_no_allocation():
    """Host-side descriptors are Python objects passed by value: no device allocation, no sync per call."""
    args = make_inputs(TASK.case("mixed-batch"), 3, "cuda")
    run_family(TMA_COMPUTE, **args)  # compile, size the workspaces
    torch.cuda.synchronize()
    before = torch.cuda.memory_stats()["allocation.all.allocated"]
    torch.cuda.set_sync_debug_mode("error")
    try:
        run_family(TMA_COMPUTE, **args)
        run_family(TMA_COMPUTE, **args)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    torch.cuda.synchronize()
    assert torch.cuda.memory_stats()["allocation.all.allocated"] == before


@pytest.mark.parametrize("sync, heads", [(False, 1), (True, 1), (True, 2)])
@pytest.mark.parametrize("case_id", ["mixed-batch", "small-heads", "large-heads"])
def test_gather_ahead_on_bench_shapes_reads_only_rows_copied_in_the_call(case_id, sync, heads):
    """The pooled prefix buffers are NaN-poisoned first: any row attention reads before its copy shows. (True, 1)
    on mixed batch is the configuration the tuned entry point runs."""
    case = TASK.case(case_id)
    config = AHEAD_COMPUTE if case.params["head_dim"] == 128 else FamilyConfig(
        64, 64, 4, 3, 1, True, pregather=True, tma=True, gather_ahead=2)
    config = FamilyConfig(**{**config.to_dict(), "ahead_sync": sync, "ahead_heads": heads})
    check_impl(on_poisoned_workspace(lambda **a: run_family(config, **a)), case, "cuda", seed=77)


@pytest.mark.parametrize("sync", [False, True])
def test_gather_ahead_launch_path_has_no_host_sync_and_no_allocation(sync):
    config = FamilyConfig(**{**AHEAD_COMPUTE.to_dict(), "ahead_sync": sync})
    args = make_inputs(TASK.case("mixed-batch"), 3, "cuda")
    run_family(config, **args)
    torch.cuda.synchronize()
    before = torch.cuda.memory_stats()["allocation.all.allocated"]
    torch.cuda.set_sync_debug_mode("error")
    try:
        run_family(config, **args)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    torch.cuda.synchronize()
    assert torch.cuda.memory_stats()["allocation.all.allocated"] == before
