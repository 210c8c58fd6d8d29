"""Bilingual datasheets: of a statement written twice, "German text / English text", the rules read the English one.

A datasheet written in two languages puts each statement in both, side by side: ``Scratch-SRAM je Recheneinheit:
128 KiB / Scratch SRAM per compute engine: 128 KiB``, a header ``Recheneinheiten / Compute engines``, a cell
``1,65 GHz / 1.65 GHz``. The field rules and the embedding model (all-MiniLM-L6-v2, trained on English) read English;
the other half only adds noise (``1.024`` is 1,024 in German and 1.024 in English).

Rule (`english_halves`), for the two halves of a ``" / "`` at the top level of a line, a table cell or a heading
(parentheses read first, inside out):

- the halves *state the same figures* when the digit strings of their numbers are the same, in the same order
  (``1.024`` and ``1,024``, ``1,65 GHz`` and ``1.65 GHz``); halves with different figures are two statements
  ("Read / write bandwidth: 1.6 / 0.8 TB/s") and stay as they are;
- the *English half* is the one the embedding model's own WordPiece vocabulary knows better: its words split into
  fewer pieces (`pieces_per_word`; English words are mostly whole tokens, ``Recheneinheiten`` is 5 pieces). It
  must be ahead by `MIN_PIECE_MARGIN` pieces per word.
- A document's *language order* is the side (left or right) that the English half takes in its figure-stating
  translation pairs, when at least `MIN_ORDER_VOTES` pairs agree and no more than a quarter disagree. With an
  order, a pair without figures (a header, a heading) is a translation when its English half is on that side and
  ahead by the margin, and two halves stating the same figures in one language (``1,65 GHz / 1.65 GHz``) keep the
  side of that order.

The other half and the ``" / "`` are blanked (replaced by spaces), so every character of the kept text stays at
its place: spans of the rewritten text are spans of the document (quotes stay verbatim, as with
`ingest.decimal_marks.to_point_decimals`). Without the tokenizer file the text is left as written.

Source: the WordPiece vocabulary of the onboarding model (`knowledge.embedder.configured_model`, ``tokenizer.json``;
Wu et al., "Google's Neural Machine Translation System", 2016, for WordPiece); the pairing of translations by
their shared figures is the layout of bilingual datasheets (e.g. German/English Datenblatt, Japanese/English).
"""

from __future__ import annotations

import dataclasses
import re
from functools import lru_cache
from pathlib import Path

from knowledge.types import Chunk

#: How many more WordPiece pieces per word the other half must take than the English half.
MIN_PIECE_MARGIN = 0.5
#: Figure-stating translation pairs needed before a document's language order is taken.
MIN_ORDER_VOTES = 2

_WORDS = re.compile(r"[^\W\d_]+")
_DIGITS = re.compile(r"\d+(?:[.,\u202f']\d+)*")
_SEP = " / "
#: A list item's marker at the start of a line (kept: it makes the line a list item).
_LIST_MARKER = re.compile(r"\s*(?:[-*+\u2022]|\d{1,2}[.)])\s+")


@lru_cache(maxsize=1)
def _tokenizer():
    """The onboarding model's fast tokenizer without padding, or None when its ``tokenizer.json`` is not found."""
    try:
        from tokenizers import Tokenizer

        from knowledge.embedder import configured_model

        path = Path(configured_model()) / "tokenizer.json"
        if not path.is_file():
            return None
        tokenizer = Tokenizer.from_file(str(path))
    except Exception:  # noqa: BLE001 - no tokenizer: bilingual text is left as written
        return None
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


@lru_cache(maxsize=4096)
def pieces_per_word(text: str) -> float | None:
    """Mean WordPiece pieces per word (runs of letters) of `text`; None without words or tokenizer. An English
    plural counts as its singular when that is fewer pieces (``Combs`` is ``comb ##s``, ``Comb`` one piece): the
    vocabulary holds the singular of most nouns, not the plural."""
    words = _WORDS.findall(text)
    tokenizer = _tokenizer()
    if not words or tokenizer is None:
        return None
    stems = [w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words]
    encoded = tokenizer.encode_batch(words, add_special_tokens=False)
    bare = tokenizer.encode_batch(stems, add_special_tokens=False)
    return sum(min(len(e.tokens), len(b.tokens)) for e, b in zip(encoded, bare)) / len(words)


def figures(text: str) -> tuple[str, ...]:
    """The digit strings of `text`'s numbers, marks dropped (``1.024`` and ``1,024`` are both ``1024``)."""
    return tuple(re.sub(r"\D", "", m.group(0)) for m in _DIGITS.finditer(text))


def _top_level_split(text: str) -> list[tuple[int, int]]:
    """Spans of the parts of `text` between the ``" / "`` outside parentheses."""
    spans, depth, start, i = [], 0, 0, 0
    while i < len(text):
        ch = text[i]
        depth += ch in "([{"
        depth -= ch in ")]}" and depth > 0
        if depth == 0 and text.startswith(_SEP, i):
            spans.append((start, i))
            start = i = i + len(_SEP)
            continue
        i += 1
    spans.append((start, len(text)))
    return spans


