"""Document loaders: one function per format, chosen by file suffix, each returning a `LoadedDocument`.

| suffix | loader |
|---|---|
| .pdf | `ingest.loaders.pdf.load_pdf` (pypdf) |
| .md, .markdown | `ingest.loaders.markdown.load_markdown` (markdown-it-py; HTML tables via BeautifulSoup) |
| .rst, .rest | `ingest.loaders.rst.load_rst` (docutils) |
| .html, .htm | `ingest.loaders.html.load_html` (BeautifulSoup) |
| .txt, .text | `ingest.loaders.text.load_text` |
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from core.errors import BadInputError
from ingest.loaders.common import LoadedDocument

LOADER_VERSION = "1"


def _pdf(path: Path, source: str) -> LoadedDocument:
    from ingest.loaders.pdf import load_pdf

    return load_pdf(path, source)


def _markdown(path: Path, source: str) -> LoadedDocument:
    from ingest.loaders.markdown import load_markdown

    return load_markdown(path, source)


def _rst(path: Path, source: str) -> LoadedDocument:
    from ingest.loaders.rst import load_rst

    return load_rst(path, source)


def _html(path: Path, source: str) -> LoadedDocument:
    from ingest.loaders.html import load_html

    return load_html(path, source)


def _text(path: Path, source: str) -> LoadedDocument:
    from ingest.loaders.text import load_text

    return load_text(path, source)


LOADERS: dict[str, Callable[[Path, str], LoadedDocument]] = {
    ".pdf": _pdf, ".md": _markdown, ".markdown": _markdown, ".rst": _rst, ".rest": _rst,
    ".html": _html, ".htm": _html, ".txt": _text, ".text": _text,
}


def is_supported(path: Path) -> bool:
    """True if `path`'s suffix has a loader."""
    return path.suffix.lower() in LOADERS


def load_document(path: Path, source: str | None = None) -> LoadedDocument:
    """Load `path` with the loader for its suffix; `source` is the display name stored with each section.

    Raises:
        BadInputError: unsupported suffix, unreadable file, or a format-specific problem (the message names the file).
    """
    loader = LOADERS.get(path.suffix.lower())
    if loader is None:
        raise BadInputError(f"{path}: unsupported file type {path.suffix or '(none)'!r}; "
                            f"supported: {', '.join(sorted(LOADERS))}")
    try:
        return loader(path, source or path.name)
    except OSError as exc:
        raise BadInputError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    except RecursionError as exc:
        raise BadInputError(f"{path}: document nesting too deep to parse") from exc


__all__ = ["LOADERS", "LOADER_VERSION", "LoadedDocument", "is_supported", "load_document"]
