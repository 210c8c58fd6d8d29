"""Vectors already computed, kept by model and text, so the same text is never embedded twice.

Embedding is most of the time of onboarding (about 100 chunks/s with all-MiniLM-L6-v2 on a 2-core CPU). After an
onboarding is killed, after `chiplore store repair`, or when the same documents go into a fresh store, the texts
that were embedded before are read back instead of computed again.

File: ``$CHIPLORE_HOME/cache/embeddings.sqlite3`` (SQLite, WAL mode, safe for several processes; a killed writer
loses at most its last uncommitted batch). Key: sha256 of the model key and the exact text; value: the float32
vector. The model key identifies the model files (`model_key`), so another model, or new files at the same path,
never read these vectors. The file only grows; delete it to reclaim the space (nothing else is lost).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from core import settings

CACHE_FILE = "embeddings.sqlite3"
#: Texts embedded per model call and per cache transaction.
BATCH = 256


def model_key(spec: str) -> str:
    """Identity of a model: its spec plus the name and size of every file under its folder (a model name that is
    not a folder is its own key)."""
    path = Path(spec).expanduser()
    parts = [str(path.resolve()) if path.exists() else spec]
    if path.is_dir():
        for file in sorted(p for p in path.rglob("*") if p.is_file()):
            parts.append(f"{file.relative_to(path).as_posix()}:{file.stat().st_size}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


class EmbeddingCache:
    """The SQLite file of cached vectors for one model key."""

    def __init__(self, path: Path, key: str) -> None:
        self.path = Path(path)
        self.key = key
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vec BLOB NOT NULL)")
        self._db.execute("CREATE TABLE IF NOT EXISTS models (model TEXT PRIMARY KEY, dim INTEGER NOT NULL)")

    def _keys(self, texts: Sequence[str]) -> list[bytes]:
        return [hashlib.sha256(f"{self.key}\x1f{t}".encode()).digest()[:20] for t in texts]

    def get(self, texts: Sequence[str], dim: int) -> list[list[float] | None]:
        """Cached vectors of `texts` ([n] of [dim] floats or None where not cached or of another width)."""
        keys = self._keys(texts)
        found: dict[bytes, bytes] = {}
        for start in range(0, len(keys), 500):
            part = keys[start:start + 500]
            rows = self._db.execute(f"SELECT key, vec FROM vectors WHERE key IN ({','.join('?' * len(part))})", part)
            found.update(rows.fetchall())
        out: list[list[float] | None] = []
        for k in keys:
            raw = found.get(k)
            out.append(np.frombuffer(raw, dtype=np.float32).tolist() if raw is not None and len(raw) == 4 * dim
                       else None)
        return out

    def put(self, texts: Sequence[str], vectors: Sequence[Sequence[float]]) -> None:
        """Store `vectors` ([n, dim]) of `texts` in one transaction."""
        rows = [(k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in zip(self._keys(texts), vectors)]
        with self._db:
            self._db.executemany("INSERT OR REPLACE INTO vectors (key, vec) VALUES (?, ?)", rows)

    def dim(self) -> int | None:
        """The recorded width of this model's vectors, or None."""
        row = self._db.execute("SELECT dim FROM models WHERE model = ?", (self.key,)).fetchone()
        return int(row[0]) if row else None

    def set_dim(self, dim: int) -> None:
        with self._db:
            self._db.execute("INSERT OR REPLACE INTO models (model, dim) VALUES (?, ?)", (self.key, int(dim)))


class CachedEmbedder:
    """The configured embedder behind `EmbeddingCache`: `embed` computes only the texts not cached, and the model is
    loaded only when something must be computed (or its width is not recorded yet).

    Attributes:
        model_name: the model's label, as `knowledge.embedder.Embedder.model_name`; `dim` its width.
    """

    def __init__(self, spec: str | None = None, embedder: Any = None, home: Path | None = None) -> None:
        from knowledge.embedder import DEFAULT_MODEL_LABEL, _is_packaged, configured_model

        self.spec = spec or (getattr(embedder, "spec", None) if embedder is not None else None) or configured_model()
        self._embedder = embedder
        self.model_name = getattr(embedder, "model_name", None) or (
            DEFAULT_MODEL_LABEL if _is_packaged(self.spec) else self.spec)
        root = Path(home) if home is not None else settings.chiplore_home()
        self.cache = EmbeddingCache(root / "cache" / CACHE_FILE, model_key(self.spec))
        self.computed = 0

    @property
    def model(self) -> Any:
        """The loaded embedder (`knowledge.embedder.get_embedder`)."""
        if self._embedder is None:
            from knowledge.embedder import get_embedder

            self._embedder = get_embedder(self.spec)
            self.cache.set_dim(self._embedder.dim)
        return self._embedder

    @property
    def dim(self) -> int:
        recorded = self.cache.dim()
        return recorded if recorded is not None else int(self.model.dim)

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> list[list[float]]:
        """Vectors of `texts` ([n, dim], L2-normalized): cached ones read back, the others embedded in batches of
        `BATCH` and cached batch by batch (a kill keeps what was done)."""
        texts = list(texts)
        vectors = self.cache.get(texts, self.dim) if texts else []
        todo = [i for i, v in enumerate(vectors) if v is None]
        for start in range(0, len(todo), BATCH):
            part = todo[start:start + BATCH]
            computed = self.model.embed([texts[i] for i in part], batch_size=batch_size)
            self.cache.put([texts[i] for i in part], computed)
            for i, vec in zip(part, computed):
                vectors[i] = vec
            self.computed += len(part)
        return vectors  # type: ignore[return-value]


def cache_disabled() -> bool:
    """``CHIPLORE_EMBED_CACHE=0`` switches the cache off (every text is embedded)."""
    return os.environ.get("CHIPLORE_EMBED_CACHE", "1").strip() == "0"