def _english_side(left: str, right: str) -> str | None:
    """"left" or "right": the half the model's vocabulary knows better by `MIN_PIECE_MARGIN`; else None."""
    a, b = pieces_per_word(left), pieces_per_word(right)
    if a is None or b is None:
        return None
    if b + MIN_PIECE_MARGIN <= a:
        return "right"
    if a + MIN_PIECE_MARGIN <= b:
        return "left"
    return None


def _pair_choice(left: str, right: str, order: str | None) -> tuple[str | None, bool]:
    """(side to keep or None, whether the pair is a figure-stating translation that votes for the order)."""
    figs_left, figs_right = figures(left), figures(right)
    side = _english_side(left, right)
    if figs_left or figs_right:
        if figs_left != figs_right:
            return None, False
        if side is not None:
            return side, True
        return order, False  # one figure written twice in one language
    if order is not None and side == order:
        return side, False
    return None, False


def _rewrite_segment(text: str, order: str | None, votes: list[str]) -> str:
    """`text` (one line, cell or heading) with the non-English half of each translation pair blanked; inner
    parentheses first. Sides of figure-stating translation pairs are appended to `votes`."""
    out = list(text)
    for match in re.finditer(r"\(([^()]*)\)", text):
        inner = _rewrite_segment(match.group(1), order, votes)
        out[match.start(1):match.end(1)] = inner
    text = "".join(out)
    spans = _top_level_split(text)
    if len(spans) != 2:
        return text
    (a0, a1), (b0, b1) = spans
    side, vote = _pair_choice(text[a0:a1], text[b0:b1], order)
    if vote and side:
        votes.append(side)
    if side == "right":
        return " " * b0 + text[b0:]
    if side == "left":
        return text[:a1] + " " * (len(text) - a1)
    return text


def _segments(text: str, table_row: bool) -> list[tuple[int, int]]:
    """Spans of the lines of `text` (past a list marker); for a rendered table row (``Header: value | Header:
    value``) each cell's header and value separately."""
    spans: list[tuple[int, int]] = []
    for line in re.finditer(r"[^\n]+", text):
        if not table_row:
            marker = _LIST_MARKER.match(line.group(0))
            spans.append((line.start() + (marker.end() if marker else 0), line.end()))
            continue
        base = line.start()
        for cell in re.finditer(r"[^|]+", line.group(0)):
            c0, c1 = base + cell.start(), base + cell.end()
            colon = text.find(": ", c0, c1)
            spans.extend([(c0, colon), (colon + 1, c1)] if colon >= 0 else [(c0, c1)])
    return spans


def rewrite(text: str, table_row: bool, order: str | None, votes: list[str] | None = None) -> str:
    """`text` with the non-English half of each translation pair blanked (same length; module docstring)."""
    if _SEP not in text:
        return text
    votes = [] if votes is None else votes
    out = list(text)
    for start, end in _segments(text, table_row):
        out[start:end] = _rewrite_segment(text[start:end], order, votes)
    return "".join(out)


def language_order(texts: list[tuple[str, bool]]) -> str | None:
    """The side ("left" or "right") that English takes in one document's translation pairs, from its texts
    (text, is a rendered table row); None when fewer than `MIN_ORDER_VOTES` pairs agree or over a quarter
    disagree."""
    votes: list[str] = []
    for text, table_row in texts:
        rewrite(text, table_row, None, votes)
    for side in ("left", "right"):
        agree = votes.count(side)
        if agree >= MIN_ORDER_VOTES and 4 * (len(votes) - agree) <= len(votes):
            return side
    return None


def english_chunks(merged: list[tuple[Chunk, tuple[Chunk, ...]]]) -> list[tuple[Chunk, tuple[Chunk, ...]]]:
    """The merged chunks of `ingest.profile_extract` with each document's translation pairs read in English:
    text and section rewritten by `rewrite` under the document's `language_order` (the original windows, which
    quotes are taken from, stay as written)."""
    orders: dict[str, str | None] = {}
    for source in {c.source for c, _ in merged}:
        mine = [(c.text, c.kind == "table_row") for c, _ in merged if c.source == source]
        mine += [(c.section, False) for c, _ in merged if c.source == source and c.section]
        orders[source] = language_order(mine)
    out = []
    for chunk, originals in merged:
        order = orders[chunk.source]
        text = rewrite(chunk.text, chunk.kind == "table_row", order)
        section = " > ".join(" ".join(rewrite(part, False, order).split()) for part in chunk.section.split(" > ")) \
            if chunk.section and _SEP in chunk.section else chunk.section
        changed = text != chunk.text or section != chunk.section
        out.append((dataclasses.replace(chunk, text=text, section=section) if changed else chunk, originals))
    return out
