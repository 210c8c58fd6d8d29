"""Onboard a chip's documents: walk paths, load, chunk, embed and store each file atomically and idempotently.

- Folders are walked recursively in sorted order (hidden files and folders are ignored); files without a loader
  are reported as skipped, never silently dropped.
- Each file's ``source`` is its path relative to the folder that was given (or its name, for a file given
  directly); (chip, source) identifies the file in the store.
- A file whose bytes, loader and chunker are unchanged since it was stored is not touched ("unchanged").
  An edited file replaces exactly its own chunks (`KnowledgeStore.replace_source`), and a file that fails to load
  leaves the store as it was.
- After the files, the chip's hardware profile is re-extracted from all of its stored chunks and merged into its
  profile (`ingest.profile_extract.update_profile_from_documents`; written to ``$CHIPLORE_HOME/profiles``);
  re-running on the same documents leaves the profile unchanged.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from core.errors import BadInputError, ChiploreError, StoreError
from ingest.chunker import CHUNKER_VERSION, ChunkingOptions, chunk_sections
from ingest.loaders import LOADER_VERSION, is_supported, load_document
from knowledge.store import KnowledgeStore

_CHIP = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


@dataclass
class FileReport:
    """Outcome for one file: status is ``stored``, ``unchanged``, ``failed`` or ``skipped``."""

    path: str
    source: str
    status: str
    pages: int | None = None
    chunks: int = 0
    added: int = 0
    removed: int = 0
    error: str = ""


@dataclass
class ProfileUpdate:
    """The hardware profile extracted during onboarding: where it was written, what was found and what not."""

    path: str | None = None
    found: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    summary: str = ""
    error: str = ""
    missing: list[str] = field(default_factory=list)
    advice: list[str] = field(default_factory=list)
    ambiguity: str = ""


@dataclass
class OnboardReport:
    """Summary of one `onboard` call (counts cover stored and unchanged files; `seconds` is wall time)."""

    chip: str
    files: list[FileReport] = field(default_factory=list)
    seconds: float = 0.0
    profile: ProfileUpdate | None = None

    def _with(self, *statuses: str) -> list[FileReport]:
        return [f for f in self.files if f.status in statuses]

    @property
    def documents(self) -> list[FileReport]:
        """Files now in the store (stored or unchanged)."""
        return self._with("stored", "unchanged")

    @property
    def failed(self) -> list[FileReport]:
        return self._with("failed")

    @property
    def skipped(self) -> list[FileReport]:
        return self._with("skipped")

    @property
    def pages(self) -> int:
        return sum(f.pages or 0 for f in self.documents)

    @property
    def chunks(self) -> int:
        return sum(f.chunks for f in self.documents)

    @property
    def ok(self) -> bool:
        """False when nothing could be stored although something was tried (the whole command failed)."""
        return bool(self.documents) or not self.failed

    def to_json(self) -> dict:
        """The ``chiplore onboard --json`` object (schema in docs/cli-json.md)."""
        return {
            "chip": self.chip, "seconds": round(self.seconds, 3), "ok": self.ok,
            "counts": {"files": len(self.documents), "stored": len(self._with("stored")),
                       "unchanged": len(self._with("unchanged")), "failed": len(self.failed),
                       "skipped": len(self.skipped), "pages": self.pages, "chunks": self.chunks},
            "files": [asdict(f) for f in self.files],
            "profile": asdict(self.profile) if self.profile is not None else None,
        }


def normalize_chip(chip: str) -> str:
    """Chip names are case-insensitive identifiers: ``MI300X`` -> ``mi300x``.

    Raises:
        BadInputError: empty or containing characters other than letters, digits, ``.``, ``_`` and ``-``.
    """
    name = (chip or "").strip().lower()
    if not _CHIP.match(name):
        raise BadInputError(f"chip name {chip!r}: use 1-64 letters, digits, '.', '_' or '-' (e.g. mi300x)")
    return name


def shipped_notes_dir() -> Path:
    """Folder of the chip notes packaged with chiplore (``hardware_profiles/notes``; one Markdown file per chip)."""
    return Path(__file__).resolve().parent.parent / "hardware_profiles" / "notes"


def collect_files(paths: Sequence[str | Path]) -> tuple[list[tuple[Path, str]], list[FileReport]]:
    """Expand `paths` into (file, source) pairs to load and reports for skipped files.

    Raises:
        BadInputError: a path does not exist (checked for all paths before anything is read).
    """
    resolved = []
    for raw in paths:
        path = Path(raw).expanduser()
        if not path.exists():
            raise BadInputError(f"{raw}: no such file or directory")
        resolved.append(path)
    files: list[tuple[Path, str]] = []
    skipped: list[FileReport] = []
    for path in resolved:
        entries = [(path, path.name)] if path.is_file() else [
            (p, p.relative_to(path).as_posix()) for p in sorted(path.rglob("*"))
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts)]
        for file, source in entries:
            if is_supported(file):
                files.append((file, source))
            else:
                skipped.append(FileReport(str(file), source, "skipped",
                                          error=f"unsupported file type {file.suffix or '(none)'!r}"))
    return files, skipped


def onboard(chip: str, paths: Sequence[str | Path], progress: bool = True, store: KnowledgeStore | None = None,
            options: ChunkingOptions | None = None, product: str | None = None) -> OnboardReport:
    """Load, chunk, embed and store the documents under `paths` for `chip`.

    Args:
        chip: chip name (normalized by `normalize_chip`).
        paths: files and/or folders.
        progress: show a rich progress bar on stderr.
        store: an open store (default: `KnowledgeStore.open()`).
        options: chunk window sizes.
        product: the chip's product as the documents name it, when the chip name does not (a comparison table of
            AS-2, AS-4 and AS-8 onboarded as chip ``aster``); kept in the profile for later runs.

    Returns:
        An `OnboardReport`; per-file failures are in it (the store keeps those files' previous state).

    Raises:
        BadInputError: bad chip name, a path that does not exist, or no supported document under `paths`.
        StoreError: the store cannot be opened or written (files stored before the error stay stored).
    """
    started = time.perf_counter()
    chip = normalize_chip(chip)
    files, skipped = collect_files(paths)
    if not files:
        detail = f" (skipped: {', '.join(f.source for f in skipped[:5])})" if skipped else ""
        raise BadInputError(f"no supported documents in {', '.join(map(str, paths))}{detail}")
    store = store or KnowledgeStore.open()
    report = OnboardReport(chip=chip, files=list(skipped))
    with _Progress(progress, len(files)) as bar:
        for path, source in files:
            bar.start(source)
            report.files.append(_onboard_file(store, chip, path, source, options))
            bar.advance()
    if report.documents:
        report.profile = update_chip_profile(store, chip, product)
    report.seconds = time.perf_counter() - started
    return report


def update_chip_profile(store: KnowledgeStore, chip: str, product: str | None = None) -> ProfileUpdate:
    """Re-extract `chip`'s hardware profile from all of its stored chunks and merge it into its profile; list the
    fields the optimizer needs that are still unknown, with how to get them (`ingest.profile_needs`).

    Uses the LLM proposer too when ``OPENAI_BASE_URL`` is set (falls back to the rules alone if the endpoint
    fails). A profile that cannot be written is reported in `ProfileUpdate.error`; the stored documents stay.
    """
    from ingest.profile_extract import update_profile_from_documents
    from ingest.profile_llm import default_model
    from ingest.profile_needs import how_to_fill, missing_fields
    from ingest.profile_sources import chunks_from_records

    chunks = chunks_from_records(store.records("chunks", chip=chip))
    llm, note = default_model(), ""
    try:
        try:
            profile, extraction, path = update_profile_from_documents(chip, chunks, llm=llm, product=product)
        except ChiploreError as exc:
            if llm is None:
                raise
            note = f"; LLM proposals skipped ({exc})"
            profile, extraction, path = update_profile_from_documents(chip, chunks, product=product)
        missing = missing_fields(profile)
    except ChiploreError as exc:
        return ProfileUpdate(error=str(exc))
    return ProfileUpdate(path=str(path) if path else None, found=list(extraction.found),
                         conflicts=list(extraction.conflicts), problems=list(extraction.problems),
                         summary=extraction.summary() + note, missing=[m.field for m in missing],
                         advice=how_to_fill(chip, missing), ambiguity=extraction.ambiguity)


def _onboard_file(store: KnowledgeStore, chip: str, path: Path, source: str,
                  options: ChunkingOptions | None) -> FileReport:
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        return FileReport(str(path), source, "failed", error=f"{path}: cannot read ({exc.strerror or exc})")
    stored = store.source_metadata(chip, source)
    if stored and all(m.get("file_sha256") == digest and m.get("chunker") == CHUNKER_VERSION
                      and m.get("loader") == LOADER_VERSION for m in stored):
        pages = stored[0].get("doc_pages")
        return FileReport(str(path), source, "unchanged", pages=int(pages) if pages else None, chunks=len(stored))
    try:
        doc = load_document(path, source)
        meta = {"file_sha256": digest, "loader": LOADER_VERSION, "title": doc.title}
        if doc.pages:
            meta["doc_pages"] = doc.pages
        chunks = chunk_sections(doc.sections, chip, title=doc.title, metadata=meta, options=options)
        if not chunks:
            raise BadInputError(f"{path}: no text found")
        result = store.replace_source(chip, source, chunks)
    except StoreError:
        raise
    except ChiploreError as exc:
        return FileReport(str(path), source, "failed", error=str(exc))
    return FileReport(str(path), source, "stored", pages=doc.pages, chunks=len(chunks), added=result.added,
                      removed=result.removed)


class _Progress:
    """A rich progress bar over files (or nothing when disabled)."""

    def __init__(self, enabled: bool, total: int) -> None:
        self.enabled = enabled
        self.total = total
        self._bar = None
        self._task = None

    def __enter__(self) -> _Progress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._bar = Progress(TextColumn("[bold]onboard[/bold] {task.description}"), BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(), console=Console(stderr=True),
                                 transient=False)
            self._bar.__enter__()
            self._task = self._bar.add_task("", total=self.total)
        return self

    def start(self, name: str) -> None:
        if self._bar is not None:
            self._bar.update(self._task, description=name[-60:])

    def advance(self) -> None:
        if self._bar is not None:
            self._bar.advance(self._task)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.update(self._task, description="done")
            self._bar.__exit__(*exc)
