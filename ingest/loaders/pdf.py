"""PDF loader (pypdf): page text with running headers/footers removed, endnote markers detached, paragraphs
rebuilt from wrapped lines, figure/table captions kept, and table lines turned into rows that carry their table's
caption and header line (also across a page break).

Heuristics (layout-generic, no vendor rules):
- Boilerplate: a line within the first/last 3 lines of a page whose digit-normalized form recurs on at least half
  of the pages with text (and on 3 or more) is a running header/footer (page numbers, document banners).
- Endnote markers: an upper-case token ending in ``-NN`` glued to the end of a sentence or number
  (``2.6 PFLOP/s.MI300-11``) becomes ``2.6 PFLOP/s. [MI300-11]`` so the number stays a clean token.
- Paragraphs: a line continues the previous one when that one was wrapped (trailing space or hyphen, or at least
  70 % of the page's typical line length).
- Headings: an all-capitals line of 8+ letters that follows prose (not a run of diagram labels); it names the
  page's section until the next heading. A numbered heading line ("4.2.1 Per chip", "9. Errata to version 2.0")
  or a revision entry's name ("Version 3 (2027-05)") after a finished sentence starts a section of its own there
  (never joined to the paragraph above), so scope headings, errata sections and revision histories read in a PDF
  as in its Markdown form.
- Type size (`ingest.loaders.pdf_fonts`): a line set larger than the body text is a heading (a section of its own,
  as a Markdown heading; the document's first line in heading type is its title), and a line below a vertical gap
  wider than the page's line pitch starts a paragraph, so PDF forms keep the sections and paragraphs of their
  Markdown forms.
- Tables: after a ``Table N.`` caption, lines up to the next prose paragraph are rows (the first line without two
  numbers is the column header line; all-capitals lines without numbers are row-group labels). Other tables are
  read from pypdf's layout-mode text, where cells stand in columns (`ingest.loaders.pdf_tables`), and become one
  ``table_row`` section per row with its column headers, as Markdown and HTML tables do.
"""

from __future__ import annotations

import contextlib
import logging
import re
import warnings
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from core.errors import BadInputError
from ingest.loaders.common import (
    LoadedDocument,
    check_file_size,
    check_page_count,
    one_line,
    table_sections,
    title_from_path,
)
from ingest.loaders.pdf_fonts import body_size, heading_lines, page_runs, paragraph_starts, squeeze
from ingest.loaders.pdf_tables import LayoutTable, layout_tables
from knowledge.types import Section

_MARKER = r"[A-Z][A-Z0-9]*\d[A-Z0-9]*-\d{1,3}[a-z]?"
_MARKERS = rf"{_MARKER}(?:,\s*{_MARKER})*"
_GLUED = re.compile(rf"(?<=\S)\.({_MARKERS})(?=[\s,;)]|$)")
_SPACED = re.compile(rf"(?<=\.)\s+({_MARKERS})(?=\s|$)")
_CAPTION = re.compile(r"^(?:Figure|Fig\.|Table|Exhibit)\s+\d+[A-Za-z]?\s*[.:]", re.I)
_TABLE_CAPTION = re.compile(r"^Table\s+\d+", re.I)
_NUMBER = re.compile(r"\b\d[\d,]*(?:\.\d+)?")


def detach_endnote_markers(text: str) -> str:
    """``"2.6 PFLOP/s.MI300-11 For"`` -> ``"2.6 PFLOP/s. [MI300-11] For"`` (also lists: ``MI300-13, MI300-14``)."""
    text = _GLUED.sub(lambda m: f". [{m.group(1)}]", text)
    return _SPACED.sub(lambda m: f" [{m.group(1)}]", text)


