"""reStructuredText loader (docutils doctree), tolerant of Sphinx-only directives and roles.

- Sections give the heading path; a paragraph that is only bold text (``**L2 Cache**``) acts as a sub-heading for
  the paragraphs that follow it.
- Tables (``list-table``, grid and simple tables): one ``table_row`` section per body row, carrying the header row
  (however far above it sits in the source) and the table's title, ``:name:``, enclosing tab title, or the short
  paragraph that introduces it.
- Field lists (``:Compute clock: 2,400 MHz``, the document's docinfo included) give one ``- Name: value`` item
  each; definition-list items give one ``Term: definition`` paragraph each.
- Directives docutils does not know (``tab-set``, ``tab-item``, ``note`` variants, ...) are parsed as containers
  whose argument extends the heading path; code directives keep their text; ``toctree`` is dropped.
"""

from __future__ import annotations

import io
import re
from collections import defaultdict
from pathlib import Path

from docutils import nodes
from docutils.core import publish_doctree
from docutils.parsers.rst import Directive, directives, roles

from core.errors import BadInputError
from ingest.loaders.common import LoadedDocument, clean, one_line, read_text_file, table_sections, title_from_path
from knowledge.types import Section

_CODE_DIRECTIVES = {"code-block", "sourcecode", "literalinclude", "highlight", "code-cell", "doxygenfunction"}
_DROP_DIRECTIVES = {"toctree", "index", "only", "raw", "include", "autosummary"}
_SETTINGS = {
    "report_level": 5, "halt_level": 5, "warning_stream": io.StringIO(), "file_insertion_enabled": False,
    "raw_enabled": False, "doctitle_xform": False, "sectsubtitle_xform": False, "syntax_highlight": "none",
    "input_encoding": "unicode", "_disable_config": True,
}


def load_rst(path: Path, source: str) -> LoadedDocument:
    """Load a reStructuredText file into sections.

    Raises:
        BadInputError: empty or binary file, or docutils cannot parse it.
    """
    text = read_text_file(path, "reStructuredText")
    sections = rst_sections(text, source, (), path_for_errors=str(path))
    title = next((s.heading_path[0] for s in sections if s.heading_path), "") or title_from_path(source)
    return LoadedDocument(sections=sections, title=title)


def rst_sections(text: str, source: str, heading_path: tuple[str, ...], lead_in: str = "",
                 path_for_errors: str | None = None) -> list[Section]:
    """Sections of reStructuredText `text` under an enclosing `heading_path`."""
    _register_unknown(text)
    try:
        doctree = publish_doctree(text, settings_overrides=dict(_SETTINGS, warning_stream=io.StringIO()))
    except Exception as exc:  # docutils raises many types on malformed input
        raise BadInputError(f"{path_for_errors or source}: cannot parse reStructuredText: {exc}") from exc
    walker = _Walker(source, list(heading_path), lead_in)
    walker.walk(doctree)
    return walker.sections


def list_table_sections(argument: str, body: str, source: str, heading_path: tuple[str, ...],
                        lead_in: str = "") -> list[Section]:
    """Row sections of a MyST ``{list-table}`` fence (same syntax as the RST directive's options and body)."""
    indented = "\n".join(("   " + line) if line.strip() else "" for line in body.splitlines())
    rst = f".. list-table:: {argument}\n{indented}\n"
    return [s for s in rst_sections(rst, source, heading_path, lead_in) if s.kind == "table_row"]


class _Generic(Directive):
    """A directive docutils does not know: its content is parsed as ordinary RST inside a titled container."""

    optional_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec = defaultdict(lambda: directives.unchanged)

    def run(self) -> list[nodes.Node]:
        node = nodes.container()
        node["chiplore_title"] = one_line(self.arguments[0]) if self.arguments else ""
        self.state.nested_parse(self.content, self.content_offset, node)
        return [node]


class _Code(_Generic):
    def run(self) -> list[nodes.Node]:
        return [nodes.literal_block(text="\n".join(self.content))]


class _Drop(_Generic):
    def run(self) -> list[nodes.Node]:
        return []


def _generic_role(name, rawtext, text, lineno, inliner, options=None, content=None):  # noqa: ARG001 - docutils API
    shown = re.sub(r"\s*<[^>]*>\s*$", "", text) or text
    return [nodes.Text(shown.lstrip("~!"))], []


def _register_unknown(text: str) -> None:
    """Register stand-ins for every directive and role used in `text` that docutils does not provide."""
    known = set(directives._directive_registry) | set(directives._directives)
    for name in set(re.findall(r"^\s*\.\.\s+([\w:.-]+)::", text, re.M)) - known:
        cls = _Code if name in _CODE_DIRECTIVES else _Drop if name in _DROP_DIRECTIVES else _Generic
        directives.register_directive(name, cls)
    known_roles = set(roles._role_registry) | set(roles._roles)
    for name in set(re.findall(r":([\w:.-]+):`", text)) - known_roles:
        roles.register_local_role(name, _generic_role)


