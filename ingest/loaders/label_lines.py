"""Label/value lines of plain text in any of the usual separators, with indentation as scope.

Device-query tools and plain-text spec sheets print one property per line: ``Max compute units ......... 48``
(dot leaders), ``Compute Unit:            304`` or ``Product Name      : Arda X2`` (a colon, spaced or not),
``clock_mhz = 1500`` (an equals sign), ``Max work group size        1024`` (a run of spaces or a tab before a value
that starts with a digit). A line that ends in its label alone (``Memory:``, ``[Device 0]``, ``Pool 1``) followed by
more-indented lines opens a scope for them: a tool's nested sub-blocks (per device, per pool, per agent).

`key_value_block` reads a block whose lines are mostly such lines (`MIN_SHARE`) into (scope path, label, value)
entries; a block with fewer than `MIN_LINES` of them is not one (a paragraph, a fixed-width table with a header).
Source: the output conventions of ``clinfo``, ``rocminfo``, ``nvidia-smi -q`` and ``lscpu`` (label, separator,
value; sub-blocks by indentation), and of INI-like ``key = value`` lines; no vendor's words are fixed here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Separators between a label and its value, tried in this order.
_SEPARATED = (
    re.compile(r"^(?P<k>[^\s.][^\n]*?[^\s.])\s*(?:\.\s*){3,}:?\s*(?P<v>\S.*?)\s*$"),  # dot leaders
    re.compile(r"^(?P<k>[A-Za-z(\[][^:=\n]*?)\s*:\s+(?P<v>\S.*?)\s*$"),  # colon
    re.compile(r"^(?P<k>[A-Za-z][\w .()/\-]*?)\s*=\s*(?P<v>\S.*?)\s*$"),  # equals sign
    # a gap before the one value of the line (a further gap makes it a row of a fixed-width table)
    re.compile(r"^(?P<k>[A-Za-z](?:(?!\t|\s{2}).)*?\S)(?:\t+|\s{2,})(?P<v>(?!.*(?:\t|\s{2,})\S)\S.*)$"),
)
#: A scope line: a label alone, optionally ending in a colon or bracketed (``Memory:``, ``[Device 0]``).
_SCOPE = re.compile(r"^(?:\[(?P<b>[^\]\n]{1,60})\]|(?P<k>[A-Za-z][^:=\n]{0,60}?)\s*:?)\s*$")
#: A rule under a fixed-width table's header: runs of dashes or equals signs separated by spaces.
COLUMN_RULE = re.compile(r"^\s*[-=]{3,}(?:\s+[-=]{3,})+\s*$")
#: Most words of a label; a longer run is a sentence.
MAX_LABEL_WORDS = 8
#: Label/value lines a block needs, and their share of its lines.
MIN_LINES = 3
MIN_SHARE = 0.6


@dataclass(frozen=True)
class Entry:
    """One label/value line: the scopes it sits under (outermost first), its label and its value, verbatim."""

    scope: tuple[str, ...]
    label: str
    value: str


def split_line(line: str) -> tuple[str, str] | None:
    """(label, value) of one label/value line, else None (a sentence, a label alone, a heading)."""
    text = line.strip()
    for pattern in _SEPARATED:
        match = pattern.match(text)
        if match and _label_like(match.group("k")):
            return " ".join(match.group("k").split()), " ".join(match.group("v").split())
    return None


def key_value_block(lines: list[str]) -> tuple[list[Entry], list[str]] | None:
    """The entries of a block of label/value lines and its other lines, or None when it is not such a block.

    A scope line opens a scope for the lines indented deeper than it; a line at its indentation or shallower
    closes it. Lines that are neither stay in the second list (prose)."""
    if any(COLUMN_RULE.match(line) for line in lines):
        return None  # a fixed-width table under its header rule
    if sum(1 for line in lines if split_line(line)) < max(MIN_LINES, MIN_SHARE * len(lines)):
        return None
    entries: list[Entry] = []
    rest: list[str] = []
    open_scopes: list[tuple[int, str]] = []  # (indentation, scope), outermost first
    for line in lines:
        indent = len(line) - len(line.lstrip())
        while open_scopes and open_scopes[-1][0] >= indent:
            open_scopes.pop()
        pair = split_line(line)
        scope = _SCOPE.match(line.strip()) if pair is None else None
        if pair is not None:
            entries.append(Entry(tuple(s for _, s in open_scopes), *pair))
        elif scope is not None and len((scope.group("b") or scope.group("k") or "").split()) <= MAX_LABEL_WORDS:
            open_scopes.append((indent, " ".join((scope.group("b") or scope.group("k")).split())))
        else:
            rest.append(line)
    return _named_scopes(entries), rest


#: A label that names the product a sub-block describes ("Name", "Device name", "Marketing Name", "Model").
_NAME_LABEL = re.compile(r"^(?:(?:device|product|marketing|board|card|chip|model)\s+)?(?:name|model)$", re.IGNORECASE)


def _named_scopes(entries: list[Entry]) -> list[Entry]:
    """Each scope that holds a name entry is renamed ``scope (name)`` for every entry under it, so that the
    product a tool's sub-block describes (``Device 1`` whose ``Name`` is another product) is in its path."""
    names = {e.scope: e.value for e in entries if e.scope and _NAME_LABEL.match(e.label)}
    if not names:
        return entries

    def renamed(scope: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(f"{part} ({names[scope[:i + 1]]})" if scope[:i + 1] in names else part
                     for i, part in enumerate(scope))

    return [Entry(renamed(e.scope), e.label, e.value) for e in entries]


#: Abbreviations a spec sheet's label may carry ("Max. core clock", "Typ. power"): their period ends no sentence.
_LABEL_ABBREVIATION = re.compile(r"\b(?:max|min|typ|nom|approx|no|num|avg|incl|excl|sust|int|ext)\.(?=\s)",
                                 re.IGNORECASE)


def _label_like(label: str) -> bool:
    words = label.split()
    sentence_end = re.search(r"[.!?]\s", _LABEL_ABBREVIATION.sub("", label))
    return 0 < len(words) <= MAX_LABEL_WORDS and not sentence_end and any(c.isalpha() for c in label)
