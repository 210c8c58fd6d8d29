"""Host-side planning of the Hopper Gluon MLA kernels (`kernels.extend_attention.mla_gluon`): which variant each
``FamilyConfig.mla`` value runs, its shared-memory footprint and accumulator registers against the H200's per-block
limits, and the route the tuned entry point and the optimizer's knob space share. No GPU: the sm_90 compiles that
the footprints are checked against are in test_mla_compile.py."""

from __future__ import annotations

import pytest
import torch

from kernels.extend_attention.common import Problem
from kernels.extend_attention.family import FamilyConfig
from kernels.extend_attention.family_space import KNOBS
from kernels.extend_attention.mla import MLA_IMPLS
from kernels.extend_attention.mla_gluon import (
    GLUON_IMPLS,
    GLUON_VARIANTS,
    MLA_ROUTE,
    gluon_p_in_rope,
    gluon_registers,
    gluon_smem_kb,
)
from kernels.extend_attention.tuned import class_config

#: The bench's ``mla`` case: B = 4, E = 512, P = 8192, 16 q heads on one KV head, 576/512, bf16.
BENCH = Problem(4, 2048, 4 * 8192, 16, 1, 576, 512, torch.bfloat16)
#: 227 KiB: the H200's shared memory per block (hardware profile, cudaDevAttrMaxSharedMemoryPerBlockOptin).
H200_SMEM_KB = 227.0
#: sm_90 compiles (triton 3.9, `offline_compile.compile_mla_gluon`, BLOCK_N = 64): metadata.shared in bytes.
COMPILED_SMEM_BYTES = {"gluon": 229_912, "gluon_ahead": 229_912, "gluon_ahead_rope": 221_720,
                       "gluon_ahead_lazy": 229_912, "gluon_ahead_rope_lazy": 221_720,
                       "gluon_ahead_rope_split": 221_720, "gluon_ahead_rope_lazy_local": 221_720}


def test_every_variant_is_a_selectable_mla_value():
    assert set(GLUON_VARIANTS) | {"gluon_ws"} == set(GLUON_IMPLS)
    for impl in GLUON_IMPLS:
        assert impl in MLA_IMPLS
        assert FamilyConfig(64, 64, 8, 2, mla=impl).mla == impl
    with pytest.raises(ValueError):
        FamilyConfig(64, 64, 8, 2, mla="gluon_ahead_bogus")


@pytest.mark.parametrize("impl", sorted(COMPILED_SMEM_BYTES))
def test_the_footprint_model_is_the_compiled_one_and_fits_the_h200(impl):
    # Q [64, 576] + two key tiles [64, 576] bf16 = 221,184 B; + P [64, 64] bf16 = 8,192 B unless P is in the rope slot
    tiles = 2 * 576 * (64 + 2 * 64)
    p_buf = 0 if impl.startswith("gluon_ahead_rope") else 2 * 64 * 64
    assert tiles == 221_184
    assert gluon_smem_kb(64, BENCH, impl) * 1024 == pytest.approx(COMPILED_SMEM_BYTES[impl], abs=64)
    assert gluon_smem_kb(64, BENCH, impl) * 1024 == pytest.approx(tiles + p_buf, abs=1024)
    assert gluon_smem_kb(64, BENCH, impl) <= H200_SMEM_KB


def test_p_goes_into_the_rope_slot_only_where_it_has_the_slots_shape():
    assert gluon_p_in_rope("gluon_ahead_rope", 64, BENCH)  # P [64, 64] over the rope part [64 keys, 64]
    assert not gluon_p_in_rope("gluon_ahead_rope", 32, BENCH)  # P [64, 32] against a [32, 64] slot: own buffer
    assert not gluon_p_in_rope("gluon_ahead", 64, BENCH) and not gluon_p_in_rope("gluon", 64, BENCH)
    assert gluon_p_in_rope("gluon_ahead_rope_lazy", 64, BENCH) and gluon_p_in_rope("gluon_ahead_rope_split", 64, BENCH)
    assert not gluon_p_in_rope("gluon_ahead_lazy", 64, BENCH)
    wide_rope = Problem(1, 64, 0, 16, 1, 640, 512, torch.bfloat16)  # rope 128 != BLOCK_N 64
    assert not gluon_p_in_rope("gluon_ahead_rope", 64, wide_rope)
    # without the rope slot the variant needs the P buffer back
    assert gluon_smem_kb(32, BENCH, "gluon_ahead_rope") == gluon_smem_kb(32, BENCH, "gluon_ahead")


def test_accumulator_registers_stay_within_what_a_thread_addresses():
    # 64 x 512 fp32 over 256 threads = 128; scores 64 x 64 fp32 over 256 threads = 16, twice with scores ahead
    assert gluon_registers("gluon", 64, BENCH) == 128 + 16
    assert gluon_registers("gluon_ahead", 64, BENCH) == 128 + 2 * 16
    assert gluon_registers("gluon_ahead_rope", 64, BENCH) == 128 + 2 * 16
    # lazy rescale and the two P . V halves keep the same accumulators: 2 x 64 x 256 fp32 = 64 x 512
    # (the warpgroup-local row sums: [64, 2] instead of [64], 2 registers per thread either way)
    for impl in ("gluon_ahead_lazy", "gluon_ahead_rope_lazy", "gluon_ahead_rope_split", "gluon_ahead_rope_lazy_local"):
        assert gluon_registers(impl, 64, BENCH) == 128 + 2 * 16
    # warp-specialized softmax warpgroup: half the output over 128 threads, its score tile and the next one
    assert gluon_registers("gluon_ws", 64, BENCH) == 128 + 2 * 32
    for impl in GLUON_IMPLS:
        assert gluon_registers(impl, 64, BENCH) < 255
        assert gluon_registers(impl, 64, BENCH) * 256 <= 65_536  # one 8-warp program per SM's register file


def test_each_variant_sets_the_kernel_switches_it_is_named_for():
    for impl, variant in GLUON_VARIANTS.items():
        assert variant.ahead == impl.startswith("gluon_ahead")
        assert variant.p_in_rope == ("_rope" in impl)
        assert variant.lazy == ("_lazy" in impl)
        assert variant.local_stats == impl.endswith("_local")
        assert not variant.local_stats or variant.lazy  # the kernel's static_assert: local statistics need lazy
        assert variant.split_pv == impl.endswith("_split")
        assert not variant.split_pv or variant.ahead  # the kernel's static_assert: halves only in the ahead loop


def test_the_tuned_route_is_one_knob_value_shared_with_the_optimizer():
    # the tuned entry point's MLA branch and the agent's mla knob both take MLA_ROUTE: switching the route to a
    # sweep winner is one edit, and the optimizer can reach what the tuned entry point runs
    assert MLA_ROUTE in GLUON_IMPLS
    assert class_config(BENCH).mla == MLA_ROUTE
    assert MLA_ROUTE in KNOBS["mla"]
