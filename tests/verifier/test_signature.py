"""The verifier's call of an entry point (`agent.verifier.signature.bind_call`) and the names it varies."""

from __future__ import annotations

import inspect

import pytest
import torch

from agent.verifier.signature import EMPTY, bind_call, expected_parameters, is_default, varied_parameters
from kernels.extend_attention.spec import TASK, make_inputs

EXPECTED = expected_parameters(TASK)

#: SGLang 0.5.23 ``kernels/ops/attention/extend_attention.py`` ``extend_attention_fwd``
#: (shared/reference/extend_attention.md, "Interface").
SGLANG_EXTEND_ATTENTION = (
    ("q_extend", EMPTY), ("k_extend", EMPTY), ("v_extend", EMPTY), ("o_extend", EMPTY),
    ("k_buffer", EMPTY), ("v_buffer", EMPTY), ("qo_indptr", EMPTY), ("kv_indptr", EMPTY),
    ("kv_indices", EMPTY), ("custom_mask", EMPTY), ("is_causal", EMPTY), ("mask_indptr", EMPTY),
    ("max_len_extend", EMPTY), ("k_scale", EMPTY), ("v_scale", EMPTY), ("sm_scale", None), ("logit_cap", 0.0),
    ("skip_prefix_custom_mask", True), ("sliding_window_size", -1), ("sinks", None), ("window_kv_offsets", None),
    ("xai_temperature_len", -1), ("lse_extend", None), ("skip_prefix", False), ("skip_extend", False),
    ("page_size", 1), ("score_mod", None), ("aux_tensors", None), ("extend_seq_lens_cpu", None),
    ("identity_kv_indices", False),
)


def up_to_sinks(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices,
                custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, sm_scale=None, logit_cap=0.0,
                skip_prefix_custom_mask=True, sliding_window_size=-1, sinks=None):
    return o_extend


def with_kwargs(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices,
                custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, **kwargs):
    return o_extend


def test_the_baseline_has_sglang_0_5_23s_signature():
    assert EXPECTED == SGLANG_EXTEND_ATTENTION


def test_the_verifier_varies_the_optional_parameters_up_to_sinks_and_no_further():
    varied = varied_parameters(TASK)
    assert {"sm_scale", "logit_cap", "skip_prefix_custom_mask", "sliding_window_size", "sinks"} <= varied
    assert {"k_scale", "v_scale", "max_len_extend", "q_extend"} <= varied  # required
    assert not varied & {"window_kv_offsets", "lse_extend", "page_size", "extend_seq_lens_cpu", "identity_kv_indices"}


def test_keywords_at_their_default_are_dropped_for_a_kernel_that_does_not_declare_them():
    inputs = {**make_inputs(TASK.case("sinks"), 0), "lse_extend": None, "page_size": 1, "skip_prefix": False}
    bound = bind_call(up_to_sinks, inputs, EXPECTED)
    assert set(bound) == set(inputs) - {"lse_extend", "page_size", "skip_prefix"}
    assert bound["sinks"] is inputs["sinks"]
    assert bind_call(with_kwargs, inputs, EXPECTED) == inputs


@pytest.mark.parametrize("name, value", [("page_size", 16), ("lse_extend", torch.zeros(1)), ("unknown", None)])
def test_a_keyword_set_to_another_value_must_be_declared(name, value):
    inputs = {**make_inputs(TASK.case("gqa-4"), 0), name: value}
    with pytest.raises(TypeError, match=f"does not declare parameter '{name}'"):
        bind_call(up_to_sinks, inputs, EXPECTED)


def test_the_call_follows_the_code_not_a_signature_attribute():
    def lying(q_extend, **kwargs):
        return None

    up_to_sinks.__signature__ = inspect.signature(lying)  # claims **kwargs
    try:
        assert "kwargs" in str(inspect.signature(up_to_sinks))
        inputs = {**make_inputs(TASK.case("gqa-4"), 0), "page_size": 1}
        assert "page_size" not in bind_call(up_to_sinks, inputs, EXPECTED)
    finally:
        del up_to_sinks.__signature__


@pytest.mark.parametrize("value, default, expected", [
    (1, 1, True), (1.0, 1, True), (True, 1, False), (None, None, True), (torch.zeros(1), None, False),
    ([1], None, False), (-1, -1, True),
])
def test_is_default(value, default, expected):
    assert is_default(value, default) is expected
