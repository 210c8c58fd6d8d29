"""Our entry points against SGLang 0.5.23's own kernel, called the ways SGLang calls it (interpreter on CPU, float16
and float32; the GPU suite is test_sglang_gpu.py). Skipped where ``.cache/sglang`` is missing
(``python benchmarks/sglang_kernel.py --fetch``).

Each output must be within the task tolerance of the float32 reference, and SGLang's output too on the same inputs:
the two kernels agree on what every argument means.
"""

from __future__ import annotations

import pytest
import torch

from benchmarks.sglang_kernel import SGLangUnavailable, load
from kernels.extend_attention.spec import TASK, make_inputs, reference
from tests.kernels.helpers import assert_close_to_reference, serving_engine_inputs
from tests.kernels.sglang_calls import CALL_STYLES, entry_points, fresh

try:
    SGLANG = load()
except SGLangUnavailable as exc:
    pytest.skip(str(exc), allow_module_level=True)

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="the GPU suite is test_sglang_gpu.py")
CASES = ("gqa-4", "sinks", "sliding-window", "custom-mask", "kv-scales", "indices-tail", "mla-576-512", "head-dim-80",
         "fp32-inputs", "zero-lengths")
IMPLS = ("tuned", "baseline", "dropin")


@pytest.fixture(scope="module")
def impls():
    return entry_points()


@pytest.mark.parametrize("case_id", CASES)
def test_sglangs_kernel_meets_the_reference_on_the_test_cases(case_id):
    case = TASK.case(case_id)
    args = make_inputs(case, 21)
    SGLANG.extend_attention_fwd(**args)
    assert_close_to_reference(args["o_extend"], reference(args)["o_extend"], case.params["dtype"], "sglang")


@pytest.mark.slow  # 90 interpreter calls of each side, ~90 s on 2 cores
@pytest.mark.parametrize("style", sorted(CALL_STYLES))
@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("case_id", CASES)
def test_sglang_style_calls_give_sglangs_output(case_id, impl, style, impls):
    case = TASK.case(case_id)
    dtype = case.params["dtype"]
    args = make_inputs(case, 22)
    if case_id == "sliding-window" and style == "keyword":
        args.update(k_scale=0.5, v_scale=1.5)  # the scales by keyword, not 1
    theirs = fresh(args)
    CALL_STYLES[style](SGLANG.extend_attention_fwd, theirs)
    ours = fresh(args)
    CALL_STYLES[style](impls[impl], ours)
    expected = reference({**args, "o_extend": ours["o_extend"]})["o_extend"]
    assert_close_to_reference(theirs["o_extend"], expected, dtype, "sglang")
    assert_close_to_reference(ours["o_extend"], expected, dtype, impl)
    assert_close_to_reference(ours["o_extend"], theirs["o_extend"].float(), dtype, f"{impl} vs sglang")


@pytest.mark.parametrize("impl", IMPLS)
def test_the_dcp_calls_give_sglangs_outputs_and_lse(impl, impls):
    """triton_backend.py's DCP path: the prefix alone (k_extend = k[:0], skip_extend) and the extend alone (empty
    prefix, skip_prefix), each into a float32 output with a natural-log LSE."""
    args = make_inputs(TASK.case("gqa-4"), 23)
    tokens, heads = args["o_extend"].shape[:2]
    runs = {}
    for who, fn in (("sglang", SGLANG.extend_attention_fwd), (impl, impls[impl])):
        o_pre = torch.zeros(args["o_extend"].shape, dtype=torch.float32)
        o_ext, lse_pre = torch.zeros_like(o_pre), torch.full((tokens, heads), float("-inf"))
        lse_ext = torch.full_like(lse_pre, float("-inf"))
        fn(args["q_extend"], args["k_extend"][:0], args["v_extend"][:0], o_pre, args["k_buffer"], args["v_buffer"],
           args["qo_indptr"], args["kv_indptr"], args["kv_indices"], None, False, None, args["max_len_extend"], 1.0,
           1.0, sm_scale=0.3, lse_extend=lse_pre, skip_extend=True)
        empty = torch.zeros_like(args["kv_indptr"])
        fn(args["q_extend"], args["k_extend"], args["v_extend"], o_ext, args["k_buffer"][:0], args["v_buffer"][:0],
           args["qo_indptr"], empty, args["kv_indices"][:0], None, True, None, args["max_len_extend"], 1.0, 1.0,
           sm_scale=0.3, lse_extend=lse_ext, skip_prefix=True, page_size=1)
        runs[who] = (o_pre, o_ext, lse_pre, lse_ext)
    for got, want in zip(runs[impl], runs["sglang"]):
        finite = torch.isfinite(want)
        assert torch.equal(finite, torch.isfinite(got))
        assert torch.allclose(got[finite], want[finite], atol=4e-3, rtol=4e-3)


@pytest.mark.parametrize("impl", IMPLS)
def test_a_serving_engines_index_buffer_gives_sglangs_output(impl, impls):
    """Scattered slots in a 4x pool, slot 0 and the last in use, kv_indices running on into NaN slots."""
    args = serving_engine_inputs([3, 20, 1, 6], [70, 1, 30, 45], 4, 2, 32, torch.float16, "cpu", seed=5)
    theirs, ours = fresh(args), fresh(args)
    CALL_STYLES["positional"](SGLANG.extend_attention_fwd, theirs)
    CALL_STYLES["backend"](impls[impl], ours)
    assert_close_to_reference(ours["o_extend"], theirs["o_extend"].float(), "float16", f"{impl} vs sglang")


@pytest.mark.parametrize("impl", IMPLS)
def test_window_kv_offsets_mean_what_they_mean_in_sglang(impl, impls):
    """A custom mask with a sliding window and per-sequence leading mask columns to skip."""
    from tests.kernels.test_sglang_arguments import _with_mask_offsets

    args, offsets = _with_mask_offsets(make_inputs(TASK.case("window-and-mask"), 24), [6, 3])
    theirs, ours = fresh(args), fresh(args)
    SGLANG.extend_attention_fwd(**theirs, window_kv_offsets=offsets)
    impls[impl](**ours, window_kv_offsets=offsets)
    assert_close_to_reference(ours["o_extend"], theirs["o_extend"].float(), "float16", f"{impl} vs sglang")
