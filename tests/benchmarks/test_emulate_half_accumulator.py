"""The torch emulation that sized the shifted-values draw (benchmarks/emulate_half_accumulator.py): honest
arithmetic meets the task's reference, and the float16-accumulator emulation gives the interpreter's output of the
corpus cheat that keeps its accumulator in float16 (tests/verifier/cheats/ea_half_accumulator.py)."""

from __future__ import annotations

import importlib.util
import random

import torch

from benchmarks.emulate_half_accumulator import bound_fraction, emulate
from kernels.extend_attention.cases import shifted_values_case
from kernels.extend_attention.spec import make_inputs, reference
from tests.verifier.corpus import CHEATS_DIR


def _draw(seed: int, dtype: str | None = None) -> tuple[dict, torch.Tensor, int]:
    inputs = make_inputs(shifted_values_case(random.Random(seed), True), dtype=dtype)
    rows = int(inputs["qo_indptr"][1])
    return inputs, reference(inputs)["o_extend"][:rows], rows


def test_honest_emulation_in_float32_meets_the_reference_at_every_tile_size():
    inputs, expected, _ = _draw(3, "float32")
    for block_n in (16, 64, 4096):  # float32 sums of +-15-45 over ~1,400 keys: 0.12 of the 1e-4 bound
        assert bound_fraction(emulate(inputs, block_n, False), expected, torch.float32) < 0.25


def test_half_accumulator_emulation_is_the_interpreters_cheat_output_and_fails_the_draw():
    inputs, expected, rows = _draw(3000)
    spec = importlib.util.spec_from_file_location("ea_half_accumulator", CHEATS_DIR / "ea_half_accumulator.py")
    cheat = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cheat)
    cheat.extend_attention_fwd(**inputs)  # 16-key tiles under the interpreter
    got = inputs["o_extend"][:rows].float()
    emulated = emulate(inputs, 16, True)
    ulp = torch.finfo(torch.float16).eps * expected.abs().clamp_min(2.0 ** -14)
    assert ((got - emulated).abs() <= ulp).all()
    assert bound_fraction(got, expected, torch.float16) > 2.0
    assert bound_fraction(emulate(inputs, 16, False), expected, torch.float16) < 0.5
