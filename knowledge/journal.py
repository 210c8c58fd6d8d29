"""The write journal: what a write of one source is about to store, and whether it finished.

Before a source's records are written, `WriteJournal.begin` records the source, its file's content hash, the record
ids and their count, with state ``writing``; the store marks the entry ``complete`` only after the vector index
returns every one of those ids (`knowledge.store.KnowledgeStore.replace_source`). An entry left ``writing`` by a
process that died names a source whose records may be partial: onboarding it again repairs it
(`ingest.onboard`), and `chiplore store check` lists it.

One JSON file per (collection, chip, source) under the journal folder, written atomically (`core.atomic_io`);
an unreadable file counts as an incomplete entry. The folder lives inside the embedded store folder
(``$CHIPLORE_HOME/store/chiplore-journal``), or under ``$CHIPLORE_HOME/journals/<server>`` for a Chroma server.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from core.atomic_io import atomic_write_json, remove_stale_temps

WRITING = "writing"
COMPLETE = "complete"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass
class JournalEntry:
    """One source's last write.

    Attributes:
        collection, chip, source: what was written (``source`` is the name stored with the records).
        sha256: content hash of the file the records came from ("" when not from a file).
        ids: the record ids the write stores, in order; count: len(ids).
        state: ``writing`` until the index returned every id, then ``complete``.
        path: absolute path of the file onboarded (to onboard it again), or "".
        versions: loader and chunker versions the records were made with.
        pid: the writing process; started_at / completed_at: UTC ISO 8601 times.
    """

    collection: str
    chip: str
    source: str
    sha256: str = ""
    ids: list[str] = field(default_factory=list)
    count: int = 0
    state: str = WRITING
    path: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    pid: int = 0
    started_at: str = ""
    completed_at: str = ""

    @property
    def complete(self) -> bool:
        return self.state == COMPLETE and self.count == len(self.ids)

    def writer_alive(self) -> bool:
        """Whether the process that wrote this entry still runs (so an incomplete entry may still be in progress)."""
        if self.pid <= 0 or self.pid == os.getpid():
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


class WriteJournal:
    """The journal folder of one store."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    def _file(self, collection: str, chip: str, source: str) -> Path:
        digest = hashlib.sha256(f"{chip}\x1f{source}".encode()).hexdigest()[:32]
        return self.folder / collection / f"{digest}.json"

    def get(self, collection: str, chip: str, source: str) -> JournalEntry | None:
        """The entry of (`collection`, `chip`, `source`), or None; an unreadable file gives an incomplete entry."""
        file = self._file(collection, chip, source)
        if not file.exists():
            return None
        return _read(file, collection) or JournalEntry(collection, chip, source, state="unreadable")

    def begin(self, entry: JournalEntry) -> None:
        """Record `entry` as being written (state ``writing``, this process, now)."""
        entry.state, entry.pid, entry.started_at, entry.completed_at = WRITING, os.getpid(), _now(), ""
        entry.count = len(entry.ids)
        self._write(entry)

    def complete(self, entry: JournalEntry) -> None:
        """Mark `entry` complete (call only once the index returned every id)."""
        entry.state, entry.completed_at = COMPLETE, _now()
        self._write(entry)

    def put(self, entry: JournalEntry) -> None:
        """Write `entry` as it is (used to put back the previous entry after a rolled-back write)."""
        self._write(entry)

    def remove(self, collection: str, chip: str, source: str) -> None:
        self._file(collection, chip, source).unlink(missing_ok=True)

    def entries(self, collection: str | None = None) -> list[JournalEntry]:
        """Every entry (of `collection` if given), sorted by (collection, chip, source)."""
        folders = [self.folder / collection] if collection else sorted(p for p in self.folder.glob("*") if p.is_dir())
        out = []
        for folder in folders:
            for file in sorted(folder.glob("*.json")):
                entry = _read(file, folder.name)
                out.append(entry or JournalEntry(folder.name, "?", file.name, state="unreadable"))
        return sorted(out, key=lambda e: (e.collection, e.chip, e.source))

    def incomplete(self, collection: str | None = None,
                   in_progress: Callable[[JournalEntry], bool] | None = None) -> list[JournalEntry]:
        """Entries whose write did not finish and is not in progress (`in_progress`, default: its writer's pid
        still runs; the store passes "its writer still holds the writer lock", which a reused pid cannot fake)."""
        live = in_progress or JournalEntry.writer_alive
        return [e for e in self.entries(collection) if not e.complete and not live(e)]

    def _write(self, entry: JournalEntry) -> None:
        file = self._file(entry.collection, entry.chip, entry.source)
        remove_stale_temps(file)
        atomic_write_json(file, asdict(entry))


def _read(file: Path, collection: str) -> JournalEntry | None:
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
        entry = JournalEntry(**{k: v for k, v in data.items() if k in JournalEntry.__dataclass_fields__})
    except (OSError, ValueError, TypeError):
        return None
    if entry.collection != collection or not isinstance(entry.ids, list):
        return None
    return entry
