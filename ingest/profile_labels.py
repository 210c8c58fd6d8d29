"""The labels of a number: the words of a table row or a sentence that say what the number is.

`labels(record, quantity, every, glossary)` gives the texts that `ingest.profile_rules.what_it_is` matches to
profile quantities by meaning: for a table cell its row label, column header and the cell's own words; for a
sentence the words the number is attached to, then its clause. The texts are cleaned for the embedding model (unit
parentheticals, footnote marks and product names out, a bilingual label's English gloss, a DRAM technology read as
device memory) and rewritten to generic words through the documents' glossary. Grammar handled here, not
vocabulary: "N KB of it" (its antecedent), "72 cores, of which 64 are enabled", "squads of 64 threads" (the size of
a group of threads), "the whole LDS of its VP, 64 KiB" (apposition), "Running at up to 1.8 GHz, the X ..." (a
participle's subject).
"""

from __future__ import annotations

import re

from ingest.profile_definitions import is_group_noun
from ingest.profile_glossary import Glossary
from ingest.profile_groups import group_size_concept
from ingest.profile_scope import parens
from ingest.profile_terms import singular, term_key
from ingest.profile_text import Record, products_in, without_parentheticals
from ingest.units import Quantity, find_quantities

_STOPWORDS = frozenset("a an the of in on at to for from by with and or is are its their this that up total"
                       .split())

_PRODUCT_WRITTEN = re.compile(r"(?<![\w\-])[A-Za-z]{1,6}-?\d{1,4}[A-Za-z]{0,3}(?![\w\-])")


def clean_label(text: str) -> str:
    """A label for matching: unit parentheticals (``(KiB)``, ``(TFLOPS)``), footnote marks and product names out."""
    text = re.sub(r"\(\s*(?:[KMGT]i?B|[KMGT]i?B/s|[KMGT]bit/s|GB/s|TB/s|MHz|GHz|TFLOPS?|TOPS|count|threads|%)\s*\)",
                  " ", text, flags=re.IGNORECASE)
    named = set(products_in(text))
    text = _PRODUCT_WRITTEN.sub(lambda m: " " if m.group(0).replace("-", "").lower() in named else m.group(0), text)
    text = re.sub(r"[*_`\u2020\u2021\u00b9\u00b2\u00b3]|\(\d\)", " ", text)
    text = _DRAM_TYPE.sub("DRAM memory", text)  # "96 GB of LPDDR6": a DRAM technology names device memory
    if _CJK.search(text) and re.search(r"[A-Za-z]{3}", _CJK.sub(" ", text)):
        text = re.sub(r"\(\s*\)|[()]", " ", _CJK.sub(" ", text))  # "演算タイル数 (Compute tiles)": the English gloss
    return " ".join(text.split())


_DRAM_TYPE = re.compile(r"(?<![\w\-])(?:HBM\d?\w*|G?DDR\d\w*|LPDDR\d?\w*)(?![\w\-])", re.IGNORECASE)
#: Chinese, Japanese and Korean script (the embedding model reads English; a bilingual label's gloss is used).
_CJK = re.compile(r"[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff00-\uffef]+")


def _np_after(text: str) -> str:
    """Words a number is attached to after it: ``of LDS``, ``vector register file``, ``compute engines``."""
    words = text.replace("(", " ( ").split()
    if words and words[0].lower() in ("x", "\u00d7"):
        words = words[1:]  # "1x Matrix Unit"
    if words and words[0].lower() == "of":
        words = words[1:]
        if words and words[0].lower() in ("the", "a", "an"):
            words = words[1:]
    out = []
    for word in words[:5]:
        bare = word.strip(",.;:)")
        if not bare or bare == "(" or bare.lower() in _STOPWORDS or not re.match(r"[A-Za-z]", bare):
            break
        out.append(bare)
        if bare != word:
            break
    return " ".join(out)


#: "N <things>, of which M are enabled": M of the N things (the product's); N is the die's, not the product's.
#: The total after "N of the" ("88 of the 96 processing clusters"): the physical count, not the product's.
TOTAL_OF_PART = re.compile(r"\d[\d,]*\s+of\s+(?:the|its|all)\s+$", re.IGNORECASE)
ENABLED_SUBSET = re.compile(r"\bof (?:which|them|these)\s+(?:only\s+)?$", re.IGNORECASE)
PHYSICAL_TOTAL = re.compile(r"^\s*(?:[A-Za-z][\w\-]*,?\s+){1,3}of (?:which|them|these)\s+(?:only\s+)?\d+\s+"
                             r"(?:are|is)\s+(?:enabled|active|available|usable|functional|in use|exposed)",
                             re.IGNORECASE)


