"""Chunk text -> `Record`s that the profile rules read: sentences and table cells, each with its scope.

A hardware document states a fact in prose ("The LDS ... remain at 64KB"), in a table row rendered by a loader
(``"Model: MI300X | LDS (KiB): 64"``), in a raw Markdown pipe table or reStructuredText/MyST ``list-table``, or in
a PDF table flattened to lines (``"COMPUTE UNITS 228 304"`` under ``"MI300A APU MI300X DISCRETE GPU"``). This
module turns all of these into records that carry:

- the text to read numbers from, the words that name the quantity (header, row label, caption or sentence),
  and a verbatim quote with a locator for the citation;
- the *product scope*: ``chip`` when the record names the chip being profiled (``MI300X`` for chip ``mi300x``,
  ``n150`` for ``wormhole_n150``), ``other`` when it names only other products (``MI250X``), ``neutral`` when
  it names none. Products named after "than", "compared to", "versus" are comparisons and do not count;
- *level cues*: ``sub`` ("per XCD", "each channel", "The XCD has"), ``cu`` ("per CU", "Each Tensix tile"),
  ``chip`` ("per accelerator", "total"), ``multi`` ("8-GPU", "two such ASICs").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from ingest.profile_questions import is_question, is_speaker_mark
from knowledge.types import Chunk

#: A product model name: letters, an optional hyphen, digits, optional letters (``MI300X``, ``ZX-40``, ``n150``,
#: ``P9``), optionally a SKU suffix after a hyphen, digits or capitals (``V7-48``, ``P8-112``, ``F2-LP``); the token is
#: lower-cased without hyphens (``zx40``, ``v748``, ``f2lp``).
_PRODUCT = re.compile(r"(?<![\w\-])([A-Za-z]{1,6})-?(\d{1,4}[A-Za-z]{0,3}(?:-(?:\d{1,4}|[A-Z]{1,3}))?)"
                      r"(?![\w\-]|\.\d)")
#: Tokens of that shape that name data types, memories, ISAs, interfaces, cache levels, steppings or units.
_NOT_PRODUCT = re.compile(
    r"^(?:fp\d+|bf\d+|tf\d+|u?int\d+|e\dm\d|hbm\d\w*|g?ddr\d\w*|lpddr\d\w*|rv\d+\w*|gfx\d+\w*|sm_?\d+|cdna\d?|"
    r"rdna\d?|gcn\d?|gen\d|x\d+|l\d|nps\d|pcie\d?|mi\d{3}-\d+|ddr|rocm\d*|cuda\d*|sfp\w*|[ab][01]|"
    r"[kmgt]i?b\d*|[kmgt]hz\d*|v\d|\d+\w*|fig\d*|table\d*|sec\d*|page\d*|section\d*|figure\d*|step\d*|"
    r"simd\d+|wave\d+|warp\d+)$",
    re.IGNORECASE,
)
_YEAR_AFTER = re.compile(r"^\s+(?:19|20)\d\d\b")
_ENDNOTE_AFTER = re.compile(r"^-\d+")
_COMPARISON_BEFORE = re.compile(
    r"(?:(?:than|compared (?:to|with)|versus|vs\.?|over|relative to|like the)"
    r"(?:\s+\S+){0,5}|\b(?:same\s+\w+\s+)?as(?:\s+(?:the|a|an|on|in|with))?(?:\s+\S+)?)\s*$",
    re.IGNORECASE,
)

CHIP_NOUNS = (r"(?:gpus?|accelerators?|devices?|chips?|asics?|processors?|packages?|oams?|cards?|apus?|products?|"
              r"parts?|models?|skus?|npus?|tpus?|ipus?|dpus?|xpus?)")
#: Generic names of the compute unit (CUDA, HIP and OpenCL documentation); a vendor's own name is learned from its
#: documents (`ingest.profile_glossary`) and rewritten to "compute unit" before scopes are read.
CU_NOUNS = r"(?:compute units?|cus?|streaming multiprocessors?|sms?)"
BLOCK_NOUNS = r"(?:(?:thread )?blocks?|work-?groups?|work groups?|ctas?)"
_TIME_NOUNS = r"(?:clock|clk|cycle|second|sec|s(?![\w\-])|hour|instruction|op|operation|call)"
_PER_EACH = re.compile(r"\b(?:per|each|every)\s+((?:[\w\-]+[ \t]+){0,2}[\w\-]+)", re.IGNORECASE)
_THE_SUB = re.compile(
    r"\b(?:the|a|an|this|that|one|single)\s+(?:[\w\-]+\s+){0,2}?(xcd|gcd|die|channel|bank|stack|hop|partition|vm|simd|slice|port|link|"
    r"controller|router|quadrant|tpc|gpc|ccd|iod|lane|core)\b(?!s)",
    re.IGNORECASE,
)
_LEVEL_SUFFIX = re.compile(r"\b([\w]+)-level\b", re.IGNORECASE)
_MULTI = re.compile(
    r"\b(?:(?:\d+|two|three|four|six|eight|sixteen|multiple|several)[ -](?:such\s+)?"
    r"(?:gpus|asics|accelerators|oams|apus|devices|boards|nodes|sockets|processors|chips)\b|"
    r"\d+-(?:gpu|apu|socket|processor|oam)\b|\bnode\b|\bentire board\b|\bsystem-level\b|\bper board\b|"
    # a number of chips named by their model: "an eight-H1 server", "8x MI300X", "two KX-2 accelerators"
    r"(?:\d+|two|three|four|six|eight|sixteen)(?:[ -]|x\s)(?!(?:FP|BF|TF|INT|HBM|G?DDR|LPDDR|PCIe|L|Gen)-?\d)"
    r"(?-i:(?:[A-Z][a-z]{2,}\s)?[A-Z][A-Za-z]{0,5}-?\d{1,4}[A-Za-z]{0,3})\b)",  # with its brand: "two Nova N4"
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(
    r"(?<=[.!?:])(?:[A-Z]{1,5}\d{2,4}-\d+(?:,\s*[A-Z]{1,5}\d{2,4}-\d+)*)?\s+(?=[A-Z\u2022(\[*`\"'\u201c]|-\s)"
    r"|(?<=[a-z]{3}\.)(?<!\b(?:fig|sec|ref|vol|ver|rev)\.)(?<!approx\.)\s+(?=\d+\s+[a-zA-Z])"
)
#: The ideographic full stop (Chinese, Japanese) and its half-width form end a sentence.
_CJK_FULL_STOP = re.compile(r"[\u3002\uff61]\s*")
_CLAUSE_SPLIT = re.compile(r",\s+|;\s+|\s+(?:and|while|whereas|but|although)\s+", re.IGNORECASE)
_DIALOGUE_MARK = re.compile(r"^\s*[*_]*(?:Q|A|Question|Answer)\s*[:.][*_]*\s+", re.IGNORECASE)
_BULLET = re.compile(r"^\s*(?:[*\-+\u2022]|\d+\.)\s+")


@dataclass
class Record:
    """One place a fact may be stated.

    Attributes:
        text: where numbers are read (a clause, a sentence, or a table cell value).
        key: the words that name the quantity (sentence, or header + row label + caption).
        local: narrow context for exclusions and data types (the clause, or header + row label).
        quote: verbatim text to cite (sentence or cell; whitespace collapsed).
        locator: page/section/row/column of the quote.
        chunk: the chunk it came from.
        product: ``chip`` | ``other`` | ``neutral`` (see module docstring).
        levels: level cues found (``sub``, ``cu``, ``chip``, ``multi``, ``block``).
        default_unit: unit of bare numbers (from a table header), or None.
        is_table: True for table cells.
        sparse: True for a cell in a "with sparsity" sub-column.
        prev: the previous sentence (prose only), for facts that continue it ("this is 288 GB/s in aggregate").
        originals: the chunks `chunk` was merged from (quotes must appear verbatim in one of them).
        label, header: a table cell's row label and column header (empty for prose).
        row: the other cells of a table cell's row (their scope words apply to the row: "Shared by: one core").
        product_row: a table cell's product cell when its table has one product per row (else empty).
        subject: the nearest earlier clause of the sentence that is not a comparison aside (its scope carries over
            when the clause states none: "A workgroup can allocate up to 64 KB and holds up to 1024 work-items").
        question: the question the sentence answers (`ingest.profile_questions`), else empty.
    """

    text: str
    key: str
    local: str
    quote: str
    locator: str
    chunk: Chunk
    product: str = "neutral"
    levels: set[str] = field(default_factory=set)
    default_unit: str | None = None
    is_table: bool = False
    sparse: bool = False
    prev: str = ""
    originals: tuple[Chunk, ...] = ()
    label: str = ""
    header: str = ""
    row: str = ""
    subject: str = ""
    product_row: str = ""
    topic: str = ""
    question: str = ""


#: A paragraph's first sentence that is only a label ("Memory bandwidth.", "L2 cache:"): a few words, no figure.
_TOPIC_SENTENCE = re.compile(r"^[*_]*(?P<t>[A-Za-z][\w\-/() ]{1,60}?)[*_]*\s*[.:]?[*_]*$")


def topic_of(first_sentence: str) -> str:
    """The label a sentence gives the sentences after it in its paragraph ("1. Memory bandwidth. The datasheet
    gives ..."): a sentence of up to five words and no digit; else empty. A later sentence that names its quantity
    only as "the figure" or "the value" is about this label (`ingest.profile_labels.labels`)."""
    match = _TOPIC_SENTENCE.match(first_sentence.strip())
    if not match or len(match.group("t").split()) > 5:
        return ""
    return match.group("t").strip()


class ChipTokens(set):
    """The model tokens of the chip being profiled (a set of str), with the brand words the documents write in
    front of them (``Lumen`` in "Lumen L5"): a brand word makes a token that looks like a cache level or a
    version (``Lumen L3``, ``Vireo V1``) a product name."""

    def __init__(self, tokens=(), brands=(), families=()) -> None:
        super().__init__(tokens)
        self.brands: Brands = Brands((b.lower() for b in brands), series_letters(self))
        self.families: frozenset[str] = frozenset(families) - frozenset(tokens)


class Brands(frozenset):
    """Brand words (lower-cased) written before the chip's model token, plus `series`: the letters of a chip token
    shaped like a version or an interface (``v`` of "V3", ``x`` of "X12"), so that "V2" and "X7" in an upper-case
    spelling are read as the chip's siblings and predecessors, not as versions."""

    series: frozenset[str]

    def __new__(cls, words: Iterable[str] = (), series: Iterable[str] = ()) -> Brands:
        brands = super().__new__(cls, words)
        brands.series = frozenset(series)
        return brands


def series_letters(tokens: set[str]) -> set[str]:
    """Letters of the chip tokens that `_NOT_PRODUCT` would take for a version or an interface (``v3``: ``v``)."""
    out = set()
    for token in tokens:
        match = re.fullmatch(r"([a-z]{1,2})\d{1,4}", token)
        if match and _NOT_PRODUCT.match(token):
            out.add(match.group(1))
    return out


def chip_tokens(chip: str) -> ChipTokens:
    """Model tokens of a chip or product name: ``wormhole_n150`` -> {``n150``}, ``mi300x`` -> {``mi300x``},
    ``AS-4`` -> {``as4``}, ``pallas_p9`` -> {``p9``}."""
    text = re.sub(r"[_\s]+", " ", chip)
    tokens = {(m.group(1) + m.group(2)).replace("-", "").lower() for m in _PRODUCT.finditer(text)}
    parts = re.split(r"[_\-\s]+", chip.lower())
    tokens |= {p for p in parts if re.search(r"\d", p) and re.search(r"[a-z]", p)}
    return ChipTokens(tokens)


def brands_of(tokens: set[str], texts: list[str]) -> set[str]:
    """Capitalized words written right before the chip's model token (``Lumen`` in "Lumen L5")."""
    brands: set[str] = set()
    for text in texts:
        for match in re.finditer(r"\b([A-Z][a-z]{2,})\s+([A-Za-z]{1,6}-?\d{1,4}[A-Za-z]{0,3})\b", text):
            if re.sub(r"-", "", match.group(2)).lower() in tokens and match.group(1).lower() not in _SENTENCE_WORDS:
                brands.add(match.group(1))
    return brands


def families_of(texts: list[str]) -> set[str]:
    """Model tokens the documents use as the name of a series or family (``VX-300`` in "the VX-300 series"): a
    statement naming one is about every member, the chip's included (neutral, not another product's)."""
    out: set[str] = set()
    for text in texts:
        for match in _FAMILY.finditer(text):
            out.add(re.sub(r"-", "", match.group(1)).lower())
    return out


_FAMILY = re.compile(r"\b([A-Za-z]{1,6}-?\d{1,4}[A-Za-z]{0,3})\s+(?:series|family|product line|line-up|lineup)\b")
_SENTENCE_WORDS = frozenset("the this that each every our its their with from for and when while".split())


def products_in(text: str, brands: frozenset[str] = frozenset(), comparisons: bool = False) -> list[str]:
    """Product-model tokens named in `text` (lower-cased, hyphen dropped), leaving out comparisons ("more than the
    MI250X"), endnote markers (``MI300-11``), dates (``Q4 2024``) and identifiers that are data, memory, ISA or cache
    names (``FP64``, ``HBM3``, ``L2``), unless a brand word of the chip's stands before them (``Lumen L3``)."""
    out = []
    for match in _PRODUCT.finditer(text):
        raw = (match.group(1) + match.group(2)).lower()  # "mi300-11": an endnote marker keeps its hyphen here
        token = raw.replace("-", "")
        if "-" in match.group(0) and len(match.group(1)) > 4:
            continue  # "Level-2", "Stage-3": a word and a number, not a model name
        before = text[max(0, match.start() - 40): match.start()]
        branded = bool(brands) and bool(re.search(r"\b(" + "|".join(map(re.escape, brands)) + r")\s+$", before,
                                                  re.IGNORECASE))
        series = match.group(1).isupper() and match.group(1).lower() in getattr(brands, "series", ())
        not_product = bool(_NOT_PRODUCT.match(raw) or _NOT_PRODUCT.match(token)) and not series
        if (not_product and not branded) or _ENDNOTE_AFTER.match(text[match.end():]) \
                or _YEAR_AFTER.match(text[match.end():]):
            continue
        if not comparisons and _COMPARISON_BEFORE.search(before):
            continue
        out.append(token)
    return out


def product_scope(texts: list[str], tokens: set[str]) -> str:
    """``chip`` | ``other`` | ``neutral`` for the first of `texts` that names any product (narrowest first).

    A product token that the chip name starts with (``MI300`` for ``mi300x``) names the chip's family and is
    neutral.
    """
    brands = getattr(tokens, "brands", frozenset())
    for text in texts:
        verdict = _verdict(products_in(text, brands), tokens)
        if verdict is not None:
            return verdict
    return "neutral"


def _verdict(named: list[str], tokens: set[str]) -> str | None:
    if not named:
        return None
    if any(t in tokens for t in named):
        return "chip"
    families = getattr(tokens, "families", frozenset())
    if all(any(tok.startswith(t) for tok in tokens) or t in families for t in named):
        return None
    return "other"


def clause_product(clause: str, sentence: str, context: str, tokens: set[str],
                   previous: tuple[str, str] | None = None) -> str:
    """Product scope of a clause: its own product names; else the nearest product named before it in the
    sentence (the subject carries over: "The ZX50 has 48 CUs and 32 GB"), or all of them for "both"/"all";
    else the first named after it; else the section heading; else neutral. A clause about a competitor or a
    predecessor that names no product ("Competing GPUs offer 132 SMs", "the previous generation had ...") is about
    another product, and so are the clauses after it in its sentence that name none."""
    brands = getattr(tokens, "brands", frozenset())
    named = products_in(clause, brands)
    own = _verdict(named, tokens)
    if own == "chip" and _FOREIGN.search(sentence) and _verdict(named[:1], tokens) == "other":
        return "other"  # "The A5 that the A7 replaces had 20 cores": the first product named is the subject
    if own is not None:
        return own
    if _verdict(products_in(clause, brands, comparisons=True), tokens) == "other":
        return "other"  # "Compared with the previous X2 (40 cores, 16 GB)": the figures are the compared product's
    if comparison_section(context):
        return "other"
    at = sentence.find(clause)
    if _FOREIGN.search(clause) or (at > 0 and _FOREIGN.search(sentence[:at])
                                   and not products_in(sentence[:at], brands)):
        return "other"
    if previous is not None and previous[1] != "neutral" and _FRAGMENT.match(clause) \
            and not _ASIDE.match(previous[0]):
        return previous[1]  # "which had 12 engines and 16 GB of memory": the fragment continues its clause
    if re.match(r"\s*(?:which|who|whose)\b", clause, re.IGNORECASE):
        named = products_in(sentence[:at], brands, comparisons=True) if at > 0 else []
        if named:
            return _verdict(named[-1:], tokens) or "neutral"  # a relative clause is about the noun before it
    before = products_in(_ASIDE.sub(" ", _RELATIVE_ASIDE.sub(" ", sentence[:at])), brands) if at > 0 else []
    if before:
        if re.match(r"\s*(?:both|all|each of them)\b", clause, re.IGNORECASE):
            return _verdict(before, tokens) or "neutral"
        return _verdict(before[-1:], tokens) or "neutral"
    after = products_in(_ASIDE.sub(" ", sentence[at + len(clause):]), brands) if at >= 0 else []
    if after:
        return _verdict(after[:1], tokens) or "neutral"
    return _verdict(products_in(context, brands), tokens) or "neutral"


#: A clause that is only a figure and its noun ("16 GB of memory", "a 512 KB register file"): no verb of its own.
_FRAGMENT = re.compile(r"^\s*(?:a|an|the)?\s*[\d.,]+\s*\S*\s+(?:of\s+)?[\w\-]+(?:\s+[\w\-]+){0,3}\s*[.;]?\s*$",
                       re.IGNORECASE)
#: A comparison aside inside a sentence ("up from 64 KB in the C2", "against 3.2 TB/s on the C2", "twice the 24 MB
#: of the E1", "three times that of the Z3"): the product it names is what the sentence's subject is compared with,
#: not the subject of the clauses around it. A multiple ("twice", "half", "N times") is a comparison only when it
#: takes a figure or "that of" ("twice that in FP8" restates the subject's own figure).
_ASIDE = re.compile(r"(?:^|[,;(]\s*|\s)(?:up from|down from|compared (?:to|with)|against|than|versus|vs\.?|"
                    r"over the|relative to|(?:twice|thrice|half|double|triple|[\d.]+\s*(?:x|\u00d7|times)|"
                    r"(?:two|three|four)\s+times)\s+(?:the(?=\s+[\d.])|that\s+of|those\s+of))\s[^,;)]*",
                    re.IGNORECASE)
#: A relative clause between commas ("The Q1, which the Q2 replaces, had 24 quads"): it describes the noun before it;
#: the products it names are not the subject of the clauses after it.
_RELATIVE_ASIDE = re.compile(r",\s*(?:which|who|whose|that)\b[^,;]*,", re.IGNORECASE)
#: Words that make a clause about a product other than the one described: competitors and predecessors.
_FOREIGN = re.compile(r"\b(?:competing|competitors?|competitive|rivals?|other vendors?|(?:previous|prior|earlier|last|"
                      r"older)[- ]generation|predecessors?|(?:that|which)\s+(?:the\s+)?\S+\s+(?:replaces|succeeds)|"
                      r"(?:that|which)\s+(?:preceded|predated|came\s+before)\s|"
                      r"(?:compared\s+(?:with|to)|unlike|in\s+contrast\s+to)\s+(?:a|an|other|most)\s+(?:\w+\s+)?"
                      r"(?:gpus?|accelerators?|chips?|devices?|processors?)\b|"
                      r"(?:a|an|another|one)\s+(?:leading|competing|rival|comparable|contemporary)\b)\b",
                      re.IGNORECASE)
#: The heading of a section about other products: comparisons, predecessors, related products.
_COMPARISON_HEADING = re.compile(r"\b(?:compar\w*|versus|vs\.?|(?:related|other) (?:products|models|skus)|"
                                 r"predecessors?|competit\w*|"
                                 r"(?:previous|prior|earlier|older)[- ]generations?)\b", re.IGNORECASE)


def comparison_section(section: str) -> bool:
    """True when the innermost heading of `section` (``"Title > Sub > Heading"``) announces a comparison with
    other products ("How the L9 compares", "Compared with the A5", "Related products"): its sentences that name
    no product are about those products. The document's title (a section without ``>``) never counts: a family
    comparison sheet describes its own chip too."""
    if " > " not in section:
        return False
    return bool(_COMPARISON_HEADING.search(section.rsplit(" > ", 1)[-1]))


def level_cues(text: str) -> set[str]:
    """Level cues in `text` (see module docstring); time words ("per clock") are not levels."""
    cues: set[str] = set()
    for match in _PER_EACH.finditer(text):
        words = match.group(1).lower()
        if re.match(_TIME_NOUNS, words):
            continue
        cues.add(classify_noun(words))
    cues.update("sub" for _ in _THE_SUB.finditer(text))
    for match in _LEVEL_SUFFIX.finditer(text):
        cues.add(classify_noun(match.group(1).lower()))
    if _MULTI.search(text):
        cues.add("multi")
    if re.search(rf"\b(?:a|one|single|each|per|every)\s+{BLOCK_NOUNS}\b|\bwork-?groups?\b", text, re.IGNORECASE):
        cues.add("block")
    if re.search(r"\b(?:in total|total|in all|altogether|(?:whole|full|entire) (?:chip|gpu|device|die|package)|"
                 r"across (?:the )?(?:die|chip)|across all|adds? up to)\b", text,
                 re.IGNORECASE) or re.search(rf"\ball\s+(?:the\s+|its\s+)?(?:\w+\s+)?{CU_NOUNS}", text, re.IGNORECASE):
        cues.add("chip")  # "On-core SRAM, all compute units": the sum over the chip's units
    return cues


def classify_noun(words: str) -> str:
    """``chip`` | ``block`` | ``cu`` | ``sub`` for the noun phrase after "per"/"each" (first word that is a known
    noun decides; a phrase of unknown nouns is a sub-unit)."""
    if re.match(rf"(?:\w+\s+)?{CU_NOUNS}\b", words):
        return "cu"
    for word in words.split():
        if re.fullmatch(CHIP_NOUNS, word):
            return "chip"
        if re.fullmatch(BLOCK_NOUNS, word):
            return "block"
        if re.fullmatch(CU_NOUNS, word):
            return "cu"
    return "sub"


def without_parentheticals(text: str) -> str:
    """`text` with short parentheticals (up to 120 characters) blanked out, positions kept."""
    return re.sub(r"\([^()]{0,120}\)", lambda m: " " * len(m.group(0)), text)


def normalize_space(text: str) -> str:
    """All whitespace runs as single spaces."""
    return " ".join(text.split())


#: Longest text read as one sentence (a work bound that keeps extraction linear in its text: every clause is read
#: with its sentence). Real sentences are far shorter; text without sentence ends (a minified or generated page) is
#: cut at clause boundaries into pieces of at most this many characters.
MAX_SENTENCE_CHARS = 1000


def sentences(paragraph: str) -> list[str]:
    """Sentences of one paragraph (whitespace collapsed), none longer than `MAX_SENTENCE_CHARS`. Endnote markers
    glued after a period (``PFLOP/s.MI300-11 For``) end a sentence."""
    text = normalize_space(paragraph)
    if not text:
        return []
    text = re.sub(r"(?<=[a-z/%)])\.([A-Z]{1,5}\d{2,4}-\d+)(?=\s)", r". \1", text)
    text = _CJK_FULL_STOP.sub("\u3002\n", text)  # "。" ends a sentence with or without a space after it
    out = [re.sub(r"^-\s+", "", s.strip()) for part in text.split("\n") for s in _SENTENCE_END.split(part)
           if s.strip()]
    return [piece for s in out for piece in (_cut_long(s) if len(s) > MAX_SENTENCE_CHARS else (s,))]


def _cut_long(text: str) -> list[str]:
    """`text` in pieces of at most `MAX_SENTENCE_CHARS`, cut after the last ``,`` or ``;`` (else space) in range."""
    pieces = []
    while len(text) > MAX_SENTENCE_CHARS:
        window = text[:MAX_SENTENCE_CHARS]
        cut = max(window.rfind(", "), window.rfind("; "))
        cut = cut + 1 if cut > MAX_SENTENCE_CHARS // 2 else (window.rfind(" ") if window.rfind(" ") > 0
                                                               else MAX_SENTENCE_CHARS)
        pieces.append(text[:cut].strip())
        text = text[cut:].strip()
    return [p for p in (*pieces, text) if p]


