"""Section-aware chunking: sections -> retrievable `Chunk`s with provenance and deterministic ids.

Rules (format-independent):
- A chunk never crosses a heading or a PDF page: consecutive sections with the same heading path, page and kind
  are merged, then cut into windows.
- Table rows stay one chunk each (a loader already wrote the header row and caption into each row's text).
- Prose is cut at sentence or list-item boundaries into windows of at most `max_chars` characters; consecutive
  windows overlap by up to `overlap_chars` characters of whole sentences, so a fact near a window edge is whole
  in at least one window. A single sentence longer than `max_chars` is cut at word boundaries.
- Each chunk's metadata carries ``context``: the document's name and heading path, which the store prepends to
  the text that is embedded and keyword-indexed (the shown text stays the chunk text).
- ``id`` = sha256(chip, source, page, section, text)[:32], with an occurrence number mixed in for identical
  repeats, so re-chunking the same file gives the same ids and an edit changes only the ids of edited chunks.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ingest.loaders.common import title_from_path
from knowledge.types import Chunk, Section

CHUNKER_VERSION = "3"
_SENTENCE_END = re.compile(r"(?<=[.!?:;])\s+(?=[A-Z0-9(\[\"'•*-])")


@dataclass(frozen=True)
class ChunkingOptions:
    """Window sizes for prose, in characters.

    all-MiniLM-L6-v2 was trained on inputs of at most 128 word pieces (about 500 characters of English); a 400-char
    window plus its context line stays within that, so the whole window shapes its embedding. On the dev questions
    windows of 300-400 characters measured the same hit@5 (1.0) and 600 lower (0.8); see BENCHMARKS.md.
    """

    max_chars: int = 400
    overlap_chars: int = 130


#: Chunk metadata key of a table row's caption ("" for none): a row rendered ``"Execution engines | K1: 16"`` starts
#: with its unnamed first column, not with a caption, when this is "".
TABLE_CAPTION = "table_caption"


def rendered_row_parts(chunk: Chunk, is_product: Callable[[str], bool] | None = None) -> tuple[str | None, list[str]]:
    """(caption, cells) of a ``table_row`` chunk rendered ``"<caption> | H: v | v"``: the caption as the chunk
    records it (`TABLE_CAPTION`; "" for none) and the cell parts after it, or (None, every part) when the caller
    decides: a chunk stored before captions were recorded, or an unnamed first column whose row is not one of
    products side by side (`is_product(header)` false for a header of the row: "| | RISCV B | RISCV T0 |" names
    parts of a unit, whose figures are no chip figure either way).
    """
    known = chunk.metadata.get(TABLE_CAPTION)
    parts = [p.strip() for p in chunk.text.split(" | ")]
    if known == "" and is_product is not None and parts and ": " not in parts[0]:
        headers = [p.partition(": ")[0] for p in parts[1:] if ": " in p]
        if not headers or not all(is_product(h) for h in headers):
            return None, parts
    if known is None:
        return None, parts
    known = str(known)
    # the caption's own parts come first (the text may have been rewritten since: decimal marks, number words)
    return known, parts[known.count(" | ") + 1:] if known else parts


def chunk_sections(sections: Sequence[Section], chip: str, *, title: str = "",
                   metadata: dict[str, str | int | float] | None = None,
                   options: ChunkingOptions | None = None) -> list[Chunk]:
    """Cut a document's sections (reading order) into chunks for `chip`.

    Args:
        sections: the loader's sections of one document.
        chip: chip name stored with every chunk.
        title: document title (used in the context line when it adds words the file name lacks).
        metadata: extra fields stored with every chunk (e.g. ``file_sha256``).
        options: window sizes.

    Returns:
        Chunks in reading order with unique, deterministic ids.
    """
    options = options or ChunkingOptions()
    chunks: list[Chunk] = []
    seen: dict[str, int] = {}
    for group in _groups(sections):
        first = group[0]
        texts = [s.text for s in group] if first.kind == "table_row" else _windows(
            [s.text for s in group], options)
        section = " > ".join(h for h in first.heading_path if h)
        for text in texts:
            base = _digest(chip, first.source, first.page, section, text)
            n = seen.get(base, 0)
            seen[base] = n + 1
            chunk_id = base if n == 0 else _digest(chip, first.source, first.page, section, text, str(n))
            meta = dict(metadata or {})
            meta.update(context=_context(first, title), chunk_index=len(chunks), chunker=CHUNKER_VERSION)
            if first.kind == "table_row":
                meta[TABLE_CAPTION] = first.caption  # so a reader tells the caption from an unnamed first column
            chunks.append(Chunk(id=chunk_id, text=text, chip=chip, source=first.source, page=first.page,
                                section=section, kind=first.kind, metadata=meta))
    return chunks


def _groups(sections: Iterable[Section]) -> list[list[Section]]:
    groups: list[list[Section]] = []
    for sec in sections:
        if not sec.text.strip():
            continue
        key = (sec.source, sec.page, sec.heading_path, sec.kind)
        prev = groups[-1][0] if groups else None
        if prev is not None and sec.kind != "table_row" and key == (prev.source, prev.page, prev.heading_path,
                                                                      prev.kind):
            groups[-1].append(sec)
        else:
            groups.append([sec])
    return groups


def _units(paragraphs: Sequence[str], max_chars: int) -> list[str]:
    """Sentences (and list items) of the paragraphs; pieces longer than `max_chars` cut at word boundaries.

    The first sentence of a paragraph that follows a list item keeps a leading newline (see `_join`)."""
    units: list[str] = []
    item = unended = False  # the previous paragraph was a list item / a line without a sentence end
    for para in paragraphs:
        after_item, item = item and not para.startswith("- "), para.startswith("- ")
        after_unended, unended = unended and not item, not item and _UNENDED.search(para) is not None
        for line in para.split("\n"):
            for sentence in _SENTENCE_END.split(line.strip()):
                sentence = sentence.strip()
                while len(sentence) > max_chars:
                    cut = sentence.rfind(" ", 0, max_chars)
                    cut = cut if cut > max_chars // 2 else max_chars
                    units.append(sentence[:cut].strip())
                    sentence = sentence[cut:].strip()
                if sentence:
                    units.append(("\n\n" if after_unended else "\n" if after_item else "") + sentence)
                    after_item = after_unended = False
    return units


#: A short label line that ends without sentence punctuation ("INT8 (dense): 147.5 TOPS"), kept a paragraph
#: of its own (a blank line after it) so that the next paragraph's label does not read as its value's data type.
_UNENDED = re.compile(r"^[^.!?;:\n]{1,60}:\s+[^\n]{1,60}[^.!?;:\s]\s*$")


def _join(units: Sequence[str]) -> str:
    """Units joined by spaces, except that a list item (``- ...``) starts a line of its own, so an item's end stays
    visible to every reader of the chunk (a ``Name: X2`` item does not run on into the next item's label), and so
    does a paragraph after a list item (marked by `_units` with a leading newline): the last item's statement does
    not run on into the paragraph's ("...: 940 TFLOPS" then "The predecessor had ...")."""
    out = ""
    for unit in units:
        text = unit.lstrip("\n")
        glue = "\n\n" if unit.startswith("\n\n") else "\n" if unit.startswith(("- ", "\n")) else " "
        out += text if not out else glue + text
    return out


def _windows(paragraphs: Sequence[str], options: ChunkingOptions) -> list[str]:
    """Greedy windows of whole units, each at most `max_chars`, overlapping by up to `overlap_chars`."""
    units = _units(paragraphs, options.max_chars)
    windows: list[str] = []
    start = 0
    while start < len(units):
        end, size = start, 0
        while end < len(units) and (end == start or size + 1 + len(units[end]) <= options.max_chars):
            size += len(units[end]) + (1 if end > start else 0)
            end += 1
        windows.append(_join(units[start:end]))
        if end >= len(units):
            break
        back, overlap = end, 0
        while back - 1 > start and overlap + len(units[back - 1]) <= options.overlap_chars:
            back -= 1
            overlap += len(units[back]) + 1
        start = back
    return windows


def _context(section: Section, title: str) -> str:
    """``file words > heading > sub-heading`` (the title is added when the file name does not already say it)."""
    parts = [title_from_path(section.source)]
    if title and title.lower() not in parts[0].lower() and (not section.heading_path
                                                             or title != section.heading_path[0]):
        parts.append(title)
    for heading in section.heading_path:
        if heading and heading not in parts:
            parts.append(heading)
    return " > ".join(parts)


def _digest(*parts: object) -> str:
    raw = "\x1f".join("" if p is None else str(p) for p in parts)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:32]