def _counted_before(sentence: str, clause: str) -> str:
    """The things counted last before `clause` in `sentence` (``cores`` in "72 cores, of which ...")."""
    at = sentence.find(clause)
    found = re.findall(r"\d[\d,]*\s+((?:[A-Za-z][\w\-]*\s*){1,3})", sentence[:at] if at > 0 else "")
    return _np_after(found[-1]) if found else ""


def sentence_after(record: Record, quantity: Quantity) -> str:
    """The rest of the record's sentence after `quantity` (beyond its clause), or "" when the clause is not in it."""
    at = record.key.find(record.text)
    return record.key[at + quantity.end:] if at >= 0 else ""


def _antecedent(sentence: str, clause: str, dimension: str | None = None) -> str:
    """What "it" stands for in `clause`: the noun phrase of the last "N <unit> of <noun phrase>" before it. With
    `dimension`, the figure must be a quantity of that dimension (`ingest.units.find_quantities`): "96 KiB of it"
    is a part of what an earlier amount of bytes is of ("192 kibibytes of group memory"), whatever the unit's
    spelling; a count or a rate before it is not its antecedent."""
    at = sentence.find(clause)
    head = sentence[:at] if at > 0 else ""
    if dimension is not None:
        for q in reversed(find_quantities(head)):
            if q.dimension == dimension:
                found = re.match(r"\s+of\s+((?:[A-Za-z][\w\-]*\s*){1,4})", head[q.end:])
                if found:
                    return _np_after(found.group(1))
        return ""
    found = re.findall(r"\d\s*[A-Za-z]{1,6}\s+of\s+((?:[A-Za-z][\w\-]*\s*){1,4})", head)
    return _np_after(found[-1]) if found else ""


def _np_before(text: str) -> str:
    """Words a number is attached to before it: ``memory bandwidth`` in ``memory bandwidth of 5.3 TB/s``."""
    words = re.sub(r"[:=]", " ", text).split()
    while words and words[-1].lower().strip(",") in _STOPWORDS | {"up", "is", "are", "reaches", "has", "have",
                                                                   "delivers", "provides", "holds", "runs", "run"}:
        words.pop()
    out: list[str] = []
    for word in reversed(words[-5:]):
        bare = word.strip(",.;:()")
        if not bare or bare.lower() in _STOPWORDS or not re.match(r"[A-Za-z]", bare) or word.endswith((",", ";")):
            break
        out.insert(0, bare)
    return " ".join(out)


#: A count followed by the total it is part of ("88 of the 96 ..."): both count the noun after the total; the first
#: is the part the product enables, the second the physical total (`ingest.profile_rules`).
OF_TOTAL = re.compile(r"\s*of\s+(?:the|its|all)\s+\d[\d,]*\s+")


