"""Where a knowledge store lives and how its chromadb client is made: the embedded folder and its checks, a server.

Embedded store: ``$CHIPLORE_HOME/store`` holds chromadb's files (``chroma.sqlite3`` with the records and the write
log, one folder per vector index named by its segment UUID) and chiplore's own: ``chiplore-write.lock`` (one writer
at a time), ``chiplore-index.lock`` (one chromadb call at a time across processes) and ``chiplore-journal/``.
A Chroma server (``CHIPLORE_CHROMA_URL``) keeps its own files; chiplore's lock and journal for it live under
``$CHIPLORE_HOME/servers/<hash of the URL>``.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from core import settings
from core.errors import StoreError

SQLITE_FILE = "chroma.sqlite3"
_SQLITE_MAGIC = b"SQLite format 3\x00"
#: Vector-index files of a chromadb segment folder that are never empty once written (``link_lists.bin`` may be).
#: An empty ``length.bin`` (the vectors' norms) is read without error but changes query results.
INDEX_FILES = ("header.bin", "data_level0.bin", "length.bin", "index_metadata.pickle")
#: What to do when chromadb's own database is damaged (nothing chiplore can rebuild from).
FRESH_HOME = ("chiplore will not write over it; keep it for inspection, point CHIPLORE_HOME at a fresh folder and "
              "onboard the documents again")
#: What to do when a vector index is damaged or incomplete (`chiplore store repair` rebuilds it from the records).
REPAIR_HINT = "chiplore will not write over it; run `chiplore store repair` (or keep it for inspection and point " \
              "CHIPLORE_HOME at a fresh folder)"


@dataclass(frozen=True)
class StorePlace:
    """Where one store is: `location` (for messages), `folder` (embedded chromadb folder, or None for a server),
    `meta` (the folder of chiplore's lock files and journal) and `home` (the CHIPLORE_HOME it belongs to)."""

    location: str
    folder: Path | None
    meta: Path
    home: Path

    @property
    def embedded(self) -> bool:
        return self.folder is not None

    @property
    def write_lock(self) -> Path:
        return self.meta / "chiplore-write.lock"

    @property
    def index_lock(self) -> Path:
        return self.meta / "chiplore-index.lock"

    @property
    def journal(self) -> Path:
        return self.meta / "chiplore-journal"


def embedded_place(home: Path | None = None) -> StorePlace:
    """The embedded store under `home` (default ``$CHIPLORE_HOME``)."""
    root = Path(home) if home is not None else settings.chiplore_home()
    path = root / "store"
    return StorePlace(f"knowledge store {path}", path, path, root)


def server_place(url: str, home: Path | None = None) -> StorePlace:
    """A Chroma server at `url`; its lock and journal folder under `home` (default ``$CHIPLORE_HOME``)."""
    root = Path(home) if home is not None else settings.chiplore_home()
    return StorePlace(f"Chroma server {url}", None,
                      root / "servers" / hashlib.sha256(url.encode()).hexdigest()[:16], root)


def chroma_settings() -> Any:
    from chromadb.config import Settings

    return Settings(anonymized_telemetry=False, allow_reset=False)


def check_store_files(path: Path, index_files: bool = True) -> None:
    """Refuse an embedded store whose files exist but are damaged, before chromadb opens (and rebuilds over) it.

    Checks: ``chroma.sqlite3`` starts with the SQLite header (an empty or overwritten file would be silently
    replaced by a new, empty database); segment folders (vector indexes) are not left without that database; and,
    with `index_files`, the vector-index files of each segment folder that exist are not empty (`INDEX_FILES`;
    `chiplore store repair` opens a store without this last check, to rebuild those indexes).

    Raises:
        StoreError: one line naming the damaged file and what to do.
    """
    location = f"knowledge store {path}"
    db = path / SQLITE_FILE
    if db.exists():
        try:
            with open(db, "rb") as fh:
                head = fh.read(len(_SQLITE_MAGIC))
        except OSError as exc:
            raise StoreError(f"{location}: cannot read {db} ({exc.strerror or exc})") from exc
        if head != _SQLITE_MAGIC:
            what = "is empty" if not head else "is not a SQLite database"
            raise StoreError(f"{location}: {db} {what} (damaged store); {FRESH_HOME}")
    elif segment_folders(path):
        raise StoreError(f"{location}: {db} is missing but vector indexes remain in {segment_folders(path)[0]} "
                         f"(damaged store); {FRESH_HOME}")
    damaged = damaged_index_files(path) if index_files else []
    if damaged:
        raise StoreError(f"{location}: vector index file {damaged[0]} is empty (damaged store); {REPAIR_HINT}")


def segment_folders(path: Path) -> list[Path]:
    """The vector-index folders of an embedded store (named by a UUID), sorted."""
    return sorted(p for p in path.iterdir() if p.is_dir() and _is_uuid(p.name)) if path.is_dir() else []


def damaged_index_files(path: Path) -> list[Path]:
    """Vector-index files of `path`'s segment folders that exist but are empty."""
    return [folder / name for folder in segment_folders(path) for name in INDEX_FILES
            if (folder / name).is_file() and (folder / name).stat().st_size == 0]


def _is_uuid(name: str) -> bool:
    try:
        uuid.UUID(name)
    except ValueError:
        return False
    return True


def persistent_client(place: StorePlace, check: bool = True) -> Any:
    """chromadb's ``PersistentClient`` on `place.folder`, after `check_store_files` (of the index files too when
    `check`).

    Raises:
        StoreError: damaged files, or chromadb cannot open the folder.
    """
    assert place.folder is not None
    check_store_files(place.folder, index_files=check)
    try:
        import chromadb

        place.folder.mkdir(parents=True, exist_ok=True)
        return chromadb.PersistentClient(path=str(place.folder), settings=chroma_settings())
    except Exception as exc:
        raise StoreError(f"{place.location}: cannot open: {one_line(exc)}") from exc


def http_client(url: str) -> Any:
    """chromadb's ``HttpClient`` for `url` (``http://HOST:PORT``), checked with a heartbeat.

    Raises:
        StoreError: a malformed URL or an unreachable server.
    """
    parsed = urlparse(url if "://" in url else f"http://{url}")
    if not parsed.hostname:
        raise StoreError(f"CHIPLORE_CHROMA_URL={url!r}: expected http://HOST:PORT")
    try:
        import chromadb

        port = parsed.port or (443 if parsed.scheme == "https" else 8000)
        client = chromadb.HttpClient(host=parsed.hostname, port=port, ssl=parsed.scheme == "https",
                                     settings=chroma_settings())
        client.heartbeat()
    except Exception as exc:
        raise StoreError(f"Chroma server {url}: unreachable ({one_line(exc)}); start it with "
                         "`chroma run --path DIR --host HOST --port PORT` or unset CHIPLORE_CHROMA_URL") from exc
    return client


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (at most 300 characters), or its type name."""
    text = " ".join(str(exc).split())
    return text[:300] if text else type(exc).__name__


def vector_segments(path: Path) -> dict[str, str]:
    """{collection name: vector-index folder name} of an embedded store, read from chromadb's ``segments`` and
    ``collections`` tables (read-only; chromadb 1.x schema). Empty when the database cannot be read."""
    import sqlite3

    try:
        db = sqlite3.connect(f"file:{path / SQLITE_FILE}?mode=ro", uri=True, timeout=30)
        try:
            rows = db.execute("SELECT c.name, s.id FROM segments s JOIN collections c ON s.collection = c.id "
                              "WHERE s.scope = 'VECTOR'").fetchall()
        finally:
            db.close()
    except sqlite3.Error:
        return {}
    return {str(name): str(seg) for name, seg in rows}
