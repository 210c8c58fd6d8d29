"""Answer-type matching for count questions: "How many <things> does X have?" prefers passages that state a count
of those things.

A question's expected answer type is a standard signal in question answering (Harabagiu et al., "FALCON: Boosting
Knowledge for Answer Engines", TREC 2000; Jurafsky & Martin, "Speech and Language Processing", 3rd ed., ch. 14,
"answer type detection"). A count question's answer is a whole number attached to the asked noun phrase, so a
passage that only defines the term ("the chip is built from flow clusters, each with ...") matches the question's
words and meaning as well as the passage that gives the count, and often better. `search` adds one more ranked list
to its reciprocal-rank fusion for such questions: the candidates that state a count of the asked term, in their
fused order.

A passage states a count of term T (its tokens after `retrieval.tokenize`: lower case, stop words dropped, plural
``s`` stripped) when a whole number that is not part of the question (e.g. not the "7" of a product name) and not
followed by a unit (``4 MB``, ``1.8 GHz``: a size or a rate, not a count) stands

- right before T, with at most one word between ("96 flow clusters", "48 enabled vector cores"), or
- right after T ("Flow clusters: 96"), or within `TABLE_VALUE_WINDOW` tokens after it in a table row, whose text
  puts the row's label before its value cells ("Resource: Overlay tiles / Standard bitstream: 24").
"""

from __future__ import annotations

import re

#: Question forms that ask for a count or an amount; group ``term`` is the asked noun phrase (up to the verb or
#: preposition that follows it, or the end of the question).
_COUNT_QUESTION = re.compile(
    r"\b(?:how\s+many|number\s+of|count\s+of)\s+(?P<term>[^\W\d_][\w\-/ ]*?)"
    r"(?=\s+(?:does|do|did|is|are|was|were|can|could|will|would|has|have|had|in|on|per|of|for|there|at|inside|"
    r"within)\b|\s*[?.!,;:]|\s*$)", re.IGNORECASE)
#: Unit tokens after a number that make it a size, a rate or a time rather than a count (SI and binary prefixes of
#: bytes, bits, hertz, FLOP/s, watts, seconds; per-cent).
UNIT_TOKENS = frozenset("""
b byte kb kib mb mib gb gib tb tib pb bit kbit mbit gbit hz khz mhz ghz thz flop flops gflop gflops tflop tflops
pflop pflops top tops w watt kw mw ms us ns ps sec second gbps tbps mbps gbp tbp gt gts percent pct
""".split())
#: Tokens after a table row's label within which its value cell is taken as the label's value.
TABLE_VALUE_WINDOW = 4


def asked_count_term(query: str, tokenize) -> list[str] | None:
    """The asked term's tokens of a count question (``How many flow clusters ...`` -> ``["flow", "cluster"]``),
    or None when `query` is not a count question. `tokenize`: `retrieval.tokenize` (the index's tokens)."""
    match = _COUNT_QUESTION.search(query)
    if match is None:
        return None
    tokens = tokenize(match.group("term"))
    return tokens or None


def states_count(text: str, kind: str, term: list[str], query_tokens: set[str], tokenize) -> bool:
    """Whether `text` (a record's text; `kind` its chunk kind, e.g. ``table_row``) states a whole-number count of
    `term` (module docstring). `query_tokens`: the question's tokens, whose numbers are never an answer."""
    tokens = tokenize(text)
    n = len(term)
    for start in range(len(tokens) - n + 1):
        if tokens[start:start + n] != term:
            continue
        before = [start - 1, start - 2]
        after = range(start + n, start + n + (TABLE_VALUE_WINDOW if kind == "table_row" else 1))
        if any(_is_count(tokens, i, query_tokens) for i in (*before, *after)):
            return True
    return False


def _is_count(tokens: list[str], i: int, query_tokens: set[str]) -> bool:
    """tokens[i] is a whole number, not one of the question's, not followed by a unit token."""
    if not 0 <= i < len(tokens) or not re.fullmatch(r"\d+", tokens[i]) or tokens[i] in query_tokens:
        return False
    return i + 1 >= len(tokens) or tokens[i + 1] not in UNIT_TOKENS
