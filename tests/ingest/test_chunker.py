"""Chunking: windows within size with sentence overlap, one chunk per table row, deterministic unique ids."""

from ingest.chunker import ChunkingOptions, chunk_sections
from knowledge.types import Section


def _prose(text, path=("Doc", "Sec"), page=None):
    return Section(text=text, source="d.md", page=page, heading_path=path)


def test_prose_windows_respect_size_and_overlap():
    sentences = [f"Sentence number {i} states fact {i * 7} about the chip." for i in range(30)]
    chunks = chunk_sections([_prose(" ".join(sentences))], "z9", options=ChunkingOptions(200, 60))
    assert len(chunks) > 3
    assert all(len(c.text) <= 200 for c in chunks)
    for a, b in zip(chunks, chunks[1:]):
        assert a.text.split(". ")[-1].rstrip(".") in b.text  # last sentence of a window opens the next one
    covered = " ".join(c.text for c in chunks)
    assert all(s in covered for s in sentences)


def test_chunks_do_not_cross_headings_or_pages():
    secs = [_prose("Alpha one.", ("D", "A")), _prose("Alpha two.", ("D", "A")), _prose("Beta.", ("D", "B")),
            _prose("Page one.", ("D",), page=1), _prose("Page two.", ("D",), page=2)]
    chunks = chunk_sections(secs, "z9")
    assert [(c.section, c.page, c.text) for c in chunks] == [
        ("D > A", None, "Alpha one. Alpha two."), ("D > B", None, "Beta."), ("D", 1, "Page one."),
        ("D", 2, "Page two.")]


def test_table_rows_stay_single_chunks_and_repeats_get_distinct_ids():
    row = Section(text="T | Model: X | Cores: 4", source="t.rst", heading_path=("T",), kind="table_row")
    chunks = chunk_sections([row, row, _prose("Text.")], "z9")
    assert [c.kind for c in chunks] == ["table_row", "table_row", "prose"]
    assert chunks[0].text == chunks[1].text and chunks[0].id != chunks[1].id


def test_ids_are_deterministic_and_edits_change_only_edited_chunks():
    secs = [_prose("First fact.", ("D", "A")), _prose("Second fact.", ("D", "B"))]
    a = chunk_sections(secs, "z9")
    assert [c.id for c in a] == [c.id for c in chunk_sections(secs, "z9")]
    edited = chunk_sections([secs[0], _prose("Second fact, edited.", ("D", "B"))], "z9")
    assert a[0].id == edited[0].id and a[1].id != edited[1].id
    assert chunk_sections(secs, "other")[0].id != a[0].id


def test_metadata_and_context():
    chunks = chunk_sections([_prose("Text.", ("L1",))], "z9", title="L1", metadata={"file_sha256": "abc"})
    meta = chunks[0].metadata
    assert meta["file_sha256"] == "abc" and meta["chunk_index"] == 0
    assert meta["context"] == "d > L1"
    assert chunks[0].cite() == "d.md > L1"


def test_a_paragraph_after_a_list_item_starts_its_own_line():
    secs = [_prose("- Vector slices: 40"), _prose("- Packed INT8 (lattice): 310 TOPS"),
            _prose("The older KV-5 had 28 slices. It ran at 1.2 GHz."), _prose("A second paragraph follows.")]
    [chunk] = chunk_sections(secs, "z9")
    assert chunk.text.split("\n") == ["- Vector slices: 40", "- Packed INT8 (lattice): 310 TOPS",
                                      "The older KV-5 had 28 slices. It ran at 1.2 GHz. A second paragraph follows."]
