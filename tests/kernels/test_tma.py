"""The family's `tma` knob: when descriptor loads are used (`tma_plan`), that they really run under the Triton
interpreter, and that boxes never read past a tensor's rows or outside the heads (NaN poison around the data)."""

from __future__ import annotations

import pytest
import torch
from triton.tools.tensor_descriptor import TensorDescriptor

from kernels.extend_attention import family
from kernels.extend_attention.family import FamilyConfig, run_family, tma_plan
from kernels.extend_attention.prefix_gather import gather_prefix
from kernels.extend_attention.spec import TASK, make_inputs
from tests.kernels.helpers import check_impl

TMA = FamilyConfig(block_m=16, block_n=16, num_splits=2, pack_gqa=True, tma=True)
TMA_PREGATHER = FamilyConfig(block_m=16, block_n=16, num_splits=2, pack_gqa=False, pregather=True, tma=True)


class RecordingKernel:
    """Stands in for `family._family_fwd_kernel`: records the TMA constexprs and descriptor arguments, then runs
    the real kernel."""

    def __init__(self, real):
        self.real, self.calls = real, []

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            descs = [a for a in args if isinstance(a, TensorDescriptor)]
            self.calls.append((kwargs["TMA_EXT"], kwargs["TMA_PREFIX"], descs))
            return self.real[grid](*args, **kwargs)
        return launch


@pytest.fixture()
def recording(monkeypatch):
    kernel = RecordingKernel(family._family_fwd_kernel)
    monkeypatch.setattr(family, "_family_fwd_kernel", kernel)
    return kernel


@pytest.mark.parametrize("cfg, expect", [(TMA, (True, False)),
                                         pytest.param(TMA_PREGATHER, (True, True), marks=pytest.mark.slow)],
                         ids=["extend-only", "pregather"])
def test_descriptor_path_runs_under_the_interpreter(cfg, expect, recording, device):
    case = TASK.case("gqa-4")  # fp16, D = 32, 2 KV heads (contiguous), prefix and extend keys, 2 sequences
    assert tma_plan(cfg, **make_inputs(case, 0, device)) == expect
    check_impl(lambda **a: run_family(cfg, **a), case, device)
    ext, prefix, descs = recording.calls[-1]
    assert (ext, prefix) == expect
    assert len(descs) == 2 * (ext + prefix)
    assert all(d.block_shape == [cfg.block_n, 32] and d.shape[1] == 2 * 32 for d in descs)


@pytest.mark.parametrize("case_id, dtype, cfg, expect", [
    ("gqa-4", None, FamilyConfig(pregather=True), (False, False)),  # knob off
    ("gqa-4", "float32", TMA_PREGATHER, (False, False)),  # float32 keeps the pointer path
    ("gqa-4", "bfloat16", TMA_PREGATHER, (True, True)),
    ("head-dim-13", None, TMA_PREGATHER, (False, False)),  # padded head dim (and 26-byte rows)
    ("head-dim-80", None, TMA_PREGATHER, (False, False)),  # D != BLOCK_D
    ("qk192-v128", None, TMA_PREGATHER, (False, False)),  # rope part (BLOCK_DPE) and D != D_v
    ("mla-576-512", None, TMA_PREGATHER, (False, False)),  # MLA: V a view of K
    ("gqa-4", None, FamilyConfig(block_n=512, pregather=True, tma=True), (False, False)),  # box > 256 rows
    ("decode-long-prefix", None, TMA, (True, False)),  # prefix read through kv_indices: no box
])
def test_tma_plan_conditions(case_id, dtype, cfg, expect, device):
    args = make_inputs(TASK.case(case_id), 0, device, dtype)
    assert tma_plan(cfg, **args) == expect


def _poisoned_view(t: torch.Tensor, head_stride: int, row_pad: int, extra_rows: int, offset: int) -> torch.Tensor:
    """A copy of `t` [rows, H, D] inside a NaN buffer: head stride `head_stride`, row stride H*head_stride+row_pad,
    `extra_rows` NaN rows after the last, starting `offset` elements into the buffer."""
    rows, heads, width = t.shape
    row_stride = heads * head_stride + row_pad
    buf = torch.full((offset + (rows + extra_rows) * row_stride,), float("nan"), dtype=t.dtype, device=t.device)
    view = buf[offset:offset + rows * row_stride].view(rows, row_stride)[:, :heads * head_stride]
    view = view.unflatten(1, (heads, head_stride))[:, :, :width]
    view.copy_(t)
    return view


@pytest.mark.parametrize("cfg", [TMA, TMA_PREGATHER], ids=["extend-only", "pregather"])
def test_fused_qkv_layout_uses_descriptors_and_reads_no_poison(cfg, recording, device):
    """k/v extend as views of a wider NaN-filled buffer (heads contiguous, row stride padded by 8 elements, NaN
    rows after the last): the descriptor covers only [ΣE, H*D], so no NaN reaches the output. The pre-gather pool
    is first filled with NaN rows beyond the call's ΣP (a larger earlier call), which the prefix boxes must not
    read either."""
    case = TASK.case("gqa-7")  # fp16, D = 32, one KV head, G = 7
    probe = make_inputs(case, 0, device)
    if cfg.pregather:
        nan = torch.full((4 * probe["kv_indices"].shape[0] + 64, 1, 32), float("nan"), dtype=torch.float16,
                         device=device)
        idx = torch.arange(nan.shape[0], device=device)
        gather_prefix(nan, nan, idx)

    def run(**a):
        a["k_extend"] = _poisoned_view(a["k_extend"], 32, 8, 5, 0)
        a["v_extend"] = _poisoned_view(a["v_extend"], 32, 8, 5, 0)
        assert tma_plan(cfg, **a) == (True, cfg.pregather)
        return run_family(cfg, **a)

    check_impl(run, case, device)
    assert recording.calls[-1][:2] == (True, cfg.pregather)


@pytest.mark.parametrize("head_stride, offset", [(64, 0), pytest.param(32, 4, marks=pytest.mark.slow)],
                         ids=["strided-heads", "misaligned-base"])
def test_layouts_without_a_valid_box_fall_back(head_stride, offset, recording, device):
    """Heads not contiguous (stride 2D) or a base 8 bytes off 16: the pointer path, same results."""
    case = TASK.case("gqa-4")

    def run(**a):
        a["k_extend"] = _poisoned_view(a["k_extend"], head_stride, 0, 0, offset)
        assert tma_plan(TMA, **a) == (False, False)
        return run_family(TMA, **a)

    check_impl(run, case, device)
    assert recording.calls[-1][:2] == (False, False)
