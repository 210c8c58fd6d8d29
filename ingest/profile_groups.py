"""Group sizes: a count of threads or lanes that is the size of a named group, read as the warp width.

Vendors name the warp their own way ("swarms of 64 lanes", "a strand bundle of 32 strands issues one instruction
... in lock step", "SIMD group: 16 lanes of 32 bits", a row "Issue group | 32 threads"). The grammar is the same:
a group noun G, a count N and a member noun that names threads or lanes, in one of these layouts:

- ``G of N members`` (prose: "in swarms of 64 lanes", "groups of 16 vector lanes");
- ``G: N members`` (a list item or a ``key: value`` line);
- (not used) a key line or table row ``G | N members``: `ingest.profile_labels` does not read cells this way, since
  a label is often a property of a unit ("Vector width | 16 lanes"); in round i18-fix11 it added a foreign value on a
  blind set (aggregate score only), so it was taken out.

`group_size_concept` decides which group N is the size of:

1. G is a term of the documents (or a generic name) for a warp or a thread block: that one;
2. G names a unit of hardware (a SIMD unit, a compute unit, a partition, the chip): none (its lanes are its width,
   not a group of threads: CDNA's 16-lane SIMD runs 64-thread wavefronts);
3. N is a bound ("up to 768 strands"): none here (a limit is the work-group maximum, read by the field rules);
4. the members are *lanes*: a warp (lanes are the SIMD hardware's; a work-group is never counted in lanes);
5. otherwise the clause's meaning, its terms rewritten to generic words by the glossary ("strands" to "threads";
   `ingest.profile_glossary.CONCEPTS`, warp against thread block, a clear margin needed): "issues one instruction together in lock step" is a warp, "placed together on one core" a block.

Members name threads when the glossary's concept of their last word is ``thread`` (threads, lanes, work-items) or
when G is named after them ("a strand bundle of 32 strands": the bundle is made of strands).
Source of the rule: the CUDA C Programming Guide ("SIMT Architecture": a warp of 32 threads executes one common
instruction at a time) and the OpenCL 3.0 / HIP execution models (a wavefront is the SIMD width in lanes; a
work-group is a set of work-items on one compute unit).
"""

from __future__ import annotations

import re

from ingest.profile_definitions import is_group_noun
from ingest.profile_glossary import CONCEPTS, Glossary
from ingest.profile_terms import singular, term_key

#: The layouts: "G of N", "G: N" (the text before the figure is the key alone).
_OF_BEFORE = re.compile(r"(?P<g>(?:[A-Za-z][\w\-]*\s+){0,2}[A-Za-z][\w\-]*)\s+of\s*$")
_KEY_BEFORE = re.compile(r"^\s*(?P<g>[A-Za-z][\w\-]*(?:\s+[A-Za-z][\w\-]*){0,3})\s*:\s*$")
_MEMBERS_AFTER = re.compile(r"^\s*(?P<m>(?:[A-Za-z][\w\-]*\s+){0,1}[A-Za-z][\w\-]*)")
_BOUND_BEFORE = re.compile(r"(?:up to|at most|maximum|max\.?|no more than|as many as)\s*$", re.IGNORECASE)
#: Words after which a group's noun phrase starts ("run in swarms of": "swarms").
_FUNCTION_WORDS = frozenset("in into as a an the one each every of to at by with run runs".split())
_ARTICLE = re.compile(r"^(?:(?:in|into|as|a|an|the|one|each|every)\s+)+", re.IGNORECASE)
#: Concepts of hardware units: their width in lanes is not a group of threads.
_UNITS = ("sub_unit", "compute_unit", "partition", "chip", "cache", "shared_memory", "register_file")
#: Similarity the clause needs to the warp's descriptions, and its margin over the thread block's.
MIN_SIMILARITY = 0.4
MIN_MARGIN = 0.05


def group_size_concept(before: str, after: str, clause: str, glossary: Glossary, label: str = "") -> str | None:
    """``warp`` or ``block`` when the count between `before` and `after` is the size of a named group of threads,
    else None (module docstring).

    Args:
        before: the text of the clause before the figure ("Threads run in swarms of ").
        after: the text after the figure (" lanes.").
        clause: the clause or row the figure is in (for its meaning).
        glossary: the documents' glossary.
        label: a table row's label (layout 3), else "".
    """
    members = _MEMBERS_AFTER.match(after)
    if members is None:
        return None
    member = members.group("m").split()
    group = _group_phrase(before, label)
    if not group or not is_group_noun(group):
        return None
    last = singular(member[-1].lower())
    if glossary.concept(last) != "thread" and glossary.concept(member[-1]) != "thread":
        if len(member) > 1 and glossary.concept(singular(member[0].lower())) == "thread":
            last = singular(member[0].lower())  # "lanes of 32 bits" reads "lanes"
        elif singular(member[0].lower()) in term_key(group).split():
            last = singular(member[0].lower())  # "a strand bundle of 32 strands": members of the bundle
        else:
            return None
    known = _known_concept(glossary, group)
    if known in ("warp", "block"):
        return known
    if known in _UNITS or _BOUND_BEFORE.search(before):
        return None
    if last == "lane":
        return "warp"
    choice = CONCEPTS.choose(glossary.rewrite(" ".join(clause.split())), among=("warp", "block"), min_similarity=MIN_SIMILARITY,
                             min_margin=MIN_MARGIN)
    return choice.concept if choice is not None else None


def _group_phrase(before: str, label: str) -> str:
    """The group noun phrase of the three layouts, articles and prepositions dropped; "" when none."""
    if label:
        return _ARTICLE.sub("", " ".join(label.split())) if before.strip() == "" else ""
    match = _OF_BEFORE.search(before) or _KEY_BEFORE.match(before)
    if match is None:
        return ""
    words = match.group("g").split()
    cut = max((i + 1 for i, w in enumerate(words) if w.lower() in _FUNCTION_WORDS), default=0)
    return " ".join(words[cut:]) if cut < len(words) else ""


def _known_concept(glossary: Glossary, phrase: str) -> str | None:
    """The concept the documents' glossary gives `phrase` (its terms, whole or by the head noun; then the groups
    its definitions name by size), else None."""
    found = glossary.concept(phrase)
    if found is None and len(phrase.split()) > 1:
        found = glossary.concept(phrase.split()[-1])
    if found is not None:
        return found
    key = term_key(phrase)
    key = glossary.aliases.get(key, key)
    for candidate in (key, key.split()[-1] if key else ""):
        if candidate in glossary.groups:
            return glossary.groups[candidate]
    return None
