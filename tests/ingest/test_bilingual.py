"""Bilingual statements ("German / English") read in English (`ingest.bilingual`), written with other words and
another language pair than any datasheet set."""

from __future__ import annotations

import pytest

from ingest.bilingual import figures, language_order, pieces_per_word, rewrite

pytest.importorskip("tokenizers")


def test_figures_ignore_marks():
    assert figures("Takt 1,65 GHz, 2.048 Kerne") == ("165", "2048")
    assert figures("clock 1.65 GHz, 2,048 cores") == ("165", "2048")


def test_vocabulary_knows_english_better():
    assert pieces_per_word("Mémoire partagée par unité de calcul") > pieces_per_word("Shared memory per core") + 0.5


@pytest.mark.parametrize("text, kept", [
    ("- Mémoire locale par tuile : 192 Kio / Local memory per tile: 192 KiB", "Local memory per tile: 192 KiB"),
    ("Registerspeicher je Kachel: 64 KiB / Register storage per tile: 64 KiB", "Register storage per tile: 64 KiB"),
])
def test_translation_pair_keeps_english_half_in_place(text, kept):
    out = rewrite(text, table_row=False, order=None)
    assert len(out) == len(text)  # blanked, not cut: spans stay the document's
    assert " ".join(out.split()).lstrip("- ") == kept
    assert out.index(kept) == text.index(kept)


def test_different_figures_are_two_statements():
    text = "Read / write bandwidth: 1.6 / 0.8 TB/s"
    assert rewrite(text, table_row=False, order="right") == text


def test_same_language_slash_is_kept_without_order():
    assert rewrite("Local / shared memory: 64 KiB", table_row=False, order=None) == "Local / shared memory: 64 KiB"


def test_document_order_decides_headers_and_restated_figures():
    texts = [("Speicherbandbreite: 900 GB/s / Memory bandwidth: 900 GB/s", False),
             ("Zwischenspeicher: 8 MiB / Cache: 8 MiB", False)]
    assert language_order(texts) == "right"
    row = "Rechenkacheln / Compute tiles: 40 | Taktfrequenz / Clock: 1,2 GHz / 1.2 GHz"
    out = " ".join(rewrite(row, table_row=True, order="right").split())
    assert out == "Compute tiles: 40 | Clock: 1.2 GHz"
    assert language_order(texts[:1]) is None  # one pair is not yet an order
