"""Progress notes of the offline proposer: knob values as a user reads them."""

from __future__ import annotations

from types import SimpleNamespace

from agent.proposers.offline import PatternGuidedProposer
from kernels.extend_attention.family import FamilyConfig


def test_num_splits_zero_reads_as_auto():
    space = _space()
    assert space.value_label("num_splits", 0) == "auto"
    assert space.value_label("num_splits", 2) == "2" and space.value_label("num_stages", 0) == "0"


class _Space:
    """Just enough of a FamilySpace: one class whose only neighbour sets num_splits to 0."""

    value_label = staticmethod(lambda knob, value: "auto" if (knob, value) == ("num_splits", 0) else str(value))

    def neighbors(self, centre, key, feasible=True):
        return [("num_splits", -1, {**centre, "num_splits": 0})]

    def feasible(self, config, key):
        return True


def test_move_note_says_auto_for_num_splits_zero(monkeypatch):
    proposer = PatternGuidedProposer(_Space())  # type: ignore[arg-type]
    monkeypatch.setattr(proposer, "_aggregate_patterns", lambda key, ctx: [])
    ctx = SimpleNamespace(best_id="v0", best_table={"memory-d128": {"num_splits": 1, "block_m": 64}})
    notes = [c[2] for c in proposer._class_candidates("memory-d128", ctx, [])]  # type: ignore[arg-type]
    assert notes == ["num_splits 1 -> auto (explore around the best)"]


# ---------------------------------------------------------------- switches (pregather, tma) in the real family space

def _space():
    from agent.family_space import FamilySpace
    from kernels.extend_attention.spec import TASK
    from tests.agent.helpers import h200_profile

    return FamilySpace(TASK, h200_profile(), list(TASK.bench_cases))


def test_switch_moves_are_flips_with_readable_notes(monkeypatch):
    space = _space()
    proposer = PatternGuidedProposer(space)
    monkeypatch.setattr(proposer, "_aggregate_patterns", lambda key, ctx: [])
    centre = space.structure_config("compute-d128")
    ctx = SimpleNamespace(best_id="v0", best_table={"compute-d128": centre})
    candidates = list(proposer._class_candidates("compute-d128", ctx, []))  # type: ignore[arg-type]
    notes = {c[2] for c in candidates}
    assert "pregather False -> True (explore around the best)" in notes
    assert "tma False -> True (explore around the best)" in notes
    flip = next(c[0] for c in candidates if c[2].startswith("tma False -> True"))
    assert flip == {**centre, "tma": True}


def test_findings_recorded_before_the_switches_still_seed_plans():
    from agent.seams import Citation

    space = _space()
    old = {"block_m": 16, "block_n": 64, "num_warps": 4, "num_stages": 3, "num_splits": 8, "pack_gqa": True}
    finding = Citation("run-1 v3 decode", "", 1.0, "findings", "f1", {
        "status": "accepted", "speedup": 9.5, "chip": "h200", "case_id": "decode", "patterns": ["split_kv"],
        "parameters": {**old, "dispatch_class": "memory-d128"}})
    ctx = SimpleNamespace(retrieval=SimpleNamespace(findings=[finding]), chip="h200")
    plans = PatternGuidedProposer(space)._finding_plans("memory-d128", ctx)  # type: ignore[arg-type]
    # the candidate that made this finding rendered no pregather/tma/mla (nor the later knobs): it ran at
    # FamilyConfig's defaults
    defaults = FamilyConfig()
    later = {k: getattr(defaults, k) for k in space.knobs if k not in old}
    assert later["pregather"] is later["tma"] is False and later["mla"] == "off" and later["heavy_first"] is True
    assert [p.config for p in plans] == [{**old, **later}]
    assert plans[0].note.startswith("verified x9.50 on h200")


def test_pattern_expected_to_lose_is_not_applied(monkeypatch):
    space = _space()
    proposer = PatternGuidedProposer(space)
    ranked = [("multi_query_blocks", ({"pack_gqa": True, "block_m": 16}, 1.6, [])),
              ("pregather_tma", ({"pregather": False, "tma": True}, -1.7, []))]  # summed score < 0 (decode)
    monkeypatch.setattr(proposer, "_aggregate_patterns", lambda key, ctx: ranked)
    monkeypatch.setattr(proposer, "_finding_plans", lambda key, ctx: [])
    plans = proposer._plans("memory-d128", SimpleNamespace())  # type: ignore[arg-type]
    assert plans and all("pregather_tma" not in p.patterns and p.config["tma"] is False for p in plans)
    # it still counts against its values when moves are ranked (a move to tma=True scores lower)
    targets = {"tma": [(True, -1.7, "pregather_tma", [])]}
    centre = space.structure_config("memory-d128")
    assert proposer._move_score("memory-d128", "tma", 1, True, centre, targets) < 0


def test_two_knob_moves_combine_a_switch_with_its_sub_knob(monkeypatch):
    """Gather-ahead's ordering (ahead_sync) fits only with gather-ahead on, so neither single step reaches the tuned
    compute-d128 configuration from one without gather-ahead; the pair does."""
    from kernels.extend_attention.family import AHEAD_DERIVED
    from kernels.extend_attention.family_space import case_shape
    from kernels.extend_attention.spec import TASK
    from kernels.extend_attention.tuned import class_config

    space = _space()
    proposer = PatternGuidedProposer(space)
    monkeypatch.setattr(proposer, "_aggregate_patterns", lambda key, ctx: [])
    tuned = class_config(case_shape(TASK.case("mixed-batch")).problem()).to_dict()
    assert tuned["gather_ahead"] == AHEAD_DERIVED and tuned["ahead_sync"] is True
    centre = {**tuned, "gather_ahead": 0, "ahead_sync": False}
    assert not space.feasible({**centre, "ahead_sync": True}, "compute-d128")
    ctx = SimpleNamespace(best_id="v1", best_table={"compute-d128": centre})
    configs = [c[0] for c in proposer._class_candidates("compute-d128", ctx, [])]  # type: ignore[arg-type]
    assert tuned in configs