def labels(record: Record, quantity: Quantity, every: list[Quantity], glossary: Glossary) -> list[str]:
    """Texts that name `quantity`, rewritten to generic terms: for a table cell its row label and column header
    (and what the cell adds after the number: ``per tile``, ``GDDR7``); for a sentence the words the number is
    attached to (first two entries), then the clause around it (see `_ATTACHED`)."""
    if record.is_table:
        rest = record.text[quantity.end:] if record.text[quantity.start:quantity.end] == quantity.text else ""
        label = "" if record.product_row else clean_label(record.label)  # a product per row: the header says what
        header = clean_label(record.header) if not products_in(record.header) or not label else ""
        # a product column's header names no quantity; a key line's key does, with its product taken out ("Quads on
        # the Q2: 36")
        parts = [label, header if len(label.split()) <= 1 else "", clean_label(rest)]
        text = clean_label(" ".join(p for p in parts if p))
        return [glossary.rewrite(text)] if text else []
    text = record.text
    start = max((q.end for q in every if q.end <= quantity.start), default=0)
    end = min((q.start for q in every if q.start >= quantity.end), default=len(text))
    after, before = _np_after(text[quantity.end:end]), _np_before(text[start:quantity.start])
    of_total = OF_TOTAL.match(text[quantity.end:]) if quantity.dimension == "count" else None
    if of_total:  # "enables 88 of the 96 processing clusters": 88 counts processing clusters too
        after = _np_after(text[quantity.end + of_total.end():]) or after
    lead_in = text[start:quantity.start]
    if not lead_in.strip() and start == 0 and record.key.startswith(record.subject or "\0"):
        lead_in = record.key[:len(record.subject) + 2]  # the clause is the number alone: the clause before it
    apposition = _APPOSITION.search(lead_in) if not after else None
    if apposition:  # "the whole LDS of its VP, 64 KiB": the number restates the noun phrase
        before = apposition.group("np")
    if record.topic and not after and _FIGURE_WORD.search(lead_in):
        before = record.topic  # "1. Memory bandwidth. ... The correct figure is 3.35 TB/s": the item's label
    if re.match(r"\s*of\s+(?:it|them)\b", text[quantity.end:end]) and record.key:
        # "48 KB of it": of the thing named before, in the sentence or the one before it
        after = (_antecedent(record.key, text) or _antecedent(f"{record.prev} {text}", text)
                 or _antecedent(f"{record.prev} {text}", text, quantity.dimension) or after)
    if ENABLED_SUBSET.search(text[:quantity.start]) and record.key:
        after = _counted_before(record.key, text) or after  # "72 cores, of which 64 are enabled": 64 cores
    # "a dispatch group (the unit of work placed on one PE) is limited to 256 lanes": the aside is not the lead
    lead = " ".join(without_parentheticals(text[start:quantity.start]).split()[-6:])
    attached = f"{lead} {quantity.unit} {after}" if quantity.dimension == "count" else f"{before} {after}"
    if quantity.dimension == "count" and group_size_concept(text[start:quantity.start], text[quantity.end:end],
                                                            text, glossary) == "warp":
        return ["", "threads per warp"]  # "swarms of 64 lanes", "SIMD group: 16 lanes": the size of a warp
    if quantity.dimension == "count" and glossary.concept(after) == "thread":
        after = ""  # "1024 threads": what is counted is threads; the words before say which quantity it is
        group = _GROUP_BEFORE.search(text[start:quantity.start])
        if group and is_group_noun(group.group("g")) and _group_concept(glossary, group.group("g")) == "warp":
            return ["", "threads per warp"]  # "squads of 64 threads": the size of a warp (not a count of warps)
    window = " ".join(f"{text[start:quantity.start]} {quantity.unit} {text[quantity.end:end]}".split()[-24:])
    inside = next((text[:a].strip() for a, b in parens(text) if a <= quantity.start < b), "")
    inside = " ".join(inside.split()[-16:])
    if _PARTICIPLE.match(text) and record.product == "chip":
        window = f"the chip {window}"  # "Running at up to 1.8 GHz, Nova N4 delivers": its subject is the chip's
    if _ANAPHORA.match(text) and record.prev:
        window = f"{' '.join(record.prev.split()[-16:])} {window}"  # "this is 288 GB/s in aggregate"
    parts = memory_parts(record.prev, text[start:quantity.start]) if quantity.dimension == "bytes_per_s" else ""
    if parts and not after:  # "64 GB of LPDDR5X on 8 channels. Together the 8 channels move 819.2 GB/s"
        attached = re.sub(rf"\b({re.escape(parts)})", r"memory \1", attached, count=1, flags=re.IGNORECASE)
        window = re.sub(rf"\b({re.escape(parts)})", r"memory \1", window, count=1, flags=re.IGNORECASE)
    variants = [after, " ".join(attached.split()), window, inside]
    return [glossary.rewrite(clean_label(v)) if v else "" for v in variants]


#: A capacity spread over parts in a sentence: "64 GB of LPDDR5X on 8 channels", "96 GiB in 6 stacks".
_SPREAD_OVER = re.compile(r"\b(?:on|over|across|in|behind)\s+(?:its\s+|the\s+)?\d[\d,]*\s+(?P<parts>[A-Za-z][\w\-]*)")


def memory_parts(previous: str, lead: str) -> str:
    """The parts of the device memory that `lead` (the words before a rate) names: the noun that the previous
    sentence spreads a memory capacity over ("64 GB of LPDDR5X on 8 channels"), when `lead` names it ("Together the
    8 channels move ..."); else "". The rate those parts move is the memory's: the noun is read as "memory
    channels" (a channel, stack or interface is only a part of what moves the bytes once the sentence before says
    whose parts they are). The capacity must be a bytes figure (`ingest.units.find_quantities`) right before the
    parts."""
    if not previous or not lead.strip():
        return ""
    for q in find_quantities(previous):
        if q.dimension != "bytes":
            continue
        spread = _SPREAD_OVER.search(previous[q.end:q.end + 60])
        if spread:
            noun = singular(spread.group("parts").lower())
            if any(singular(w.lower().strip(",.;:")) == noun for w in lead.split()):
                return noun
    return ""


