"""Onboard a chip's documents: walk paths, load, chunk, embed and store each file atomically and idempotently.

- Which files are read, and why others are left out, is `ingest.files.collect` (folders walked without leaving
  them: hidden entries and symbolic links that leave the folder are listed as skipped). A file over its format's
  size limit fails from ``stat`` alone; when nothing is left to read, the store is not even opened.
- Each file's ``source`` is its path relative to the folder that was given (or its name, for a file given
  directly); (chip, source) identifies the file in the store.
- One writer at a time: each file's whole onboarding (hash, load, chunk, embed, write) holds the store's writer
  lock (`KnowledgeStore.writing`); another onboarding waits, saying for whom, or fails with ``wait=False``.
- A file is "unchanged" only when its journal entry (`knowledge.journal`) is complete, for the same content hash,
  loader and chunker, AND the store holds exactly the journal's ids in its records and its vector index. Otherwise
  it is stored again: `KnowledgeStore.replace_source` writes only what differs and re-embeds only what changed.
- An onboarding that was interrupted (its journal entry left incomplete by a process that died) is repaired first:
  its file is onboarded again when it is still there with the same content, else its partial chunks are removed
  and the file is named, to be onboarded again.
- A file of more than `max_file_chunks` chunks is refused before anything is embedded (embedding is most of the
  time: about 100 chunks/s on a 2-core CPU).
- After the files, the chip's hardware profile is re-extracted from its stored chunks (at most
  `MAX_PROFILE_TEXT_CHARS` characters of them, smallest documents first) and merged into its profile
  (`ingest.profile_extract.update_profile_from_documents`; written to ``$CHIPLORE_HOME/profiles``); re-running on
  the same documents leaves the profile unchanged. The progress bar shows this phase.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from core.errors import BadInputError, ChiploreError, StoreError
from core.text import printable
from ingest.chunker import CHUNKER_VERSION, ChunkingOptions, chunk_sections
from ingest.files import collect, file_sha256
from ingest.loaders import LOADER_VERSION, LOADERS, load_document
from ingest.onboard_progress import Progress
from knowledge.store import KnowledgeStore

_CHIP = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
#: Most chunks one file may have (``CHIPLORE_MAX_FILE_CHUNKS`` overrides): 20,000 chunks take 2-4 minutes to embed
#: on a 2-core CPU; a 10 MB one-line HTML page gives about 35,000.
MAX_FILE_CHUNKS = 20_000
#: Most characters of a chip's chunks read by profile extraction (a work bound; extraction is linear in its text, about
#: 4-20 s per million characters on a 2-core CPU, the most for text dense with numbers and product names).
MAX_PROFILE_TEXT_CHARS = 5_000_000
VERSIONS = {"loader": LOADER_VERSION, "chunker": CHUNKER_VERSION}


@dataclass
class FileReport:
    """Outcome for one file: status is ``stored``, ``unchanged``, ``failed`` or ``skipped``; `note` says when a
    stored file completed an interrupted onboarding."""

    path: str
    source: str
    status: str
    pages: int | None = None
    chunks: int = 0
    added: int = 0
    removed: int = 0
    error: str = ""
    note: str = ""


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



def max_file_chunks() -> int:
    """`MAX_FILE_CHUNKS`, or ``$CHIPLORE_MAX_FILE_CHUNKS`` when set to a positive integer.

    Raises:
        BadInputError: the variable is set to something else.
    """
    raw = os.environ.get("CHIPLORE_MAX_FILE_CHUNKS", "").strip()
    if not raw:
        return MAX_FILE_CHUNKS
    if not raw.isdigit() or int(raw) < 1:
        raise BadInputError(f"CHIPLORE_MAX_FILE_CHUNKS={raw!r}: expected a positive whole number of chunks")
    return int(raw)


def collect_files(paths: Sequence[str | Path]) -> tuple[list[tuple[Path, str]], list[FileReport]]:
    """Expand `paths` into (file, source) pairs to load, and reports of the entries left out: ``skipped`` (with the
    reason) or ``failed`` (a supported file that cannot be read, e.g. over its size limit). See `ingest.files`.

    Raises:
        BadInputError: a path does not exist (checked for all paths before anything is read).
    """
    files: list[tuple[Path, str]] = []
    left_out: list[FileReport] = []
    for item in collect(paths):
        if not item.reason:
            files.append((item.path, item.source))
        else:
            left_out.append(FileReport(str(item.path), item.source, "failed" if item.failed else "skipped",
                                       error=item.reason))
    return files, left_out


def onboard(chip: str, paths: Sequence[str | Path], progress: bool = True, store: KnowledgeStore | None = None,
            options: ChunkingOptions | None = None, wait: bool = True, product: str | None = None) -> OnboardReport:
    """Load, chunk, embed and store the documents under `paths` for `chip`.

    Args:
        chip: chip name (normalized by `normalize_chip`).
        paths: files and/or folders.
        progress: show a rich progress bar on stderr (phases: waiting, loading, embedding, writing, profile).
        store: an open store (default: `KnowledgeStore.open()`).
        options: chunk window sizes.
        wait: wait for another process's onboarding (True) or fail at once with `LockBusyError`.
        product: the chip's product as the documents name it, when the chip name does not (a comparison table of
            AS-2, AS-4 and AS-8 onboarded as chip ``aster``); kept in the profile for later runs.

    Returns:
        An `OnboardReport`; per-file failures are in it (the store keeps those files' previous state).

    Raises:
        BadInputError: bad chip name, a path that does not exist, or no supported document under `paths` (this is
            decided before the store is opened).
        StoreError: the store cannot be opened or written, or its vector index is damaged (files stored before the
            error stay stored). LockBusyError: another process writes to the store and `wait` is False.
    """
    started = time.perf_counter()
    chip = normalize_chip(chip)
    files, left_out = collect_files(paths)
    report = OnboardReport(chip=chip, files=list(left_out))
    if not files:
        if any(f.status == "failed" for f in left_out):
            return report
        detail = f" (skipped: {'; '.join(f'{printable(f.source)}: {f.error}' for f in left_out[:5])})" \
            if left_out else ""
        raise BadInputError(f"no supported documents in {', '.join(printable(str(p)) for p in paths)}{detail}; "
                            f"onboard reads {', '.join(sorted(LOADERS))}")
    store = store or KnowledgeStore.open()
    store.wait = wait
    with Progress(progress, len(files)) as bar:
        store.on_wait = bar.waiting
        now = {(chip, source) for _, source in files}
        report.files.extend(repair_interrupted(store, skip=now, options=options, progress=bar))
        for path, source in files:
            bar.start(source)
            report.files.append(_onboard_file(store, chip, path, source, options, bar))
            bar.advance()
        if report.documents:
            bar.phase(f"extracting the hardware profile of {chip}")
            report.profile = update_chip_profile(store, chip, product)
    report.seconds = time.perf_counter() - started
    return report


def repair_interrupted(store: KnowledgeStore, skip: set[tuple[str, str]] = frozenset(),
                       options: ChunkingOptions | None = None, progress: Progress | None = None) -> list[FileReport]:
    """Repair every interrupted onboarding of the store (journal entries left incomplete by a dead process), except
    the (chip, source) pairs in `skip`, which the caller onboards itself.

    A file still at its journaled path with the journaled content hash is onboarded again (``stored`` with a
    `FileReport.note`); otherwise the source's partial chunks are removed and the file is reported ``failed``,
    with a line naming it and saying to onboard it again.

    Raises:
        StoreError, LockBusyError: as `onboard`.
    """
    out = []
    for entry in store.interrupted("chunks"):
        if (entry.chip, entry.source) in skip:
            continue
        with store.writing(f"repairing the interrupted onboarding of {entry.source} for chip {entry.chip}"):
            if entry not in store.interrupted("chunks"):  # another process repaired it while this one waited
                continue
            path = Path(entry.path) if entry.path else None
            same = path is not None and path.is_file() and _digest(path) == entry.sha256
            if same:
                if progress is not None:
                    progress.start(entry.source)
                report = _onboard_file(store, entry.chip, path, entry.source, options, progress)
                report.note = f"completed an interrupted onboarding (pid {entry.pid}, {entry.started_at})"
            else:
                removed = store.delete_source(entry.chip, entry.source)
                why = "is gone" if path is None or not path.is_file() else "has changed since"
                report = FileReport(entry.path, entry.source, "failed", removed=removed, error=(
                    f"{printable(entry.path or entry.source)}: its onboarding for chip {entry.chip} was interrupted "
                    f"and the file {why}; its {removed} partial chunk(s) were removed: onboard it again"))
        out.append(report)
    return out


def _digest(path: Path) -> str:
    try:
        return file_sha256(path)
    except OSError:
        return ""


def update_chip_profile(store: KnowledgeStore, chip: str, product: str | None = None) -> ProfileUpdate:
    """Re-extract `chip`'s hardware profile from its stored chunks and merge it into its profile
    (`profile_from_chunks`). A profile that cannot be written is reported in `ProfileUpdate.error`; the stored
    documents stay."""
    from ingest.profile_sources import chunks_from_records

    return profile_from_chunks(chip, chunks_from_records(store.records("chunks", chip=chip)), product)


def profile_from_chunks(chip: str, chunks: list, product: str | None = None) -> ProfileUpdate:
    """Extract `chip`'s hardware profile from `chunks` (at most `MAX_PROFILE_TEXT_CHARS` characters of them, the
    smallest documents first: datasheets state the numbers, long manuals rarely add one) and merge it into its
    profile. Uses the LLM proposer too when ``OPENAI_BASE_URL`` is set (falls back to the rules alone if the
    endpoint fails). `product`: as `onboard`. The fields the optimizer needs that are still unknown are listed
    with how to get them (`ingest.profile_needs`)."""
    from ingest.profile_extract import update_profile_from_documents
    from ingest.profile_llm import default_model
    from ingest.profile_needs import how_to_fill, missing_fields

    chunks, note = _within_budget(chunks)
    llm = default_model()
    try:
        try:
            profile, extraction, path = update_profile_from_documents(chip, chunks, llm=llm, product=product)
        except ChiploreError as exc:
            if llm is None:
                raise
            note += f"; LLM proposals skipped ({exc})"
            profile, extraction, path = update_profile_from_documents(chip, chunks, product=product)
        missing = missing_fields(profile)
    except ChiploreError as exc:
        return ProfileUpdate(error=str(exc))
    return ProfileUpdate(path=str(path) if path else None, found=list(extraction.found),
                         conflicts=list(extraction.conflicts), problems=list(extraction.problems),
                         summary=extraction.summary() + note, missing=[m.field for m in missing],
                         advice=how_to_fill(chip, missing), ambiguity=extraction.ambiguity)


def _within_budget(chunks: list) -> tuple[list, str]:
    """Whole documents, smallest first, while their text fits in `MAX_PROFILE_TEXT_CHARS` characters (the first
    document is always read, up to the limit); the chunks keep their reading order. A note says what was left out."""
    sizes: dict[str, int] = {}
    for chunk in chunks:
        sizes[chunk.source] = sizes.get(chunk.source, 0) + len(chunk.text)
    if sum(sizes.values()) <= MAX_PROFILE_TEXT_CHARS:
        return chunks, ""
    kept_docs, total = set(), 0
    for source in sorted(sizes, key=lambda s: (sizes[s], s)):
        if total + sizes[source] > MAX_PROFILE_TEXT_CHARS and kept_docs:
            break
        kept_docs.add(source)
        total += sizes[source]
    kept, used = [], 0
    for chunk in chunks:
        if chunk.source in kept_docs and used + len(chunk.text) <= MAX_PROFILE_TEXT_CHARS:
            kept.append(chunk)
            used += len(chunk.text)
    skipped = sorted(set(sizes) - kept_docs)
    what = f"{len(skipped)} larger document(s)" if skipped else "the end of the document"
    return kept, (f"; {what} not read for the profile (extraction reads at most "
                  f"{MAX_PROFILE_TEXT_CHARS // 10**6} million characters per chip)")


def _onboard_file(store: KnowledgeStore, chip: str, path: Path, source: str, options: ChunkingOptions | None,
                  progress: Progress | None = None) -> FileReport:
    """One file's whole onboarding under the store's writer lock (module docstring)."""
    with store.writing(f"onboarding of {printable(source)} for chip {chip}"):
        try:
            digest = file_sha256(path)
        except OSError as exc:
            return FileReport(str(path), source, "failed", error=f"{path}: cannot read ({exc.strerror or exc})")
        entry = store.journal.get("chunks", chip, source) if store.journal else None
        if entry is not None and entry.complete and entry.sha256 == digest and entry.versions == VERSIONS \
                and store.source_complete(chip, source, entry.ids):
            pages = next((m.get("doc_pages") for m in store.source_metadata(chip, source)[:1]), None)
            return FileReport(str(path), source, "unchanged", pages=int(pages) if pages else None,
                              chunks=entry.count)
        try:
            if progress is not None:
                progress.phase(f"loading {source}")
            doc = load_document(path, source)
            meta = {"file_sha256": digest, "loader": LOADER_VERSION, "title": doc.title}
            if doc.pages:
                meta["doc_pages"] = doc.pages
            chunks = chunk_sections(doc.sections, chip, title=doc.title, metadata=meta, options=options)
            if not chunks:
                raise BadInputError(f"{path}: no text found")
            limit = max_file_chunks()
            if len(chunks) > limit:
                raise BadInputError(f"{path}: {len(chunks):,} chunks is above the limit of {limit:,} chunks per file "
                                    "(embedding takes about 1 s per 100 chunks on a 2-core CPU); split the document "
                                    "or raise CHIPLORE_MAX_FILE_CHUNKS")
            if progress is not None:
                progress.phase(f"embedding and writing {len(chunks):,} chunks of {source}")
            result = store.replace_source(chip, source, chunks, sha256=digest, path=str(path.resolve()),
                                          versions=VERSIONS)
        except StoreError:
            raise
        except ChiploreError as exc:
            return FileReport(str(path), source, "failed", error=str(exc))
    status = "unchanged" if result.written == 0 and result.removed == 0 else "stored"
    return FileReport(str(path), source, status, pages=doc.pages, chunks=len(chunks), added=result.added,
                      removed=result.removed)
