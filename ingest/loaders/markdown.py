"""Markdown loader (markdown-it-py, CommonMark + pipe tables), with HTML tables and MyST directives.

- Headings (ATX and setext) give the heading path; paragraphs, list items and code blocks are prose.
- A paragraph that opens with a bold label followed by a colon or a spaced dash (``**L2 cache** — 32 MB``,
  ``**L2 cache:** 32 MB``) is a label/value line: it is kept as a list item (``- L2 cache — 32 MB``) so the
  extractor reads it like a ``key: value`` item.
- A list item that only names a scope ("Each die", `SCOPE_ITEM`) adds that scope to the heading path of the
  items nested under it: a nested bullet hierarchy (package > each die > each cluster) keeps its levels.
- Pipe tables and HTML ``<table>`` blocks: one ``table_row`` section per row, carrying the header row and the
  table's caption (or the short paragraph that introduces it).
- A code block that holds data (a JSON, JSON-with-comments or YAML mapping; `ingest.loaders.structured`): one
  ``- key: value`` item per leaf, nested keys in the heading path.
- MyST fences: ``{list-table}`` is parsed with docutils like reStructuredText (one section per row);
  ``{figure}`` keeps its caption as a ``caption`` section; other directives keep their body as prose.
- YAML front matter is dropped.
"""

from __future__ import annotations

import re
from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.token import Token

from ingest.loaders.common import (
    LoadedDocument,
    clean,
    one_line,
    open_heading,
    read_text_file,
    table_sections,
    title_from_path,
)
from ingest.loaders.html import html_fragment_sections
from ingest.loaders.structured import DATA_LANGUAGES, MIN_LEAVES, data_sections, leaf_count, parse_data
from knowledge.types import Section

_FRONT_MATTER = re.compile(r"\A(?:\ufeff)?---[ \t]*\n.*?\n(?:---|\.\.\.)[ \t]*\n", re.S)
_DIRECTIVE = re.compile(r"^\{([\w:.-]+)\}\s*(.*)$")


def load_markdown(path: Path, source: str) -> LoadedDocument:
    """Load a Markdown file into sections.

    Raises:
        BadInputError: empty or binary file.
    """
    text = _FRONT_MATTER.sub("", read_text_file(path, "Markdown"), count=1)
    sections = markdown_sections(text, source)
    title = next((s.heading_path[0] for s in sections if s.heading_path), "") or title_from_path(source)
    return LoadedDocument(sections=sections, title=title)


#: A list item that only names a scope ("Each die", "**Per cluster**"): the items nested under it are stated at
#: that scope, so it joins their heading path (the innermost scope is the nearest enclosing one).
SCOPE_ITEM = re.compile(r"^[*_]*(?:each|every|per|one|a single)\s+[A-Za-z][\w\- ]{0,40}?[*_]*:?$", re.IGNORECASE)


def markdown_sections(text: str, source: str) -> list[Section]:
    """Sections of Markdown `text` in reading order (see module docstring)."""
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    return _Builder(source).run(tokens)


