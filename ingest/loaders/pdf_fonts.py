"""Headings of PDF pages known by their type size: lines set larger than the document's body text.

A PDF's text layer keeps no heading markup, but every text run carries its font size (the ``Tf`` operand scaled by
the text and transformation matrices). Whoever writes the PDF (a word processor, LaTeX, a report generator) sets
headings larger than the running text, so a line whose runs are all at least `RATIO` times the body size is a
heading. The body size is the size that holds the most characters of the document's long runs (the running text),
so a table set smaller than the body does not count, and bold text at body size (table headers) is no heading.

Consecutive heading lines (a heading that wraps) are one heading. Lines are matched by their text with whitespace
removed, so the loader can look up the lines of pypdf's plain text (which may space a line differently).
"""

from __future__ import annotations

from collections import Counter

#: How much larger than the body size a heading's type must be (an 11 pt heading over 10 pt body text is one).
RATIO = 1.05
#: Longest heading, in words (longer lines in large type are display text, not section titles).
MAX_WORDS = 14
#: Shortest text run that counts as running text when the body size is measured.
RUNNING_CHARS = 40
#: Share of the running text's characters the body size must hold (headings hold far less).
BODY_SHARE = 0.3


def squeeze(text: str) -> str:
    """Text with all whitespace removed: the key lines are matched by."""
    return "".join(text.split())


def page_runs(page) -> list[tuple[float, float, str]]:
    """(baseline y, font size in points, text) of each text run of a pypdf page, in content-stream order."""
    runs: list[tuple[float, float, str]] = []

    def visit(text, cm, tm, font_dict, font_size):  # pypdf's visitor_text signature
        if text and text.strip():
            scale = abs(tm[0] * cm[0] + tm[1] * cm[2]) or abs(tm[3] * cm[3]) or 1.0
            y = tm[5] * cm[3] + cm[5]
            runs.append((round(y, 1), float(font_size) * scale, text))

    page.extract_text(visitor_text=visit)
    return runs


def body_size(pages_runs: list[list[tuple[float, float, str]]]) -> float:
    """The body font size (rounded to 0.5 pt): the largest size holding at least `BODY_SHARE` of the characters of
    the document's running text (runs of `RUNNING_CHARS` or more characters), so a table-heavy brief's smaller
    table type does not pass for the body; of all runs when none is that long; 0 without text."""
    counts: Counter[float] = Counter()
    runs = [r for page in pages_runs for r in page]
    running = [r for r in runs if len(r[2].strip()) >= RUNNING_CHARS] or runs
    for _, size, text in running:
        counts[round(size * 2) / 2] += len(text.strip())
    total = sum(counts.values())
    return max((size for size, n in counts.items() if n >= BODY_SHARE * total), default=0.0)


def heading_lines(runs: list[tuple[float, float, str]], body: float) -> dict[str, str]:
    """Squeezed text of each heading line of a page -> the whole heading (its wrapped lines joined).

    A line is the runs on one baseline; it is a heading when every run is at least `RATIO` x `body` and it has
    at most `MAX_WORDS` words, and does not end like
    a sentence (".", ",", ";"). Heading lines whose baselines are less than 1.6 x their size apart are one
    heading."""
    if body <= 0:
        return {}
    lines: list[tuple[float, float, str]] = []  # (y, smallest size, text)
    for y, size, text in runs:
        if lines and abs(lines[-1][0] - y) < 0.5:
            last = lines[-1]
            lines[-1] = (last[0], min(last[1], size), last[2] + text)
        else:
            lines.append((y, size, text))
    out: dict[str, str] = {}
    group: list[tuple[float, float, str]] = []
    for line in lines + [(0.0, 0.0, "")]:
        is_heading = line[1] >= RATIO * body and len(line[2].split()) <= MAX_WORDS \
            and not line[2].rstrip().endswith((".", ",", ";"))  # a sentence is no heading
        if is_heading and group and abs(group[-1][0] - line[0]) < 1.6 * line[1]:
            group.append(line)
            continue
        if group:
            whole = " ".join(" ".join(g[2].split()) for g in group)
            out.update({squeeze(g[2]): whole for g in group})
        group = [line] if is_heading else []
    return out


#: A line starts a new paragraph when the space above its baseline exceeds this many times the page's usual line
#: pitch (the spacing of wrapped lines within a paragraph).
PARAGRAPH_GAP = 1.3


def paragraph_starts(runs: list[tuple[float, float, str]]) -> set[str]:
    """Squeezed text of each line of a page that stands below a gap wider than `PARAGRAPH_GAP` x the page's usual
    line pitch (the smallest distance between consecutive baselines that recurs): paragraphs that the plain text runs
    together. Empty when the page has too few lines to know its pitch."""
    lines: list[tuple[float, str]] = []
    for y, _, text in runs:
        if lines and abs(lines[-1][0] - y) < 0.5:
            lines[-1] = (lines[-1][0], lines[-1][1] + text)
        else:
            lines.append((y, text))
    gaps = Counter(round(2 * (a[0] - b[0])) / 2 for a, b in zip(lines, lines[1:]) if a[0] > b[0])
    repeated = [gap for gap, n in gaps.items() if n >= 2]
    if not repeated:
        return set()
    pitch = min(repeated)
    return {squeeze(b[1]) for a, b in zip(lines, lines[1:]) if a[0] - b[0] > PARAGRAPH_GAP * pitch}
