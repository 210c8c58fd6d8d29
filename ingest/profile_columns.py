"""Which column of a table with several value columns is the onboarded chip's: products and configurations.

A datasheet may tabulate several products side by side ("Model S2 | Model S3 | Model S3 Max") or several
configurations of one product ("Standard | Extended" memory options, "24 GB board | 12 GB OEM board"). A row then
gives several values for one field, which is not a conflict of sources: one column is the chip's. The column is
chosen, in this order:

1. the column whose header *is* the product being onboarded (``--product``, else the chip name), word for word;
   a header that adds words to it ("S3 Max") names another product of the family;
2. the column whose header shares the most words with what the document says it describes ("This datasheet
   describes the Standard memory option", "Figures elsewhere in this brief are for the 24 GB configuration",
   "The figures in this paper are for the board as shipped"), less one half per header word the statement lacks.

A column is chosen only when one header scores strictly best; otherwise the values stay (a conflict is shown, as
before). Only the cells of one row (same document, row label and field) are compared, so a row whose columns
agree is not touched. Rule source: issue 18 ("When a table or a sentence is about several products, take the
values of the chip being onboarded").
"""

from __future__ import annotations

import re
from collections import defaultdict

from ingest.profile_candidate import Candidate

#: Sentences that say which product or configuration a document's figures are for.
_DESCRIBES = re.compile(
    r"\b(?:this|the)\s+(?:brief|datasheet|data sheet|document|sheet|paper|guide|manual|specification)\s+"
    r"(?:describes|covers|documents|is about|applies to)\s+([^.;]{2,120})"
    r"|\b(?:figures|values|numbers|specifications)\s+(?:elsewhere\s+)?(?:in\s+this\s+\w+\s+)?(?:are|is)\s+"
    r"(?:for|of|at)\s+([^.;]{2,120})",
    re.IGNORECASE)
_WORD = re.compile(r"[a-z0-9]+")
_FILLER = frozenset("the a an its in of for this that is are at".split())


def described_phrases(texts: list[str]) -> list[str]:
    """The phrases after "this datasheet describes ..." / "figures ... are for ..." in `texts`."""
    out: list[str] = []
    for text in texts:
        for match in _DESCRIBES.finditer(" ".join(text.split())):
            out.append(match.group(1) or match.group(2))
    return out


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _FILLER}


def header_score(header: str, product: str, described: list[str]) -> float:
    """How well a column header names the onboarded product or the described configuration (higher is better)."""
    head = _words(header)
    if not head:
        return 0.0
    if product and head == _words(product):
        return 100.0
    best = 0.0
    for phrase in described:
        said = _words(phrase)
        best = max(best, len(head & said) - 0.5 * len(head - said))
    return best


def choose_columns(candidates: list[Candidate], product: str, described: list[str]) -> list[Candidate]:
    """`candidates` without the cells of the columns that a better-matching column of the same row overrules.

    Args:
        candidates: every field candidate of the documents.
        product: the onboarded product's name as the documents write it (``--product``), else the chip name with
            spaces for underscores; may be empty.
        described: `described_phrases` of the documents.
    """
    rows: dict[tuple, list[Candidate]] = defaultdict(list)
    for cand in candidates:
        record = cand.record
        if record.is_table and record.header and record.label:
            rows[(record.chunk.source, " ".join(record.label.split()).lower(), cand.field)].append(cand)
    dropped: set[int] = set()
    for cells in rows.values():
        headers = {c.record.header for c in cells}
        if len(headers) < 2 or len({round(c.value, 6) for c in cells}) < 2:
            continue
        scores = {h: header_score(h, product, described) for h in headers}
        best = max(scores.values())
        winners = [h for h, s in scores.items() if s == best]
        if best <= 0 or len(winners) != 1:
            continue
        dropped.update(id(c) for c in cells if c.record.header != winners[0])
    return [c for c in candidates if id(c) not in dropped]
