"""GPU: the tuned entry point's replays (kernels/extend_attention/prepared.py) launch the compiled kernels they kept
and stay right. bf16, bench-shaped classes at reduced lengths (decode, spec-verify, chunked prefill with the
pre-gathered prefix through descriptors, a uniform mixed batch with gather-ahead, a ragged batch, large heads, MLA
through the Gluon kernel), called in alternation on fresh inputs each time, so a replay that kept another class's
launches, a stale workspace, or a descriptor over an earlier call's tensors shows as a wrong output; replayed calls
over buffers seen before encode no tensor map (kernels/tensormap.py) and launch only the schedule's kernels."""

from __future__ import annotations

import pytest
import torch

from kernels.extend_attention import tuned
from kernels.extend_attention.cases import full_params
from kernels.extend_attention.spec import make_inputs, reference
from kernels.task import Case
from tests.kernels.helpers import assert_close_to_reference, count_launches

pytestmark = pytest.mark.gpu

#: Each class keeps its bench case's batch size, heads and head dims, and prefixes long enough for the same split
#: counts, so its kernels compile to the bench cases' constexprs (Triton's cache serves both); only lengths shrink.
CLASSES = tuple(Case(f"replay-{cid}", full_params(p), 40 + i, "replay") for i, (cid, p) in enumerate((
    ("decode", dict(extend_lens=[1] * 64, prefix_lens=[1024] * 64)),
    ("spec-verify", dict(extend_lens=[4] * 64, prefix_lens=[1024] * 64)),
    ("chunked-prefill", dict(extend_lens=[512], prefix_lens=[4096], kv_indices_tail=37)),
    # gather-ahead: 16 x 8 row blocks = 128 programs per KV head, >= 0.9 x 132 SMs
    ("mixed-batch", dict(extend_lens=[256] * 16, prefix_lens=[1024] * 16)),
    ("ragged", dict(extend_lens=[1024] + [16] * 7, prefix_lens=[0] + [700] * 7)),
    ("small-heads", dict(extend_lens=[2048] * 4, prefix_lens=[512] * 4, num_q_heads=8, num_kv_heads=8, head_dim=64)),
    ("large-heads", dict(extend_lens=[512] * 2, prefix_lens=[2048] * 2, num_q_heads=16, num_kv_heads=8,
                         head_dim=256)),
    ("mla", dict(extend_lens=[512] * 4, prefix_lens=[1024] * 4, num_q_heads=16, num_kv_heads=1, head_dim=576,
                 head_dim_v=512, mla=True)),
)))


def _call_and_check(case: Case, seed: int) -> None:
    args = make_inputs(case, seed, "cuda")
    expected = reference(args)["o_extend"]
    tuned.extend_attention_fwd(**args)
    torch.cuda.synchronize()
    assert_close_to_reference(args["o_extend"], expected, "bfloat16", f"{case.id} seed {seed}")


def test_alternating_classes_replay_right():
    tuned._REPLAYS.clear()
    for round_ in range(4):
        for case in CLASSES:
            _call_and_check(case, 1000 * round_ + case.seed)
    assert len(tuned._REPLAYS) == len(CLASSES), "one replayable signature per class"


@pytest.mark.parametrize("case", CLASSES, ids=[c.id for c in CLASSES])
def test_replayed_calls_launch_the_kept_compiled_kernels(case, monkeypatch):
    """From the third call of a signature on, every launch goes through `DirectLaunch.launch_compiled` (the kept
    compiled kernel, counted and disabled by the verifier's guards), never `JITFunction.run`."""
    tuned._REPLAYS.clear()
    for seed in (1, 2):
        _call_and_check(case, seed)
    counts = count_launches(monkeypatch)
    for seed in (3, 4):
        _call_and_check(case, seed)
    assert counts["jit"] == 0 and counts["direct"] >= 2, counts


#: Per class: (kernels a replayed call launches: the prefix gather and the attention kernel, one split so no merge;
#: tensor maps over the call's own tensors, encoded again for new buffers: MLA's Q and extend keys (latent and rope
#: boxes each), large heads' extend K and V; the pre-gathered prefix lives in the pooled workspace, whose maps stay).
SCHEDULES = {"replay-mla": (2, 4), "replay-large-heads": (2, 2)}


@pytest.mark.parametrize("case", [c for c in CLASSES if c.id in SCHEDULES], ids=lambda c: c.id)
def test_replays_encode_tensor_maps_once_per_buffer(case, monkeypatch):
    """After warm-up, a replayed call over the same buffers encodes no tensor map (`fill_tma_descriptor` is not
    called) and makes exactly the schedule's launches, all through the prepared launcher; a call over new buffers of
    the same shapes encodes the maps of its own tensors only, and is right."""
    from triton.runtime.driver import driver

    from kernels import tensormap
    from kernels.launch import DirectLaunch

    launches_per_call, new_maps = SCHEDULES[case.id]
    tuned._REPLAYS.clear()
    args = make_inputs(case, 5, "cuda")
    expected = reference(args)["o_extend"]
    for _ in range(3):  # mark, record, first replay (encodes the maps)
        tuned.extend_attention_fwd(**args)
    counts = {"fill": 0, "direct": 0, "prepared": 0}
    utils = driver.active.utils
    fill, direct = utils.fill_tma_descriptor, DirectLaunch.launch_compiled
    prepared = tensormap.PreparedLauncher.__call__

    def counting(name, original):
        def wrapper(*a, **k):
            counts[name] += 1
            return original(*a, **k)
        return wrapper

    monkeypatch.setattr(utils, "fill_tma_descriptor", counting("fill", fill))
    monkeypatch.setattr(DirectLaunch, "launch_compiled", counting("direct", direct))
    monkeypatch.setattr(tensormap.PreparedLauncher, "__call__", counting("prepared", prepared))
    args["o_extend"].fill_(float("nan"))
    for _ in range(2):
        tuned.extend_attention_fwd(**args)
    torch.cuda.synchronize()
    assert_close_to_reference(args["o_extend"], expected, "bfloat16", f"{case.id} same buffers")
    assert counts == {"fill": 0, "direct": 2 * launches_per_call, "prepared": 2 * launches_per_call}, counts
    fresh = make_inputs(case, 6, "cuda")  # new buffers, same shapes: the same replay, new tensor maps
    tuned.extend_attention_fwd(**fresh)
    torch.cuda.synchronize()
    assert_close_to_reference(fresh["o_extend"], reference(fresh)["o_extend"], "bfloat16", f"{case.id} new buffers")
    assert counts["fill"] == new_maps, counts
    assert counts["prepared"] == 3 * launches_per_call, counts
