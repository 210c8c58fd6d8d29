"""Extend attention's formula variables: head-dim tiles are the kernel's, so the catalog budgets the shared memory
the family really allocates."""

from __future__ import annotations

import pytest
import torch

from kernels.extend_attention.cases import full_params
from kernels.extend_attention.common import Problem
from kernels.extend_attention.family import FamilyConfig, smem_footprint_kb
from kernels.extend_attention.variables import VARIABLES, case_values
from kernels.task import Case


def _case(d: int, dv: int | None = None, mla: bool = False, hkv: int = 2) -> Case:
    params = full_params({"extend_lens": [5, 3], "prefix_lens": [7, 0], "num_q_heads": 4, "num_kv_heads": hkv,
                          "head_dim": d, "head_dim_v": dv or d, "mla": mla})
    return Case(f"d{d}", params, 1, "test")


@pytest.mark.parametrize(("d", "dv", "qk_tile", "v_tile"), [
    (13, 13, 16, 16), (64, 64, 64, 64), (80, 80, 128, 128), (96, 96, 128, 128), (128, 128, 128, 128),
    (160, 160, 256, 256),  # not 160: the kernel pads to the next power of two
    (192, 128, 192, 128),  # 128 + 64 rope part
    (288, 288, 288, 512),  # 256 + 32 for Q/K; V padded
    (320, 320, 512, 512),  # not 320
    (576, 512, 576, 512),  # MLA 512 + 64
])
def test_tiles_are_the_kernels(d, dv, qk_tile, v_tile):
    values = case_values(_case(d, dv))
    assert (values["D_qk_tile"], values["D_v_tile"]) == (qk_tile, v_tile)
    assert values["D_kv_tile"] == qk_tile + v_tile


@pytest.mark.parametrize("d", [160, 320])
def test_catalog_footprint_equals_the_familys(d):
    """The catalog's tile footprint formula (tiles rule) over these variables is the family's own."""
    v = case_values(_case(d))
    block_m, block_n, stages = 32, 32, 2
    catalog_kb = (stages * block_n * v["D_kv_tile"] * v["elem"] + block_m * v["D_qk_tile"] * v["elem"]) / 1024
    prob = Problem(2, 8, 7, 4, 2, d, d, torch.bfloat16)
    family_kb = smem_footprint_kb(FamilyConfig(block_m=block_m, block_n=block_n, num_stages=stages), prob, False)
    assert catalog_kb == pytest.approx(family_kb)


def test_every_variable_has_a_value_and_mla_reads_k_once():
    mla = case_values(_case(576, 512, mla=True, hkv=1))
    assert set(VARIABLES) == set(mla)
    assert mla["D_kv_tile"] == 576 and mla["mla"] == 1
    assert mla["prefix_kv_bytes"] == 7 * 576 * 2  # ΣP x D_qk x bf16: V is a view of K
