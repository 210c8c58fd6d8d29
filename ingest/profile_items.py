"""``key: value`` list items in prose (``- L2 cache: 32 MB``, ``* **L2 cache:** 32 MB``, ``1. L2 cache — 32 MB``), read
as table cells whose header is the key (`list_item_records`; cells are built by `ingest.profile_tables.cell_record`).
"""

from __future__ import annotations

import re

from ingest.profile_tables import cell_record
from ingest.profile_text import Record, locator_of, normalize_space
from knowledge.types import Chunk

_ITEM_MARK = r"(?:[-*+\u2022]|\d{1,2}[.)])\s+"
_ITEM_KEY = r"[^\s:|*_`][^:|\n\u2013\u2014]{0,58}?"
#: What ends an item's key: a colon (``L2 cache: 32 MB``) or a spaced em or en dash (``L2 cache — 32 MB``).
_ITEM_SEP = r"(?:\s*:|\s+[\u2013\u2014](?=\s))"
#: A list item that opens with ``key:`` (the key at most 60 characters, no ``|`` so table rows stay tables).
_ITEM_START = re.compile(rf"(?:^|(?<=\s)){_ITEM_MARK}(?=\**{_ITEM_KEY}\**{_ITEM_SEP}\**\s)", re.MULTILINE)
_ITEM = re.compile(rf"^{_ITEM_MARK}\**(?P<key>{_ITEM_KEY})\**{_ITEM_SEP}\**\s+(?P<value>\S.*)$", re.DOTALL)
_VALUE_END = re.compile(r"(?<=[^\s\d])[.;]\s+(?=[A-Z])")


def list_item_records(text: str, chunk: Chunk, tokens: set[str]) -> tuple[list[Record], str]:
    """Records of ``key: value`` list items in prose, and the prose with every list item on a line of its own.

    A list item is a bullet (``-``, ``*``, ``+``, ``•``) or a number (``1.``, ``2)``) followed by ``key: value``
    (``- Shared memory per block: 96 KB``, ``* **L2 cache:** 32 MB``). The first item of a list starts a line or
    follows the end of a sentence; further items follow on the same line (the chunker joins list items with
    spaces) or start their own lines. An item's value ends at the next item, the end of the line or the end of its
    first sentence. A simple value (one number, an optional unit and at most a few words; bracketed references and
    parentheticals aside) is read like a table cell whose header is the key, so a unit in the key (``LDS (KiB):
    64``) applies to a bare value; the item leaves the prose. Any other item (``Shared memory per block: 48 KB by
    default; up to 227 KB with the opt-in``) stays prose, as a paragraph of its own, for the sentence rules.
    """
    records: list[Record] = []
    pieces: list[str] = []
    position = 0
    for start, end in _item_spans(text):
        pieces.append(text[position:start])
        position = end
        item = text[start:end].strip()
        record, rest = _item_record(item, chunk, tokens)
        if record is None:
            pieces.append(f"\n{item}\n")
            continue
        records.append(record)
        pieces.append(f"\n{rest}\n" if rest else "\n")
    pieces.append(text[position:])
    return records, "".join(pieces)


_VALUE_NUMBER = re.compile(r"(?<![A-Za-z\d.,])\d[\d,]*(?:\.\d+)?")
_MAX_VALUE_WORDS = 4


def _item_record(item: str, chunk: Chunk, tokens: set[str]) -> tuple[Record | None, str]:
    """(cell record, the text after the value's first sentence) for a list item with a simple value, else
    (None, "")."""
    match = _ITEM.match(item)
    if not match or not re.search(r"[A-Za-z]", match.group("key")):
        return None, ""
    first, *rest = _VALUE_END.split(match.group("value"), maxsplit=1)
    value = normalize_space(first)
    if not _simple_value(value):
        return None, ""
    key = normalize_space(match.group("key"))
    quote = normalize_space(item)
    quote = quote[quote.index(key.split()[0]):]
    quote = quote[: quote.index(value) + len(value)] if value in quote else quote
    record = cell_record(key, "", value, "", chunk, tokens, locator_of(chunk, f"list item '{key}'"))
    record.quote = quote
    return record, rest[0].strip() if rest else ""


def _simple_value(value: str) -> bool:
    """True for one number, an optional unit and at most a few words (bracketed references and parentheticals
    aside): ``48 KB (shared)``, ``1,024 at most``."""
    bare = re.sub(r"\[[^\]]*\]|\([^()]*\)", " ", value).strip(" .,;")
    return len(_VALUE_NUMBER.findall(bare)) == 1 and len(bare.split()) <= _MAX_VALUE_WORDS


def _item_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each ``key:`` list item: from its marker to the next item on its line or the line end."""
    spans: list[tuple[int, int]] = []
    starts = [m.start() for m in _ITEM_START.finditer(text)]
    for i, start in enumerate(starts):
        line_start = text.rfind("\n", 0, start) + 1
        before = text[line_start:start].rstrip()
        chained = bool(spans) and spans[-1][1] == start
        if before and not chained and not re.search(r"[.!?:;]$", before):
            continue
        line_end = text.find("\n", start)
        line_end = len(text) if line_end < 0 else line_end
        nxt = starts[i + 1] if i + 1 < len(starts) and starts[i + 1] < line_end else line_end
        spans.append((start, nxt))
    return spans
