"""INI-style configuration text (device descriptors, runtime and driver configuration files): ``[section]``
headings, ``key = value`` lines and ``#`` / ``;`` comments, the format of Python's `configparser` (and of
systemd units, git config, Windows .ini files).

Each section becomes a heading; each ``key = value`` line a list item ``- key words: value (comment)``, the key's
underscores and dots read as spaces so that a unit written into the key (``cohort_memory_kib = 192``) is the item's
unit, as a unit in a table header is (`ingest.units.header_unit`). Comments are kept, not dropped as
`configparser` drops them: a descriptor's comments often define its terms ("# the level-2 cache ..."). A full-line
comment inside a section is prose of that section; the comment block before the first section is the document's
introduction.
"""

from __future__ import annotations

import re

from ingest.loaders.common import one_line
from knowledge.types import Section

_SECTION = re.compile(r"^\s*\[\s*([^\]\n]+?)\s*\]\s*$")
_ASSIGN = re.compile(r"^\s*([A-Za-z_][\w.\-]*)\s*=\s*(.*?)\s*$")
_COMMENT = re.compile(r"^\s*[#;]\s?(.*)$")
#: An inline comment: ``#`` or ``;`` after whitespace, outside a quoted value.
_INLINE = re.compile(r"""^((?:"[^"]*"|'[^']*'|[^#;"'])*?)\s+[#;]\s?(.*)$""")
#: Share of a file's non-blank, non-comment lines that must be section headers or ``key = value`` lines.
INI_LINE_SHARE = 0.8
#: ``key = value`` lines a file needs (besides at least one ``[section]``) to be read as INI.
INI_MIN_ASSIGNMENTS = 3


def looks_like_ini(text: str) -> bool:
    """True when `text` is INI-style: at least one ``[section]`` line, `INI_MIN_ASSIGNMENTS` ``key = value`` lines,
    and those two kinds make up `INI_LINE_SHARE` of its non-blank, non-comment lines. ``key: value`` lines alone
    (a plain-text manual's labels) are not INI."""
    lines = [line for line in text.splitlines() if line.strip() and not _COMMENT.match(line)]
    sections = sum(1 for line in lines if _SECTION.match(line))
    assigns = sum(1 for line in lines if _ASSIGN.match(line))
    return sections >= 1 and assigns >= INI_MIN_ASSIGNMENTS and sections + assigns >= INI_LINE_SHARE * len(lines)


def ini_sections(text: str, source: str) -> list[Section]:
    """Sections of INI-style `text`: the introduction's comments as prose, then per ``[section]`` its comments and
    its ``key = value`` items (one prose section per run of consecutive items, each item on its own line)."""
    out: list[Section] = []
    heading: tuple[str, ...] = ()
    items: list[str] = []

    def flush_items() -> None:
        if items:
            out.append(Section(text="\n".join(items), source=source, heading_path=heading))
            items.clear()

    comments: list[str] = []

    def flush_comments() -> None:
        text_ = one_line(" ".join(comments))
        if text_:  # a comment block is a remark of its own: ended as a sentence, so the items after it start anew
            end = "" if text_[-1] in ".!?:" else "."
            out.append(Section(text=text_ + end, source=source, heading_path=heading))
        comments.clear()

    for line in text.splitlines():
        if not line.strip():
            continue
        if m := _COMMENT.match(line):
            flush_items()
            comments.append(m.group(1))
        elif m := _SECTION.match(line):
            flush_comments()
            flush_items()
            heading = (section_title(m.group(1)),)
        elif m := _ASSIGN.match(line):
            flush_comments()
            items.append(_item(m.group(1), m.group(2)))
        else:
            flush_comments()
            items.append(one_line(line))
    flush_comments()
    flush_items()
    return out


def section_title(name: str) -> str:
    """``variant.F2-LP`` -> ``variant F2-LP``: dotted and underscored section names read as words."""
    return one_line(re.sub(r"[._]", " ", name))


def _item(key: str, raw: str) -> str:
    value, comment = raw, ""
    if m := _INLINE.match(raw):
        value, comment = m.group(1), m.group(2)
    value = value.strip().strip("\"'")
    words = one_line(re.sub(r"[._]", " ", key))
    return f"- {words}: {value}" + (f" ({one_line(comment)})" if comment.strip() else "")