def clauses(sentence: str) -> list[str]:
    """Clauses of a sentence, split at commas, semicolons and conjunctions (for product attribution); short
    parentheticals (up to 100 characters) are not split."""
    protected = [m.span() for m in re.finditer(r"\([^()]{0,100}\)", sentence)]
    out, start = [], 0
    for match in _CLAUSE_SPLIT.finditer(sentence):
        if any(a < match.start() < b for a, b in protected) or _coordinated_noun(sentence[start:match.start()], match):
            continue
        out.append(sentence[start:match.start()])
        start = match.end()
    out.append(sentence[start:])
    return [piece for c in out if c.strip() for piece in _split_product_aside(c.strip())]


def _coordinated_noun(left: str, conjunction: re.Match) -> bool:
    """Whether a conjunction joins two nouns of one label rather than two clauses ("FP16 and BF16: 36.9 TFLOPS"):
    the words before it are at most three, hold no figure of their own and name no product."""
    models = [m.group(0) for m in _PRODUCT.finditer(left)]
    return (conjunction.group(0).strip().lower() == "and" and 0 < len(left.split()) <= 3
            and not re.search(r"(?<![A-Za-z\d])\d", left) and all(_DATA_TYPE.fullmatch(m) for m in models))


#: Data-type names, the only model-shaped words a coordinated label may hold ("FP16 and BF16").
_DATA_TYPE = re.compile(r"(?:fp|bf|tf|u?int|mxfp|nvfp)\d+|e\dm\d", re.IGNORECASE)


