"""Progress notes of the offline proposer: knob values as a user reads them."""

from __future__ import annotations

from types import SimpleNamespace

from agent.proposers.offline import PatternGuidedProposer, knob_value


def test_num_splits_zero_reads_as_auto():
    assert knob_value("num_splits", 0) == "auto"
    assert knob_value("num_splits", 2) == "2" and knob_value("num_stages", 0) == "0"


class _Space:
    """Just enough of a FamilySpace: one class whose only neighbour sets num_splits to 0."""

    def neighbors(self, centre, key):
        return [("num_splits", -1, {**centre, "num_splits": 0})]

    def feasible(self, config, key):
        return True


def test_move_note_says_auto_for_num_splits_zero(monkeypatch):
    proposer = PatternGuidedProposer(_Space())  # type: ignore[arg-type]
    monkeypatch.setattr(proposer, "_aggregate_patterns", lambda key, ctx: [])
    ctx = SimpleNamespace(best_id="v0", best_table={"memory-d128": {"num_splits": 1, "block_m": 64}})
    notes = [c[2] for c in proposer._class_candidates("memory-d128", ctx, [])]  # type: ignore[arg-type]
    assert notes == ["num_splits 1 -> auto (explore around the best)"]
