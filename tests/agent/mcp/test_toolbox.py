"""The toolbox's own checks, in process and without a verification: bad input is one line naming it."""

import pytest

from agent.mcp.toolbox import Toolbox, verdict_view
from core.errors import BadInputError


def test_empty_store_and_bad_inputs(chiplore_home, tmp_path):
    box = Toolbox()
    with pytest.raises(BadInputError, match=r"store .* is empty; onboard a chip's documents first"):
        box.search_knowledge("shared memory per block")
    with pytest.raises(BadInputError, match="chip: empty"):
        box.get_profile(" ")
    with pytest.raises(BadInputError, match="is a directory"):
        box.run_verification("extend_attention", str(tmp_path), "h200")
    with pytest.raises(BadInputError, match="unknown task 'nope'"):
        box.rank_patterns("h200", "nope")
    with pytest.raises(BadInputError, match="more than 1048576 bytes"):
        box.submit_candidate("any-run", "x" * (2 << 20))
    with pytest.raises(BadInputError, match="not found"):
        box.run_status("no-such-run")


def test_verdict_view_keeps_the_reasons_and_drops_the_plan():
    verdict = {"stage": "mismatch", "reasons": ["case gqa-4: 12 of 5888 elements differ"], "flags": [],
               "config": {"plan": [{"case": "gqa-4", "seed": "0x1"}], "phase_seconds": {"correctness": 3.2}}}
    view = verdict_view(verdict)
    assert view == {"stage": "mismatch", "reasons": ["case gqa-4: 12 of 5888 elements differ"], "flags": [],
                    "phase_seconds": {"correctness": 3.2}}
