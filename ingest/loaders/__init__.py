"""Document loaders: one function per format, chosen by file suffix, each returning a `LoadedDocument`.

| suffix | loader |
|---|---|
| .pdf | `ingest.loaders.pdf.load_pdf` (pypdf) |
| .md, .markdown | `ingest.loaders.markdown.load_markdown` (markdown-it-py; HTML tables via BeautifulSoup) |
| .rst, .rest | `ingest.loaders.rst.load_rst` (docutils) |
| .adoc, .asciidoc | `ingest.loaders.asciidoc.load_asciidoc` (sections, lists, ``|===`` tables) |
| .html, .htm | `ingest.loaders.html.load_html` (BeautifulSoup) |
| .txt, .text | `ingest.loaders.text.load_text` |
| .json, .jsonc, .yaml, .yml | `ingest.loaders.data_files.load_structured_file` (json, PyYAML) |
| .ini, .cfg, .conf | `ingest.loaders.data_files.load_ini_file` |

Every loader's output passes through `load_document`, which writes all text in one normal form
(`core.text.normalize_text`: Unicode NFKC, so PDF ligature glyphs such as U+FB01 become ``fi``) before anything is
chunked, keyword-indexed or embedded. `check_size` refuses a file over its format's limit from ``stat`` alone,
before anything reads or hashes it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from core.errors import BadInputError
from core.text import normalize_text
from ingest.loaders.common import LoadedDocument, check_file_size

#: Changes whenever loaders give other text for the same file ("2": NFKC normal form), so files are read again.
LOADER_VERSION = "2"


def _pdf(path: Path, source: str) -> LoadedDocument:
    from ingest.loaders.pdf import load_pdf

    return load_pdf(path, source)


def _markdown(path: Path, source: str) -> LoadedDocument:
    from ingest.loaders.markdown import load_markdown

    return load_markdown(path, source)


def _rst(path: Path, source: str) -> LoadedDocument:
    from ingest.loaders.rst import load_rst

    return load_rst(path, source)


def _asciidoc(path: Path, source: str) -> LoadedDocument:
    from ingest.loaders.asciidoc import load_asciidoc

    return load_asciidoc(path, source)


def _html(path: Path, source: str) -> LoadedDocument:
    from ingest.loaders.html import load_html

    return load_html(path, source)


def _text(path: Path, source: str) -> LoadedDocument:
    from ingest.loaders.text import load_text

    return load_text(path, source)


def _structured(path: Path, source: str) -> LoadedDocument:
    from ingest.loaders.data_files import load_structured_file

    return load_structured_file(path, source)


def _ini(path: Path, source: str) -> LoadedDocument:
    from ingest.loaders.data_files import load_ini_file

    return load_ini_file(path, source)


LOADERS: dict[str, Callable[[Path, str], LoadedDocument]] = {
    ".pdf": _pdf, ".md": _markdown, ".markdown": _markdown, ".rst": _rst, ".rest": _rst,
    ".adoc": _asciidoc, ".asciidoc": _asciidoc,
    ".html": _html, ".htm": _html, ".txt": _text, ".text": _text,
    ".json": _structured, ".jsonc": _structured, ".yaml": _structured, ".yml": _structured,
    ".ini": _ini, ".cfg": _ini, ".conf": _ini,
}


def is_supported(path: Path) -> bool:
    """True if `path`'s suffix has a loader."""
    return path.suffix.lower() in LOADERS


_KIND = {".pdf": "PDF", ".md": "Markdown", ".markdown": "Markdown", ".rst": "reStructuredText",
         ".rest": "reStructuredText", ".adoc": "AsciiDoc", ".asciidoc": "AsciiDoc",
         ".html": "HTML", ".htm": "HTML", ".txt": "plain", ".text": "plain",
         ".json": "JSON", ".jsonc": "JSON", ".yaml": "YAML", ".yml": "YAML", ".ini": "INI", ".cfg": "INI",
         ".conf": "INI"}


def check_size(path: Path) -> int:
    """Size of `path` in bytes from ``stat``, within its format's limit (`ingest.loaders.common.check_file_size`).

    Raises:
        BadInputError: over the limit, or the file cannot be stat'ed.
    """
    try:
        return check_file_size(path, _KIND.get(path.suffix.lower(), "plain"))
    except OSError as exc:
        raise BadInputError(f"{path}: cannot read ({exc.strerror or exc})") from exc


def load_document(path: Path, source: str | None = None) -> LoadedDocument:
    """Load `path` with the loader for its suffix; `source` is the display name stored with each section. Section
    texts, headings and the title are returned in the normal form of `core.text.normalize_text`.

    Raises:
        BadInputError: unsupported suffix, unreadable file, a file over its format's limit, or a format-specific
            problem (the message names the file).
    """
    loader = LOADERS.get(path.suffix.lower())
    if loader is None:
        raise BadInputError(f"{path}: unsupported file type {path.suffix or '(none)'!r}; "
                            f"supported: {', '.join(sorted(LOADERS))}")
    check_size(path)
    try:
        return _normalized(loader(path, source or path.name))
    except OSError as exc:
        raise BadInputError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    except RecursionError as exc:
        raise BadInputError(f"{path}: document nesting too deep to parse") from exc


def _normalized(doc: LoadedDocument) -> LoadedDocument:
    sections = [replace(s, text=normalize_text(s.text), heading_path=tuple(normalize_text(h) for h in s.heading_path))
                for s in doc.sections]
    return LoadedDocument(sections=sections, title=normalize_text(doc.title), pages=doc.pages, notes=doc.notes)


__all__ = ["LOADERS", "LOADER_VERSION", "LoadedDocument", "check_size", "is_supported", "load_document"]
