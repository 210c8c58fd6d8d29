"""Superseding statements: errata, revisions and corrections decide between values, they do not conflict.

A document may state a figure and later correct it: an errata sheet ("Where this list and the datasheet disagree,
this list is correct"), release notes whose newer revision restates an item, a sentence that gives the new figure
beside the old one ("now 1,800 MHz (was 1,900 MHz)", "The datasheet gives 3.6 TB/s ...; the correct figure is
3.35 TB/s"). Two such statements are one source corrected, not two independent sources in conflict (the sense of a
conflict in issue 18). The rules, by English syntax and document structure only (never a vendor's words):

1. *Old figures* (`is_old_figure`): a figure written as the value something had before or as what another text
   says is not a statement of the chip's value: right after "was", "were", "previously", "formerly",
   "originally", "used to be", "instead of", "rather than", "in place of", "not" ("not at the 450 MHz"); after
   "from" in a clause that
   says the value changed ("raised from 228 KiB", "lowered from ..."); after a document reported as saying it
   ("the datasheet gives", "an earlier version of this FAQ said", "revision 1.0 listed"); followed by words that
   say it is wrong ("96 KiB in Table 3 is a typo"); or followed by "of revision N" / "in version N" ("the 4.8 TB/s
   of revision 1.0"). Such figures give no candidate.
3. *Corrections* (`is_correcting_figure`): a figure given as the correct value in place of an old one of the same
   sentence ("Table 3 lists 96 KiB of scratch per engine; the correct value is 64 KiB") states what the old figure
   is about (its words and scope), and every statement of the old value for that field is superseded by it, in
   any document (`ingest.profile_resolve`).
2. *Precedence* (`Precedence`, `supersede`): a statement in an errata document (its title names errata,
   corrigenda or corrections) outranks every statement of the other documents; within one document that keeps a
   revision history (two or more section headings "Revision 1.2", "Rev. B", "Version 3"), a statement under a later
   revision outranks one under an earlier revision. Statements outside those structures are not ranked against
   each other. Within one document, a statement under a section heading that names errata or corrections ("9.
   Errata to version 2.0 of this guide") outranks the document's other statements. A candidate that an outranking
   candidate of the same field disagrees with is superseded: it is left
   out, and the report records both quotes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from knowledge.types import Chunk

_OLD_BEFORE = re.compile(
    r"(?:\b(?:was|were|previously|formerly|originally|used\s+to\s+be|instead\s+of|rather\s+than|in\s+place\s+of|"
    r"not)(?:\s+(?:at|set\s+at|listed\s+as|given\s+as|stated\s+as|quoted\s+as))?(?:\s+the)?\s*(?:up\s+to\s+)?)$",
    re.IGNORECASE)
_CHANGED = re.compile(r"\b(?:raised|lowered|increased|decreased|reduced|cut|changed|revised|corrected|updated|"
                      r"moved|grew|dropped|rose|fell|goes|went)\b", re.IGNORECASE)
_FROM_BEFORE = re.compile(r"\bfrom\s*$", re.IGNORECASE)
#: A text reported as giving a figure: "the datasheet gives", "an earlier version of this FAQ said", "revision 1.0
#: listed", "rev. A stated".
_REPORTED_BEFORE = re.compile(
    r"\b(?:data\s*sheet|document|manual|guide|brief|table|specification|spec|faq|notes?|entry|page|version|"
    r"edition|revision\s+[\w.]+|rev\.?\s*[\w.]+|release)\s+(?:\w+\s+){0,2}?(?:gives|gave|states|stated|says|said|"
    r"lists|listed|reads|read|shows|showed|quotes|quoted|printed|had|has|claimed|claims)\s+(?:[\w\-]+\s+){0,3}$",
    re.IGNORECASE)
#: Words after a figure that say it is wrong: "96 KiB (Table 3) is wrong", "the 1.9 GHz in section 2 is a typo".
_WRONG_AFTER = re.compile(r"^\s*(?:\([^()]{0,40}\)\s*)?(?:[\w\-.,]+\s+){0,5}?(?:is|was|are|were)\s+(?:wrong|incorrect|"
                          r"erroneous|in\s+error|a\s+(?:typo|misprint|mistake|printing\s+error))\b", re.IGNORECASE)
#: Words before a figure given as the correct one in place of another (English syntax of a correction).
_CORRECT_BEFORE = re.compile(r"\b(?:(?:the\s+)?(?:correct(?:ed)?|right|actual|true)\s+(?:value|figure|number|size|"
                             r"amount|count|rate|frequency|capacity)\s+(?:is|reads|should\s+be)|should\s+(?:read|be|say)"
                             r"|(?:is|are|was|were|has\s+been|have\s+been)\s+corrected\s+to|corrected\s+to)\s*:?\s*"
                             r"(?:up\s+to\s+)?$", re.IGNORECASE)
_REVISION_AFTER = re.compile(r"^\s*(?:of|in|from)\s+(?:the\s+)?(?:revision|rev\.?|version|edition)\s+[\w.]+",
                             re.IGNORECASE)
#: A predicate that withdraws what its subject states: "(the old table ...) no longer applies", "is obsolete".
_NO_LONGER = re.compile(r"\bno\s+longer\s+(?:applies|apply|holds?|valid|current|in\s+effect)\b|"
                        r"\b(?:is|are)\s+(?:now\s+)?(?:obsolete|withdrawn|out\s+of\s+date)\b", re.IGNORECASE)
_ERRATA_TITLE = re.compile(r"\b(?:errat(?:a|um)|corrigend(?:a|um)|corrections?|correction\s+notice)\b",
                           re.IGNORECASE)
_REVISION_HEADING = re.compile(r"^\s*(?:revision|rev\.?|version|edition|v)\s*(?P<r>\d+(?:\.\d+)*|[A-Z])\b",
                               re.IGNORECASE)


def is_old_figure(text: str, start: int, end: int, sentence: str = "") -> bool:
    """Whether the figure at ``text[start:end]`` (one clause or sentence) is written as an old or reported value
    (rule 1 of the module docstring), not as the chip's value.

    Args:
        text: the clause the figure is in.
        start, end: character offsets of the figure (number and unit) in `text`.
        sentence: the whole sentence, when `text` is one of its clauses: a figure before its predicate "no longer
            applies" ("Revision B's table (122.9 TOPS, ...) no longer applies") is old.
    """
    if sentence:
        no_longer = _NO_LONGER.search(sentence)
        at = sentence.find(text[start:end])
        if no_longer and 0 <= at < no_longer.start():
            return True
    before = text[max(0, start - 80):start]
    if _OLD_BEFORE.search(before) or _REPORTED_BEFORE.search(before):
        return True
    if _FROM_BEFORE.search(before) and _CHANGED.search(text[:start]):
        return True
    if _WRONG_AFTER.match(re.split(r"[;.]\s", text[end:end + 80], maxsplit=1)[0]):
        return True
    return bool(_REVISION_AFTER.match(text[end:end + 40]))


def is_correcting_figure(text: str, start: int) -> bool:
    """Whether the figure at ``text[start:]`` is given as the correct value in place of another ("...; the
    correct value is 64 KiB", "should read 1,650 MHz", "is corrected to 24 MiB")."""
    return bool(_CORRECT_BEFORE.search(text[max(0, start - 60):start]))


@dataclass(frozen=True)
class Precedence:
    """Rank of a statement (rule 2): `errata` (1 for an errata document), `document` (the document's family name)
    and `revision` (the revision it is stated under, as a comparable tuple; None outside a revision history)."""

    errata: int
    document: str
    revision: tuple | None
    errata_section: int = 0

    def outranks(self, other: Precedence) -> bool:
        """True when this statement supersedes `other` (errata over the other documents; an errata section over the
        rest of its document; a later revision of the same document over an earlier one)."""
        if self.errata != other.errata:
            return self.errata > other.errata and self.document != other.document
        if self.document == other.document and self.errata_section != other.errata_section:
            return self.errata_section > other.errata_section
        if self.document != other.document or self.revision is None or other.revision is None:
            return False
        return self.revision > other.revision


def _revision_key(text: str) -> tuple | None:
    match = _REVISION_HEADING.match(text)
    if not match:
        return None
    r = match.group("r")
    return tuple(int(p) for p in r.split(".")) if r[0].isdigit() else (ord(r.upper()) - ord("A"),)


def _revision_of(section: str) -> tuple | None:
    """The revision a section path (``"Title > Revision 1.2 (2026-08-04) > ..."``) is under (innermost wins)."""
    for heading in reversed(section.split(" > ")[1:] if " > " in section else []):
        key = _revision_key(heading)
        if key is not None:
            return key
    return None


def precedence_of(chunks: list[Chunk], family: Callable[[str], str]) -> Callable[[Chunk], Precedence]:
    """A function giving each chunk's `Precedence`, from the documents' titles and revision headings.

    Args:
        chunks: every chunk of the chip's documents.
        family: a document's name without its format (`ingest.profile_resolve.document_family`).
    """
    errata: set[str] = set()
    revisions: dict[str, set[tuple]] = {}
    for chunk in chunks:
        title = chunk.section.split(" > ", 1)[0] if chunk.section else ""
        if _ERRATA_TITLE.search(title) or _ERRATA_TITLE.search(chunk.source.rsplit("/", 1)[-1]):
            errata.add(family(chunk.source))
        key = _revision_of(chunk.section or "")
        if key is not None:
            revisions.setdefault(family(chunk.source), set()).add(key)
    histories = {doc for doc, keys in revisions.items() if len(keys) >= 2}

    def of(chunk: Chunk) -> Precedence:
        doc = family(chunk.source)
        revision = _revision_of(chunk.section or "") if doc in histories else None
        headings = (chunk.section or "").split(" > ")[1:]
        in_errata = doc not in errata and any(_ERRATA_TITLE.search(h) for h in headings)
        return Precedence(int(doc in errata), doc, revision, int(in_errata))

    return of


def supersede(candidates: list, rank: Callable, agree: Callable, describe: Callable) -> tuple[list, list[str]]:
    """`candidates` without those that an outranking candidate disagrees with, and one note per superseded value
    naming both quotes.

    Args:
        candidates: one field's candidates (`ingest.profile_candidate.Candidate`).
        rank: candidate -> `Precedence`.
        agree: (candidate, candidate) -> whether the two values agree.
        describe: candidate -> "value (document: quote)" text for the note.
    """
    ranks = [rank(c) for c in candidates]
    kept, notes = [], []
    for c, r in zip(candidates, ranks):
        winner = next((d for d, s in zip(candidates, ranks) if s.outranks(r) and not agree(c, d)), None)
        if winner is None:
            kept.append(c)
        else:
            notes.append(f"{describe(c)} superseded by {describe(winner)}")
    return kept, notes