@contextlib.contextmanager
def _quiet_pypdf() -> Iterator[None]:
    """Silence pypdf's logger (and its warnings) while a PDF is read: on a damaged file it logs lines such as
    ``EOF marker not found`` on stderr, while the one line the user needs is the `BadInputError` raised here."""
    logger = logging.getLogger("pypdf")
    saved = logger.level
    logger.setLevel(logging.CRITICAL + 1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(saved)


def load_pdf(path: Path, source: str) -> LoadedDocument:
    """Load a PDF into page-tagged sections (pypdf's own log lines are silenced while it reads).

    Raises:
        BadInputError: the file is empty, not a PDF, corrupt, encrypted (needs a password), or has no text layer.
    """
    with _quiet_pypdf():
        reader = _open(path)
        check_page_count(path, len(reader.pages))
        pages = [_page_lines(reader, i, path) for i in range(len(reader.pages))]
        headings, gaps = _headings(reader)
        tables = [_page_tables(reader, i, set(headings[i])) for i in range(len(reader.pages))]
        title = _title(reader)
    if not any(line.text for lines in pages for line in lines):
        raise BadInputError(f"{path}: PDF has no extractable text (scanned images? run OCR first)")
    boiler = _boilerplate(pages)
    pages = [_strip_boilerplate(lines, boiler) for lines in pages]
    title = _title_heading(pages, headings) or title or title_from_path(source)
    parser = _PageParser(source, title, _typical_length([line.text for lines in pages for line in lines]))
    for number, (lines, page_tables, page_headings, page_gaps) in enumerate(zip(pages, tables, headings, gaps),
                                                                          start=1):
        parser.parse(number, lines, page_tables, page_headings, page_gaps)
    return LoadedDocument(sections=parser.sections, title=title, pages=len(pages))


def _open(path: Path):
    from pypdf import PdfReader
    from pypdf.errors import DependencyError, FileNotDecryptedError, PdfReadError

    check_file_size(path, "PDF")
    data = path.read_bytes()
    if not data.strip():
        raise BadInputError(f"{path}: file is empty")
    if not data.lstrip()[:1024].startswith(b"%PDF") and b"%PDF" not in data[:1024]:
        raise BadInputError(f"{path}: not a PDF (no %PDF header)")
    try:
        reader = PdfReader(path, strict=False)
        if reader.is_encrypted:
            try:
                ok = reader.decrypt("")
            except (DependencyError, NotImplementedError, FileNotDecryptedError) as exc:
                raise BadInputError(f"{path}: PDF is encrypted and cannot be decrypted ({exc})") from exc
            if not ok:
                raise BadInputError(f"{path}: PDF is encrypted (a password is required); decrypt it first")
        _ = len(reader.pages)
    except BadInputError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, AttributeError, IndexError, OSError) as exc:
        raise BadInputError(f"{path}: corrupt PDF ({type(exc).__name__}: {_short(exc)})") from exc
    return reader


def _page_lines(reader, index: int, path: Path) -> list[_Line]:
    """Lines of page `index` with layout hints: `wrapped` = ends in a space or hyphen, `indented` = starts with
    whitespace (a continuation of a caption, in typical layouts)."""
    try:
        raw = reader.pages[index].extract_text() or ""
    except Exception as exc:  # pypdf raises many types on damaged content streams
        raise BadInputError(f"{path}: corrupt PDF page {index + 1} ({type(exc).__name__}: {_short(exc)})") from exc
    out = []
    for line in raw.splitlines():
        out.append(_Line(" ".join(line.split()), line.endswith((" ", "-", "\u00ad")), line[:1].isspace()))
    return out


def _headings(reader) -> tuple[list[dict[str, str]], list[set[str]]]:
    """Per page: squeezed text of each line set in heading type -> its whole heading, and the squeezed lines that
    start a paragraph below a vertical gap (`ingest.loaders.pdf_fonts`); empty where pypdf cannot report the runs
    of a page."""
    runs = []
    for page in reader.pages:
        try:
            runs.append(page_runs(page))
        except Exception:  # damaged content streams: no font evidence on that page, the text still loads
            runs.append([])
    body = body_size(runs)
    return [heading_lines(r, body) for r in runs], [paragraph_starts(r) for r in runs]


def _title_heading(pages: list[list[_Line]], headings: list[dict[str, str]]) -> str:
    """The document's title when its first text line is set in heading type (as a Markdown file's first ``#``
    heading is its title): that heading, whose lines are removed from the first page so it heads every section
    as the title, not as a section of its own. Empty otherwise (the PDF's metadata title or the file name is
    used)."""
    first = next((k for k, lines in enumerate(pages) if lines), None)
    if first is None or squeeze(pages[first][0].text) not in headings[first]:
        return ""
    whole = headings[first][squeeze(pages[first][0].text)]
    lines = pages[first]
    while lines and headings[first].get(squeeze(lines[0].text)) == whole:
        del headings[first][squeeze(lines.pop(0).text)]
    return whole