class _Builder:
    def __init__(self, source: str) -> None:
        self.source = source
        self.path: list[str] = []
        self.levels: list[int] = []
        self.sections: list[Section] = []
        self.last_prose = ""
        self.items: list[str] = []  # the text of the open list items, outermost first

    def run(self, tokens: list[Token]) -> list[Section]:
        i = 0
        list_depth = 0
        while i < len(tokens):
            tok = tokens[i]
            if tok.type == "heading_open":
                self._heading(int(tok.tag[1]), _inline_text(tokens[i + 1]))
                i += 3
                continue
            if tok.type in ("bullet_list_open", "ordered_list_open"):
                list_depth += 1
            elif tok.type in ("bullet_list_close", "ordered_list_close"):
                list_depth -= 1
                self.items = self.items[:list_depth]
            elif tok.type == "inline":
                text = _inline_text(tok)
                if list_depth:
                    self.items = self.items[:list_depth - 1] + [text]
                scopes = tuple(clean(t) for t in self.items[:list_depth] if SCOPE_ITEM.match(clean(t)))
                self._prose(("- " + text) if list_depth or _bold_label(tok) else text, scopes=scopes)
            elif tok.type == "table_open":
                i = self._table(tokens, i)
                continue
            elif tok.type in ("fence", "code_block"):
                self._fence(tok)
            elif tok.type == "html_block":
                self.sections.extend(html_fragment_sections(tok.content, self.source, tuple(self.path),
                                                            _lead_in(self.last_prose)))
            i += 1
        return self.sections

    def _heading(self, level: int, text: str) -> None:
        open_heading(self.levels, self.path, level, text)
        self.last_prose = ""

    def _prose(self, text: str, kind: str = "prose", scopes: tuple[str, ...] = ()) -> None:
        text = clean(text)
        if text:
            self.sections.append(Section(text=text, source=self.source, heading_path=tuple(self.path) + scopes,
                                         kind=kind))
            self.last_prose = text

    def _table(self, tokens: list[Token], i: int) -> int:
        header: list[str] = []
        rows: list[list[str]] = []
        row: list[str] = []
        in_head = False
        while tokens[i].type != "table_close":
            tok = tokens[i]
            if tok.type == "thead_open":
                in_head = True
            elif tok.type == "thead_close":
                in_head = False
            elif tok.type == "tr_open":
                row = []
            elif tok.type == "tr_close" and in_head:
                header.extend(row)
            elif tok.type == "tr_close":
                rows.append(row)
            elif tok.type == "inline":
                row.append(_inline_text(tok))
            i += 1
        self.sections.extend(table_sections(header, rows, self.source, tuple(self.path), _lead_in(self.last_prose)))
        return i + 1

    def _fence(self, tok: Token) -> None:
        match = _DIRECTIVE.match(tok.info.strip())
        if not match:
            data = _data_block(tok)
            if data is None:
                self._prose(tok.content)
            else:
                self.sections.extend(data_sections(data, self.source, tuple(self.path)))
            return
        name, argument = match.group(1), match.group(2).strip()
        body = tok.content
        if name == "list-table":
            from ingest.loaders.rst import list_table_sections

            self.sections.extend(list_table_sections(argument, body, self.source, tuple(self.path),
                                                     _lead_in(self.last_prose)))
        elif name in ("figure", "image"):
            self._prose(_directive_body(body), kind="caption")
        else:
            self._prose(" ".join(p for p in (argument, _directive_body(body)) if p))


def _data_block(tok: Token):
    """The parsed mapping of a code block that holds data (`ingest.loaders.structured`): its fence names a data
    language, or names none and it parses as a mapping of at least `MIN_LEAVES` values; else None (code stays
    prose)."""
    language = tok.info.strip().split(maxsplit=1)[0].lower() if tok.info.strip() else ""
    if language and language not in DATA_LANGUAGES:
        return None  # a fence in a programming language is code, even where YAML would read it as a mapping
    data = parse_data(tok.content)
    if data is None or (not language and leaf_count(data) < MIN_LEAVES):
        return None
    return data


def _directive_body(body: str) -> str:
    """Body of a MyST directive without its ``---`` YAML option block or ``:key: value`` option lines."""
    body = re.sub(r"\A---\n.*?\n---\n?", "", body, count=1, flags=re.S)
    return "\n".join(line for line in body.splitlines() if not re.match(r"^:[\w-]+:", line.strip())).strip()


def _inline_text(tok: Token) -> str:
    """Plain text of an inline token: link text kept, images by alt text, inline HTML tags dropped."""
    parts: list[str] = []
    for child in tok.children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "image":
            parts.append(child.content or "")
        elif child.type == "html_inline" and child.content.lower().startswith("<br"):
            parts.append(" ")
    return one_line("".join(parts))


#: A speaker mark of a question-and-answer text ("Q:", "A.", "Answer:"), bold in many FAQs.
_SPEAKER = re.compile(r"^\s*(?:Q|A|Question|Answer)\s*[:.]?\s*$", re.IGNORECASE)
#: The text after a bold label that makes it a label/value line: a colon, or a spaced em or en dash.
_LABEL_SEPARATOR = re.compile(r"^\s*(?::|[\u2014\u2013]\s)")


def _bold_label(tok: Token) -> bool:
    """True when the inline token (a paragraph) opens with bold text followed by a label separator
    (``**Label** — value``, ``**Label:** value``, ``**Label**: value``)."""
    kids = [c for c in tok.children or [] if not (c.type == "text" and not c.content)]
    if len(kids) < 4 or kids[0].type != "strong_open" or kids[2].type != "strong_close":
        return False
    label, rest = kids[1].content, kids[3].content if kids[3].type == "text" else ""
    if kids[1].type != "text" or not label.strip() or len(label) > 60 or _SPEAKER.match(label):
        return False  # "**A:** 512 threads": a speaker mark of a question-and-answer text, not a label
    return label.rstrip().endswith(":") or bool(_LABEL_SEPARATOR.match(rest))


def _lead_in(paragraph: str) -> str:
    text = one_line(paragraph)
    return text if 0 < len(text) <= 240 else ""
