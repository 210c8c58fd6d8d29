"""GPU: the tuned entry point's replays (kernels/extend_attention/prepared.py) launch the compiled kernels they kept
and stay right. bf16, bench-shaped classes at reduced lengths (decode, spec-verify, chunked prefill with the
pre-gathered prefix through descriptors, a uniform mixed batch with gather-ahead, a ragged batch, MLA through the
Gluon kernel), called in alternation on fresh inputs each time, so a replay that kept another class's launches, a
stale workspace, or a descriptor over an earlier call's tensors shows as a wrong output."""

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
