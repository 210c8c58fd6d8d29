"""Count questions and the passages that state a count (knowledge.answer_type), on hand-written sentences."""

import pytest

from knowledge.answer_type import asked_count_term, states_count
from knowledge.retrieval import tokenize


@pytest.mark.parametrize("question, term", [
    ("How many lattice cells does the Orvel O3 have?", ["lattice", "cell"]),
    ("how many vector cores are there", ["vector", "core"]),
    ("Number of compute tiles in the E2", ["compute", "tile"]),
    ("How many SMs?", ["sms"]),
    ("How many PE arrays per die?", ["pe", "array"]),
    ("What is the warp size of the Z9?", None),
    ("memory bandwidth of the Orvel O3", None),
])
def test_asked_count_term(question, term):
    assert asked_count_term(question, tokenize) == term


QUESTION = set(tokenize("How many lattice cells does the Orvel O3 have?"))
TERM = ["lattice", "cell"]


@pytest.mark.parametrize("text, kind, expected", [
    ("The Orvel O3 is built from 40 lattice cells.", "prose", True),        # number right before
    ("It carries 40 enabled lattice cells.", "prose", True),                # one word between
    ("Lattice cells: 40", "prose", True),                                   # right after
    ("Resource: Lattice cells / Orvel O3: 40", "table_row", True),          # a row's value cell
    ("Resource: Lattice cells / Orvel O2 / Orvel O3: 40", "table_row", False),  # 5 tokens after the label
    ("Each lattice cell holds 256 lanes and 96 KB of SRAM.", "prose", False),   # a per-cell quantity
    ("There are 4 MB of SRAM per lattice cell.", "prose", False),           # a size, not a count
    ("The Orvel O3 lattice cells run at 1.4 GHz.", "prose", False),         # the 3 of O3 is the question's
    ("Lattice cells share one ring network.", "prose", False),              # no number at all
])
def test_states_count(text, kind, expected):
    assert states_count(text, kind, TERM, QUESTION, tokenize) is expected