def _page_tables(reader, index: int, stops: set[str] | None = None) -> list[LayoutTable]:
    """Tables of page `index` from its layout-mode text, cut at heading lines `stops` (squeezed text); none when
    pypdf cannot lay the page out."""
    try:
        return layout_tables(reader.pages[index].extract_text(extraction_mode="layout") or "", stops)
    except Exception:  # layout mode fails on some damaged or unusual pages; the plain text still loads
        return []


def _table_starts(lines: list[_Line], tables: list[LayoutTable],
                  headings: dict[str, str] | None = None) -> dict[int, tuple[LayoutTable, int]]:
    """Line index where each table's lines begin in the page's plain text -> (table, index after its last line).

    Matched by words, not by line text: plain text may join a wrapped cell's lines, split them, or put a cell's
    second line ("Capacit" / "y") after the row. A table starts at a line (not a heading line, `headings`) whose
    words are all the table's and that shares words with its header; it goes on while each line's words are among
    the table's words not yet matched. A start whose run covers under 90 % of the table's words is no match (the
    next candidate is tried; without one the table's lines stay prose)."""
    headings = headings or {}
    out: dict[int, tuple[LayoutTable, int]] = {}
    i = 0
    for table in tables:
        words = Counter(w for line in table.lines for w in line.split())
        first = {w for line in table.lines[:table.header_lines] for w in line.split()}
        for start in range(i, len(lines)):
            line_words = lines[start].text.split()
            if not line_words or squeeze(lines[start].text) in headings or Counter(line_words) - words \
                    or not first & set(line_words):
                continue
            left, end = Counter(words), start
            while end < len(lines) and lines[end].text.split() and not Counter(lines[end].text.split()) - left:
                left -= Counter(lines[end].text.split())
                end += 1
            if sum(left.values()) <= 0.1 * sum(words.values()):
                out[start] = (table, end)
                i = end
                break
    return out


def _norm(line: str) -> str:
    return re.sub(r"\d+", "#", line.lower())