#: A product name followed by a parenthetical of figures: "the Vessel V5-48 (40 sectors, 1,400 MHz)".
_PRODUCT_ASIDE = re.compile(r"(?P<name>(?<![\w\-])[A-Za-z]{1,6}-?\d{1,4}[A-Za-z]{0,3}(?:-(?:\d{1,4}|[A-Z]{1,3}))?)"
                            r"\s*\((?P<inner>[^()]*\d[^()]*)\)")


def _split_product_aside(clause: str) -> list[str]:
    """A clause that names a product and then another product with its figures in parentheses ("The V7-48
    replaces the V5-48 (40 sectors, 1,400 MHz)") in two: the figures are the second product's, so they become a
    clause of their own that names it ("V5-48 (40 sectors, 1,400 MHz)"); the text before keeps its subject."""
    for match in _PRODUCT_ASIDE.finditer(clause):
        before = clause[:match.start()]
        if not products_in(before) or products_in(match.group("name")) == products_in(before)[-1:]:
            continue
        rest = clause[match.end():].strip(" ,;")
        return [p for p in (before.strip() + " " + match.group("name"), match.group(0), rest) if p.strip(" .,;")]
    return [clause]


def paragraphs(text: str) -> list[str]:
    """Paragraphs: blank-line separated blocks, with every list item on its own."""
    out: list[str] = []
    current: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            if current:
                out.append(" ".join(current))
                current = []
            continue
        if _BULLET.match(line) and current:
            out.append(" ".join(current))
            current = []
        current.append(_BULLET.sub("", line) if _BULLET.match(line) else line.strip())
    if current:
        out.append(" ".join(current))
    return out