class _Walker:
    def __init__(self, source: str, path: list[str], lead_in: str) -> None:
        self.source = source
        self.path = path
        self.sections: list[Section] = []
        self.last_prose = lead_in
        self.titles: list[str] = []
        self.pseudo = False

    def walk(self, node: nodes.Node, bullet: bool = False) -> None:
        for child in node.children:
            self._visit(child, bullet)

    def _visit(self, node: nodes.Node, bullet: bool) -> None:
        if isinstance(node, (nodes.system_message, nodes.comment, nodes.substitution_definition, nodes.target,
                             nodes.pending, nodes.meta if hasattr(nodes, "meta") else nodes.pending)):
            return
        if isinstance(node, nodes.section):
            self._section(node)
        elif isinstance(node, nodes.title):
            return
        elif isinstance(node, nodes.table):
            self._table(node)
        elif isinstance(node, nodes.paragraph):
            self._paragraph(node, bullet)
        elif isinstance(node, (nodes.literal_block, nodes.line_block, nodes.doctest_block)):
            self._add(node.astext(), "prose")
        elif isinstance(node, nodes.caption):
            self._add(node.astext(), "caption")
        elif isinstance(node, nodes.container) and node.get("chiplore_title"):
            self._titled(node, bullet)
        elif isinstance(node, nodes.definition_list_item):
            self._definition(node)
        elif isinstance(node, nodes.field):
            self._field(one_line(node[0].astext()), node[1] if len(node) > 1 else None)
        elif isinstance(node, nodes.Bibliographic) and not isinstance(node, nodes.field):
            self._field(node.tagname.title(), node)  # docinfo ":Version: 2": docutils keeps only the value
        elif isinstance(node, (nodes.bullet_list, nodes.enumerated_list)):
            self.walk(node, bullet=True)
        elif isinstance(node, nodes.Element):
            self.walk(node, bullet)

    def _section(self, node: nodes.section) -> None:
        title = next((c for c in node.children if isinstance(c, nodes.title)), None)
        saved = (list(self.path), self.pseudo)
        self._end_pseudo()
        self.path.append(one_line(title.astext()) if title else "")
        self.last_prose = ""
        self.walk(node)
        self.path, self.pseudo = saved

    def _titled(self, node: nodes.container, bullet: bool) -> None:
        saved = (list(self.path), self.pseudo)
        self.path.append(node["chiplore_title"])
        self.titles.append(node["chiplore_title"])
        self.pseudo = False
        self.walk(node, bullet)
        self.titles.pop()
        self.path, self.pseudo = saved

    def _paragraph(self, node: nodes.paragraph, bullet: bool) -> None:
        kids = [c for c in node.children if not (isinstance(c, nodes.Text) and not c.strip())]
        if not bullet and len(kids) == 1 and isinstance(kids[0], nodes.strong):
            self._end_pseudo()
            self.path.append(one_line(kids[0].astext()))
            self.pseudo = True
            return
        self._add(("- " if bullet else "") + one_line(node.astext()), "prose")

    def _definition(self, node: nodes.definition_list_item) -> None:
        """A definition-list item (a glossary entry ``Term`` + indented definition) as one ``Term: definition``
        paragraph, so that the term stays with what defines it (docutils keeps the term in its own node)."""
        term = one_line(" ".join(t.astext() for t in node.findall(nodes.term)))
        body = " ".join(one_line(d.astext()) for d in node.findall(nodes.definition))
        self._add(f"{term}: {body}" if term else body, "prose")

    def _field(self, name: str, body: nodes.Node | None) -> None:
        """A field-list item (``:Compute clock: 2,400 MHz``) as a ``- Name: value`` list item, the form of a
        Markdown ``key: value`` item, so that the value keeps its label (docutils keeps the name apart)."""
        value = one_line(body.astext()) if body is not None else ""
        if name and value:
            self._add(f"- {name}: {value}", "prose")

    def _end_pseudo(self) -> None:
        if self.pseudo:
            self.path.pop()
            self.pseudo = False

    def _table(self, node: nodes.table) -> None:
        title = next((c.astext() for c in node.children if isinstance(c, nodes.title)), "")
        names = [n.replace("-", " ") for n in node.get("names", [])]
        caption = one_line(title) or (self.titles[-1] if self.titles else "") or _lead_in(self.last_prose)
        if not caption and names:
            caption = names[0]
        header: list[str] = []
        rows: list[list[str]] = []
        for group in node.findall(nodes.tgroup):
            for part in group.children:
                part_rows = [[one_line(e.astext()) for e in r.findall(nodes.entry)]
                             for r in part.findall(nodes.row)]
                if isinstance(part, nodes.thead) and part_rows:
                    header = part_rows[-1]
                elif isinstance(part, nodes.tbody):
                    rows.extend(part_rows)
        self.sections.extend(table_sections(header, rows, self.source, tuple(self.path), caption))

    def _add(self, text: str, kind: str) -> None:
        text = clean(text)
        if text:
            self.sections.append(Section(text=text, source=self.source, heading_path=tuple(self.path), kind=kind))
            self.last_prose = text


def _lead_in(paragraph: str) -> str:
    text = one_line(paragraph)
    return text if 0 < len(text) <= 240 else ""
