"""Product model names with SKU suffixes, and a predecessor's figures in parentheses after its name (fictional
chips; values by hand)."""

from __future__ import annotations

import pytest

from ingest.profile_extract import extract_profile
from ingest.profile_text import chip_tokens, clauses, product_scope, products_in
from knowledge.types import Chunk


@pytest.mark.parametrize("text, tokens", [
    ("the Rho R4-96 board", ["r496"]), ("Tessel T3-XL", ["t3xl"]), ("P8-112", ["p8112"]), ("ZX-40", ["zx40"]),
    ("FP8-E4M3 inputs", []), ("HBM3-8 stacks", []), ("as cited in MI300-11", []), ("a Level-2 cache", []),
])
def test_model_tokens(text, tokens):
    assert products_in(text) == tokens


def test_a_sku_suffix_names_another_product_than_the_base_model():
    tokens = chip_tokens("rho_r4")
    assert product_scope(["Rho R4-LP card"], tokens) == "other"
    assert product_scope(["Rho R4"], tokens) == "chip"
    assert product_scope(["Rho R4-96"], chip_tokens("R4-96")) == "chip"


def test_a_predecessors_figures_in_parentheses_are_a_clause_of_their_own():
    assert clauses("The Rho R4 succeeds the Rho R2 (24 compute units, 8 MB of L2 cache).") == [
        "The Rho R4 succeeds the Rho R2", "R2 (24 compute units, 8 MB of L2 cache)"]
    whole = "The Rho R4 (a PCIe card) has 40 compute units."
    assert clauses(whole) == [whole]  # the chip's own parenthetical stays in its clause


def test_the_predecessors_parenthetical_gives_no_candidate():
    """40 compute units and 16 MB of L2 are the R4's; the R2's 24 and 8 MB in the parenthetical are not."""
    text = ("The Rho R4 has 40 compute units and 16 MB of L2 cache. "
            "The Rho R4 succeeds the Rho R2 (24 compute units, 8 MB of L2 cache).")
    chunk = Chunk(id="a", text=text, chip="rho_r4", source="r4.md", page=None, section="Rho R4 > Overview",
                  kind="prose", metadata={})
    profile = extract_profile("rho_r4", [chunk])
    assert (profile.num_compute_units.kind, profile.num_compute_units.value) == ("stated", 40)
    assert (profile.l2_cache_mb.kind, profile.l2_cache_mb.value) == ("stated", 16)