def locator_of(chunk: Chunk, extra: str = "") -> str:
    """``p.12 > Compute Units > row 'MI300X'``-style locator (page, section, then `extra`)."""
    parts = []
    if chunk.page is not None:
        parts.append(f"p.{chunk.page}")
    if chunk.section:
        parts.append(chunk.section)
    if extra:
        parts.append(extra)
    return " > ".join(parts)


def prose_records(text: str, chunk: Chunk, tokens: set[str]) -> list[Record]:
    """One record per clause of every sentence in `text` (a chunk's prose, tables already removed)."""
    records: list[Record] = []
    context = chunk.section
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # Markdown links and images -> their text
    pending = ""  # a question that ended its paragraph: the next paragraph answers it
    for paragraph in paragraphs(text):
        previous = ""
        topic = ""
        asked, pending = pending, ""
        for sentence in sentences(paragraph):
            if is_speaker_mark(sentence):
                continue  # "A:" split off its answer
            question = is_question(sentence)
            sentence = _DIALOGUE_MARK.sub("", sentence)  # "A: Each core has ...": the answer, not its speaker
            asked = sentence if question else asked
            pending = sentence if question else ""
            topic = topic_of(sentence) or topic  # a label sentence labels the sentences after it
            parts = clauses(sentence)
            subject_levels = level_cues(without_parentheticals(parts[0])) & {"sub"} if parts else set()
            prev_clause: tuple[str, str] | None = None
            prev_levels: set[str] = set()
            for index, clause in enumerate(parts):
                levels = level_cues(without_parentheticals(clause)) | (subject_levels if index else set())
                if index and re.match(r"\s*\d", clause):  # "carries four HX-7 chips and 512 GB": the same verb's
                    levels |= prev_levels & {"multi"}  # object, its chips' (through a list of such figures)
                prev_levels = levels
                product = clause_product(clause, sentence, context, tokens, prev_clause)
                prev_clause = (clause, product)
                subject = next((p for p in reversed(parts[:index]) if not _ASIDE.match(p)), "")
                records.append(Record(
                    text=clause, key=sentence, local=clause, quote=sentence, locator=locator_of(chunk),
                    chunk=chunk, product=product,
                    levels=levels, prev=previous, subject=subject, topic=topic, question="" if question else asked,
                ))
            previous = sentence
            asked = asked if question else ""  # the first sentence after a question answers it
    return records