#: "<group> of" right before a count of threads ("wavefronts of 64 work-items", "SIMD groups of 16 lanes").
_GROUP_BEFORE = re.compile(r"(?P<g>(?:[A-Za-z][\w\-]*\s+)?[A-Za-z][\w\-]*)\s+of\s*$")


def _group_concept(glossary: Glossary, phrase: str) -> str | None:
    """``warp`` or ``block`` when `phrase` names a group of threads in these documents (`Glossary.groups`)."""
    key = term_key(phrase)
    key = glossary.aliases.get(key, key)
    for candidate in (key, " ".join(key.split()[-1:])):
        if candidate in glossary.groups:
            return glossary.groups[candidate]
    concepts = (glossary.concept(phrase), glossary.concept(phrase.split()[-1]))
    return next((c for c in concepts if c in ("warp", "block")), None)



#: A noun phrase (up to "X of its Y") that a number follows in apposition, after a comma.
_APPOSITION = re.compile(r"\b(?:the|its|their|all|whole)\s+(?P<np>(?:[A-Za-z][\w\-]*\s+){0,3}?[A-Za-z][\w\-()]*"
                         r"(?:\s+of\s+(?:the|its|their|one|each)\s+[A-Za-z][\w\-]*)?),\s*$", re.IGNORECASE)
#: A clause led by a participle ("Running at up to", "Clocked at"): its subject is the sentence's.
#: Words that name a figure without saying what it measures ("the correct figure", "the new value").
_FIGURE_WORD = re.compile(r"\b(?:figure|value|number|amount|rating)s?\b", re.IGNORECASE)
_PARTICIPLE = re.compile(r"^\s*[A-Z][a-z]+(?:ing|ed)\s+(?:at|to|up)\b")
_ANAPHORA = re.compile(r"^\s*(?:this|that|these|it|which)\s+(?:is|are|gives|comes|amounts|totals)\b", re.IGNORECASE)


def own_words(record: Record, quantity: Quantity) -> str:
    """The words a table cell writes before its number ("(base) 1.40 GHz", "with sparsity 4,800 TFLOPS" in a notes
    column): they name the number themselves, before the row's label does; "" when there are none."""
    if not record.is_table or quantity.start == 0:
        return ""
    own = _QUALIFIER_WORDS.sub(" ", clean_label(record.text[:quantity.start]))
    return own if re.search(r"[A-Za-z]{3}", own) else ""


#: Words that qualify a figure without naming it ("at most 224 KB", "up to 64", "max. 2,048"): a bound or an
#: estimate of the quantity the row label names, not the name of another quantity.
_QUALIFIER_WORDS = re.compile(r"\b(?:at most|at least|up to|no more than|maximum|minimum|max|min|about|approx"
                              r"(?:imately)?|around|typ(?:ical(?:ly)?)?|nominal|only|exactly)\b\.?|[~\u2264\u2265<>=]",
                              re.IGNORECASE)


def own_noun(record: Record, quantity: Quantity, glossary: Glossary) -> str:
    """The noun a table cell's count is written with when it is not what the row label names ("Flow clusters |
    two halves of 48": 2 counts halves), else "". Threads and lanes are what group sizes are counted in ("Vector
    width | 16 lanes"), so they name no other thing, nor do the members of a group the label names ("Lockstep group
    | 16 PEs"); a word that is not a plural noun ("132 active") names none."""
    if not record.is_table or quantity.dimension != "count":
        return ""
    noun = _np_after(record.text[quantity.end:])
    if not noun or re.match(r"(?:x|of)\b", noun, re.IGNORECASE) or glossary.concept(noun) == "thread":
        return ""
    if glossary.concept(record.label) in ("warp", "block"):
        return ""  # "Lockstep group | 16 PEs": a group's size is counted in its members
    last = noun.split()[-1]
    if singular(last) == last:
        return ""  # "132 active": a state of the things the label names, not other things (those are plural)
    key, label = term_key(noun), term_key(record.label)
    key = glossary.aliases.get(key, key)
    label = glossary.aliases.get(label, label)
    return "" if key == label or key in label or label.endswith(key.split()[-1]) else noun
