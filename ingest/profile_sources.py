"""Documents -> `Chunk`s for profile extraction outside `chiplore onboard` (evaluation, tests, re-extraction).

`document_chunks(chip, paths)` uses the onboarding loaders and chunker (``ingest.loaders``, ``ingest.chunker``)
when they are installed, so the evaluation measures the real onboarding path. Without them it falls back to
plain reads: Markdown and reStructuredText split at headings (tables left raw: the extractor parses raw pipe
tables and list-tables), PDF one chunk per page (pypdf text), anything else one chunk per file.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from core.errors import BadInputError
from knowledge.types import Chunk

_MD_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+])\1{2,}\s*$")


def document_chunks(chip: str, paths: list[Path]) -> tuple[list[Chunk], str]:
    """Chunks of `paths` for `chip` and the name of the path used (``"ingest.loaders"`` or ``"plain reads"``).

    Raises:
        BadInputError: a path does not exist or cannot be read.
    """
    loaded = _with_onboarding_loaders(chip, paths)
    if loaded is not None:
        return loaded, "ingest.loaders"
    chunks: list[Chunk] = []
    for path in paths:
        chunks.extend(plain_chunks(chip, path))
    return chunks, "plain reads"


def _with_onboarding_loaders(chip: str, paths: list[Path]) -> list[Chunk] | None:
    """Chunks exactly as `chiplore onboard` makes them (``load_document`` then ``chunk_sections``), or None
    when those modules are not installed."""
    try:
        from ingest.chunker import chunk_sections  # type: ignore[import-not-found]
        from ingest.loaders import load_document  # type: ignore[import-not-found]
    except ImportError:
        return None
    chunks: list[Chunk] = []
    for path in paths:
        document = load_document(Path(path), Path(path).name)
        chunks.extend(chunk_sections(document.sections, chip, title=document.title))
    return chunks


def _chunk(chip: str, source: str, text: str, page: int | None = None, section: str = "") -> Chunk:
    digest = hashlib.sha256(f"{chip}|{source}|{page}|{section}|{text}".encode()).hexdigest()[:32]
    return Chunk(id=digest, text=text, chip=chip, source=source, page=page, section=section)


def plain_chunks(chip: str, path: Path) -> list[Chunk]:
    """Chunks of one file by plain reading (see module docstring).

    Raises:
        BadInputError: missing, unreadable or encrypted file.
    """
    path = Path(path)
    if not path.is_file():
        raise BadInputError(f"{path}: no such file")
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        return _pdf_chunks(chip, path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise BadInputError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    if suffix in (".md", ".markdown"):
        return _split(chip, path.name, text, _md_heading)
    if suffix in (".rst", ".txt"):
        return _split(chip, path.name, text, _rst_heading)
    return [_chunk(chip, path.name, text)]


def _pdf_chunks(chip: str, path: Path) -> list[Chunk]:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(str(path))
        if reader.is_encrypted:
            raise BadInputError(f"{path}: PDF is encrypted")
        pages = [page.extract_text() or "" for page in reader.pages]
    except PdfReadError as exc:
        raise BadInputError(f"{path}: corrupt PDF: {exc}") from exc
    return [_chunk(chip, path.name, text, page=n) for n, text in enumerate(pages, start=1) if text.strip()]


def _md_heading(lines: list[str], i: int) -> tuple[str, int] | None:
    match = _MD_HEADING.match(lines[i])
    return (match.group(2), 1) if match else None


def _rst_heading(lines: list[str], i: int) -> tuple[str, int] | None:
    if i + 1 < len(lines) and lines[i].strip() and _RST_UNDERLINE.match(lines[i + 1]) \
            and len(lines[i + 1].strip()) >= len(lines[i].strip()) and not lines[i].startswith(" "):
        return lines[i].strip(), 2
    return None


def _split(chip: str, source: str, text: str, heading) -> list[Chunk]:
    """One chunk per heading's body, the heading itself kept out of the text (it goes into `section`)."""
    lines = text.splitlines()
    chunks, body, section, in_fence = [], [], "", False
    i = 0
    while i < len(lines):
        if lines[i].strip().startswith("```"):
            in_fence = not in_fence
        found = None if in_fence else heading(lines, i)
        if found:
            if "\n".join(body).strip():
                chunks.append(_chunk(chip, source, "\n".join(body), section=section))
            section, body = found[0], []
            i += found[1]
            continue
        body.append(lines[i])
        i += 1
    if "\n".join(body).strip():
        chunks.append(_chunk(chip, source, "\n".join(body), section=section))
    return chunks


def chunks_from_records(records) -> list[Chunk]:
    """Chunks rebuilt from knowledge-store records (``knowledge.store.StoredRecord``: ``id``, ``text``, ``metadata``
    with ``chip``, ``source``, ``page``, ``section``, ``kind`` and ``chunk_index``), in document reading order, so
    that `chiplore onboard` can re-extract a chip's profile from everything onboarded for it, unchanged files too."""
    chunks = []
    for record in records:
        meta = dict(record.metadata or {})
        page = meta.get("page")
        chunks.append(Chunk(
            id=record.id, text=record.text, chip=str(meta.get("chip", "")), source=str(meta.get("source", "")),
            page=int(page) if page is not None else None, section=str(meta.get("section", "")),
            kind=str(meta.get("kind", "prose")),
            metadata={k: v for k, v in meta.items() if isinstance(v, (str, int, float)) and k not in (
                "chip", "source", "page", "section", "kind")},
        ))
    chunks.sort(key=lambda c: (c.source, c.metadata.get("chunk_index", 0) if isinstance(
        c.metadata.get("chunk_index", 0), (int, float)) else 0))
    return chunks