def _boilerplate(pages: list[list[_Line]]) -> set[str]:
    counts: Counter[str] = Counter()
    with_text = 0
    for lines in pages:
        texts = [line.text for line in lines if line.text]
        if not texts:
            continue
        with_text += 1
        counts.update({_norm(t) for t in texts[:3] + texts[-3:]})
    threshold = max(3, (with_text + 1) // 2)
    return {line for line, n in counts.items() if n >= threshold}


def _strip_boilerplate(lines: list[_Line], boiler: set[str]) -> list[_Line]:
    lines = [line for line in lines if line.text]
    edges = set(range(min(3, len(lines)))) | set(range(max(0, len(lines) - 3), len(lines)))
    return [line for i, line in enumerate(lines) if not (i in edges and _norm(line.text) in boiler)]


def _title(reader) -> str:
    try:
        meta = reader.metadata
        return one_line(str(meta.title)) if meta and meta.title else ""
    except Exception:  # broken info dictionaries are common and harmless
        return ""


#: A heading line by its shape: a section number and a short title ("4.2.1 Per chip", "9. Errata to version 2.0"),
#: or a revision entry's name ("Version 3 (2027-05)", "Revision C"); never a sentence (no closing full stop).
_NUMBERED_HEADING = re.compile(r"^\s*\d{1,2}(?:\.\d{1,3}){0,5}\.?\s+[A-Z][^\n]{0,78}[^\s.:;,]\s*$")
_REVISION_LINE = re.compile(r"^\s*(?:revision|rev\.|version|edition)\s+[\w.]{1,8}(?:\s+\([^()]{1,30}\))?\s*$",
                            re.IGNORECASE)
_MAX_HEADING_WORDS = 10


def is_heading_line(text: str) -> bool:
    """Whether a PDF line is a heading by its shape (`_NUMBERED_HEADING`, `_REVISION_LINE`; at most
    `_MAX_HEADING_WORDS` words; one number in its title, the section number and parentheticals aside; not a figure
    or table caption)."""
    title = re.sub(r"\([^()]*\)", "", re.sub(r"^\s*\d{1,2}(?:\.\d{1,3}){0,5}\.?\s+", "", text))
    if len(text.split()) > _MAX_HEADING_WORDS or _CAPTION.match(text) or _numbers(title) > 1:
        return False
    return bool(_NUMBERED_HEADING.match(text) or _REVISION_LINE.match(text))


def _upper_ratio(text: str) -> float:
    letters = [c for c in text if c.isalpha()]
    return sum(1 for c in letters if c.isupper()) / len(letters) if letters else 0.0


def _is_heading(text: str) -> bool:
    letters = sum(1 for c in text if c.isalpha())
    return (letters >= 8 and len(text) <= 90 and not _CAPTION.match(text) and _upper_ratio(text) >= 0.9
            and _numbers(text) <= 1)


def _numbers(text: str) -> int:
    return len(_NUMBER.findall(text))


def _ends_sentence(text: str) -> bool:
    return text.rstrip().endswith((".", ":", "?", "!", ".)", '."'))


@dataclass(frozen=True)
class _Line:
    text: str
    wrapped: bool
    indented: bool


@dataclass
class _Table:
    caption: str
    header: str = ""
    group: str = ""


class _PageParser:
    """Turns the lines of successive pages into sections; keeps the running heading and an open table."""

    def __init__(self, source: str, title: str, typical: float) -> None:
        self.source = source
        self.title = title
        self.typical = typical
        self.heading = ""
        self.table: _Table | None = None
        self.sections: list[Section] = []
        self.page = 0

    def parse(self, page: int, lines: list[_Line], tables: list[LayoutTable] | None = None,
              headings: dict[str, str] | None = None, gaps: set[str] | None = None) -> None:
        self.page = page
        headings = headings or {}
        gaps = set(gaps or ())
        if not lines:
            return
        starts = _table_starts(lines, tables or [], headings)
        if self.table and not (lines[0].text == self.table.header or _numbers(lines[0].text) >= 2):
            self.table = None  # a table continues on a new page only if it restarts with its header or a row
        self.heading = _page_heading(lines, self.table.header if self.table else "") or self.heading
        para: list[str] = []
        labels: list[str] = []
        i = 0
        while i < len(lines):
            line = lines[i]
            if i in starts and self.table is None:
                self._flush(para, labels)
                para, labels = [], []
                table, i = starts[i]
                self.sections.extend(table_sections(table.header, table.rows, self.source, self._path(),
                                                    page=self.page))
                continue
            if squeeze(line.text) in headings:  # set in heading type: a section of its own, as in Markdown
                self._flush(para, labels)
                para, labels = [], []
                self.table = None
                whole = headings[squeeze(line.text)]
                self.heading = whole
                self._emit(whole, "caption")
                i += 1
                while i < len(lines) and headings.get(squeeze(lines[i].text)) == whole:
                    i += 1
                if i < len(lines):
                    gaps.add(squeeze(lines[i].text))  # the line under a heading begins a paragraph
                continue
            if _CAPTION.match(line.text):
                self._flush(para, labels)
                para, labels = [], []
                i = self._caption(lines, i)
                continue
            if self.table is not None and (not self._is_prose(line) or self._header_line(line)):
                i = self._table_line(lines, i)
                continue
            self.table = None
            if is_heading_line(line.text) and (i == 0 or _ends_sentence(lines[i - 1].text)):
                self._flush(para, labels)
                para, labels = [], []
                self.heading = one_line(line.text)  # "4.2.1 Per chip", "Version 3 (2027-05)": a section of its own
                self._emit(line.text, "caption")
                i += 1
                continue
            if para and self._joins(lines[i - 1], line) and squeeze(line.text) not in gaps:
                para.append(("" if para[-1].endswith("-") else " ") + line.text)
            elif self._is_prose(line) or line.wrapped or squeeze(line.text) in gaps:  # a gap above: a paragraph
                self._flush(para, labels)
                para, labels = [line.text], []
            elif para and not labels:
                self._flush(para, [])
                para, labels = [], [line.text]
            else:
                labels.append(line.text)
            i += 1
        self._flush(para, labels)

    def _is_prose(self, line: _Line) -> bool:
        """A line of running text: as long as the page's lines, not capitals, and either few numbers or mostly
        words (a datasheet sentence holds several figures: "offer 108 or 132 SMs with up to 50 MB of L2")."""
        if len(line.text) < 0.7 * self.typical or _upper_ratio(line.text) >= 0.9:
            return False
        tokens = line.text.split()
        words = sum(1 for w in tokens if re.fullmatch(r"[A-Za-z][a-z'\-]*[,.;:]?", w))
        return _numbers(line.text) < 2 or (len(tokens) >= 10 and words >= 0.5 * len(tokens))

    def _header_line(self, line: _Line) -> bool:
        """A table's first line is its column header even when it is as long as prose (but never wrapped)."""
        return self.table is not None and not self.table.header and not line.wrapped \
            and not _ends_sentence(line.text)

    def _joins(self, prev: _Line, line: _Line) -> bool:
        """`line` continues the paragraph that `prev` ends: `prev` was wrapped or is a full-width line, except that
        a short line after a finished sentence is a heading or label; and an unfinished sentence always goes on."""
        if not _ends_sentence(prev.text) and not prev.text.endswith(":"):
            return True
        if len(line.text) < 0.5 * self.typical and not _ends_sentence(line.text):
            return False
        return prev.wrapped or len(prev.text) >= 0.7 * self.typical

    def _path(self) -> tuple[str, ...]:
        return (self.title, self.heading) if self.heading else (self.title,)

    def _emit(self, text: str, kind: str) -> None:
        text = detach_endnote_markers(one_line(text))
        if text:
            self.sections.append(Section(text=text, source=self.source, page=self.page,
                                         heading_path=self._path(), kind=kind))

    def _flush(self, para: list[str], labels: list[str]) -> None:
        if para:
            self._emit("".join(para), "prose")
        if labels:
            self._emit("; ".join(labels), "caption")

    def _caption(self, lines: list[_Line], i: int) -> int:
        """Emit the caption at line `i` with its continuation lines; open a table after ``Table N.``."""
        text = lines[i].text
        i += 1
        while i < len(lines) and (lines[i].indented or lines[i].text[:1].islower()) \
                and not _CAPTION.match(lines[i].text):
            text = text + lines[i].text if text.endswith("-") else f"{text} {lines[i].text}"
            i += 1
        self._emit(text, "caption")
        self.table = _Table(caption=detach_endnote_markers(text)) if _TABLE_CAPTION.match(text) else None
        return i

    def _table_line(self, lines: list[_Line], i: int) -> int:
        """Consume one table line (joined with its wrapped continuations); emit a row or update header/group."""
        table = self.table
        assert table is not None
        text = lines[i].text
        i += 1
        while lines[i - 1].wrapped and i < len(lines) and not self._is_prose(lines[i]) \
                and not _CAPTION.match(lines[i].text):
            text = f"{text} {lines[i].text}"
            i += 1
        if not table.header and _numbers(text) < 2:
            table.header = text
        elif text != table.header and _numbers(text) == 0 and text.upper() == text:
            table.group = text
        elif text != table.header:
            context = " | ".join(p for p in (table.caption, table.header, table.group) if p)
            self._emit(f"{context} | {text}", "table_row")
        return i


def _page_heading(lines: list[_Line], table_header: str = "") -> str:
    """The page's first heading: an all-capitals line at the top of the page or right after a full sentence
    (a continued table's repeated header line is not a heading)."""
    for i, line in enumerate(lines):
        if line.text != table_header and _is_heading(line.text) and (i == 0 or _ends_sentence(lines[i - 1].text)):
            text = line.text
            j = i + 1
            while lines[j - 1].wrapped and j < len(lines) and _upper_ratio(lines[j].text) >= 0.9:
                text = f"{text} {lines[j].text}"
                j += 1
            return text.rstrip(": ")
    return ""


def _typical_length(texts: list[str]) -> float:
    lengths = sorted(len(t) for t in texts if len(t) >= 20)
    if not lengths:
        return 80.0
    return float(lengths[int(0.75 * (len(lengths) - 1))])


def _short(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]
