"""Spelled-out cardinals read as digits, and citations mapped back to the document's words."""

from ingest.number_words import digits_for_number_words, verbatim_span
from ingest.units import find_quantities


def _digits(text: str) -> str:
    return digits_for_number_words(text)[0]


def test_compound_cardinals_become_digits():
    assert _digits("a ring of thirty-six nodes") == "a ring of 36 nodes"
    assert _digits("three hundred and seven ports") == "307 ports"
    assert _digits("nine hundred forty two banks") == "942 banks"
    assert _digits("four thousand and ninety-six entries") == "4096 entries"
    assert _digits("eleven thousand two hundred slots") == "11200 slots"
    assert _digits("clocked at two point six five gigahertz") == "clocked at 2.65 gigahertz"


def test_words_that_quantify_nothing_or_are_articles_stay():
    assert _digits("one of the rings") == "one of the rings"
    assert _digits("one queue per ring") == "one queue per ring"
    assert _digits("a count of seventeen.") == "a count of seventeen."
    assert _digits("hundred and") == "hundred and"


def test_spelled_figures_reach_the_unit_reader():
    text = _digits("each node carries three hundred and twenty kibibytes of buffer at one point one gigahertz")
    found = {q.dimension: q.value for q in find_quantities(text)}
    assert found["bytes"] == 320 * 1024
    assert found["hz"] == 1.1e9


def test_quote_maps_back_to_the_documents_words():
    original = "The mesh has  forty-eight\nnodes, and ninety point five gigabytes per second of links."
    normalised = _digits(" ".join(original.split()))
    assert "48 nodes" in normalised and "90.5 gigabytes" in normalised
    assert verbatim_span("has 48 nodes, and 90.5 gigabytes", original) == \
        "has forty-eight nodes, and ninety point five gigabytes"
    assert verbatim_span("has 49 nodes", original) is None


SPELLED_MD = """# The QV-9 in brief

## Memory

The QV-9 carries thirty-two gigabytes of device memory. Its L2 cache holds twelve mebibytes.

## Clock

Its cores run at two point two gigahertz.
"""


def test_profile_reads_figures_written_in_words_and_quotes_the_words(tmp_path):
    from ingest.chunker import chunk_sections
    from ingest.loaders import load_document
    from ingest.profile_extract import extract_profile

    path = tmp_path / "qv9-brief.md"
    path.write_text(SPELLED_MD)
    doc = load_document(path)
    profile = extract_profile("qv9", chunk_sections(doc.sections, "qv9", title=doc.title, metadata={}))
    assert profile.mem_capacity_gb.value * 2**30 == 32e9
    assert profile.l2_cache_mb.value == 12
    assert profile.clock_mhz.value == 2200
    quote = profile.clock_mhz.source.quote
    assert "two point two gigahertz" in quote and quote in " ".join(SPELLED_MD.split())


def test_a_definition_items_opening_count_stays_as_written():
    text = "- **Ring**: eight nodes and a switch.\n- Links: the ring has twelve links in all."
    assert _digits(text) == "- **Ring**: eight nodes and a switch.\n- Links: the ring has 12 links in all."
