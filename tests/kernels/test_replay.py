"""The tuned entry point's replays (kernels/extend_attention/prepared.py, kernels/launch.py `Recording`/`Replay`):
calls of alternating shape classes, each replayed from its third call on fresh inputs, match the fp32 reference; a
signature differs where the launches differ (shapes, the host length hint, V a view of K); a recording refuses
arguments it cannot name on a later call. Interpreter on CPU (the launches go through `JITFunction.run`'s interpreter
stand-in); tests/kernels/test_sglang_gpu.py replays compiled kernels on a GPU."""

from __future__ import annotations

import pytest
import torch

from kernels.extend_attention import tuned
from kernels.extend_attention.cases import full_params
from kernels.extend_attention.spec import TASK, make_inputs
from kernels.launch import Recording, Replay
from kernels.task import Case
from tests.kernels.helpers import check_impl

_SMALL = {"num_q_heads": 4, "num_kv_heads": 1, "head_dim": 32, "dtype": "float16"}
#: Two shape classes with different launches and the same host hint (longest extend 40): memory-bound (GQA packed,
#: split-KV and a merge kernel) and compute-bound (pre-gathered prefix through descriptors, an index tail).
SHAPE_CLASSES = (
    Case("replay-decode", full_params({**_SMALL, "extend_lens": [40] + [1] * 16,
                                       "prefix_lens": [300] + [600, 513, 700, 530] * 4}), 31, "replay"),
    Case("replay-prefill", full_params({**_SMALL, "extend_lens": [40, 23], "prefix_lens": [900, 1300],
                                        "kv_indices_tail": 9}), 32, "replay"),
)


@pytest.fixture
def replays(monkeypatch):
    """Counts of `Replay` calls, with an empty replay cache for the test (and after it)."""
    tuned._REPLAYS.clear()
    count = {"n": 0}
    original = Replay.__call__

    def counting(self, *args):
        count["n"] += 1
        return original(self, *args)

    monkeypatch.setattr(Replay, "__call__", counting)
    yield count
    tuned._REPLAYS.clear()


@pytest.mark.slow
def test_alternating_shape_classes_replay_and_match_reference(replays, device):
    for round_ in range(4):
        for case in SHAPE_CLASSES:
            check_impl(tuned.extend_attention_fwd, case, device, seed=100 * round_ + case.seed)
    assert len(tuned._REPLAYS) == 2, "each shape class is one signature"
    assert replays["n"] == 2 * 2, "calls 3 and 4 of each class replay"


@pytest.mark.slow
def test_replay_launches_what_the_plain_path_launches(replays, device):
    """Each class's replay runs the kernels its recording ran: the compute-bound class gathers its prefix first, the
    memory-bound one attends and merges its splits."""
    for case in SHAPE_CLASSES:
        for seed in (1, 2):
            check_impl(tuned.extend_attention_fwd, case, device, seed=seed)
    names = sorted(tuple(direct.fn.__name__ if hasattr(direct.fn, "__name__") else direct.fn.fn.__name__
                         for direct, *_ in replay.launches)
                   for _, replay in tuned._REPLAYS._entries.values())
    assert names[0] == ("_family_fwd_kernel", "_merge_kernel")
    assert names[1][:2] == ("_gather_kv_kernel", "_family_fwd_kernel")


@pytest.mark.slow
def test_host_length_hint_is_part_of_the_signature(replays, device):
    """Same tensors, a ragged and a uniform hint (the configuration rules read it): two signatures, both correct."""
    case = Case("replay-hint", full_params({**_SMALL, "num_kv_heads": 2, "num_q_heads": 4, "extend_lens": [48, 48],
                                            "prefix_lens": [64, 80]}), 33, "replay")
    for hint in ([48, 48], [90, 6], [48, 48], [90, 6], [48, 48], [90, 6]):
        check_impl(lambda hint=hint, **a: tuned.extend_attention_fwd(**a, extend_seq_lens_cpu=hint), case, device)
    assert len(tuned._REPLAYS) == 2
    assert replays["n"] == 2


def test_signature_separates_what_the_launches_depend_on():
    args = make_inputs(TASK.case("mla-576-512"), 1)
    tensors = tuple(args.get(n) for n in ("q_extend", "k_extend", "v_extend", "o_extend", "k_buffer", "v_buffer",
                                          "qo_indptr", "kv_indptr", "kv_indices", "custom_mask", "mask_indptr",
                                          "sinks")) + (None, None)
    limits = tuned.current_chip_limits()
    scalars = (True, None, 0.0, True, -1, 1.0, 1.0, False, False, 1, False, 5, None)
    key = tuned.call_key(tensors, scalars, limits)
    v_copy = list(tensors)
    v_copy[5] = tensors[5].clone()  # same shape, V no longer a view of K: another kernel
    assert tuned.call_key(tuple(v_copy), scalars, limits) != key
    assert tuned.call_key(tensors, scalars[:-2] + (6, None), limits) != key  # the hint
    assert tuned.call_key(tensors, (1,) + scalars[1:], limits) != key  # True and 1 differ to the checks
    assert tuned.call_key(tensors, scalars, limits) == key
    aliased = list(tensors)
    aliased[3] = tensors[0]  # one object in two places: not cached
    assert tuned.call_key(tuple(aliased), scalars, limits) is None


@pytest.mark.slow
def test_a_kept_replay_holds_none_of_the_recorded_calls_tensors(replays, device):
    """The replay cache keeps launches, not the inputs of the call that recorded them (a serving engine's per-batch
    q/k/v/o would otherwise stay allocated per signature)."""
    import gc
    import weakref

    case = SHAPE_CLASSES[1]  # descriptors over k/v extend, the pre-gathered prefix
    check_impl(tuned.extend_attention_fwd, case, device, seed=1)
    args = make_inputs(case, 2, device)
    tuned.extend_attention_fwd(**args)  # the second call records
    assert len(tuned._REPLAYS) == 1
    refs = [weakref.ref(args[name]) for name in ("q_extend", "k_extend", "v_extend", "o_extend", "k_buffer",
                                                 "qo_indptr", "kv_indices")]
    del args
    gc.collect()
    assert [ref() is None for ref in refs] == [True] * len(refs)
    check_impl(tuned.extend_attention_fwd, case, device, seed=3)  # the replay still runs right
    assert replays["n"] == 1


def test_recording_refuses_a_tensor_made_during_the_call():
    inp = torch.zeros(4)
    with Recording((inp,), stable=lambda t: False) as recording:
        template, subs, descs = recording.recipe((inp, 3, 1.5, None))
        assert subs == ((0, 0),) and descs == () and template == (None, 3, 1.5, None)
        assert recording.recipe((inp[1:],)) is None
    assert recording.refused and recording.replay() is None


def test_recording_keeps_stable_buffers_and_rebases_descriptors():
    from triton.tools.tensor_descriptor import TensorDescriptor

    inp, pool = torch.zeros(32, 16, dtype=torch.float16), torch.zeros(8, dtype=torch.float16)
    desc = TensorDescriptor(inp, [32, 16], [16, 1], [16, 16])
    with Recording((inp,), stable=lambda t: t is pool) as recording:
        template, subs, descs = recording.recipe((pool, desc))
    assert recording.refused is None and subs == () and [(pos, index) for pos, index, _ in descs] == [(1, 0)]
    assert template[0] is pool and template[1] is None
    kept = descs[0][2]
    assert kept.base is None and (kept.shape, kept.strides, kept.block_shape) == ([32, 16], [16, 1], [16, 16])
