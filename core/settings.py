"""Locations and configuration read from the environment (one place, documented in the README).

| variable | default | meaning |
|---|---|---|
| CHIPLORE_HOME | ~/.chiplore | knowledge store, pattern graph, runs |
| CHIPLORE_CHROMA_URL | unset | use a Chroma server (http://host:port) instead of the embedded store |
| CHIPLORE_EMBED_MODEL | packaged all-MiniLM-L6-v2 | local path or sentence-transformers name of the embedder |
| OPENAI_BASE_URL / OPENAI_API_KEY / CHIPLORE_MODEL | unset | OpenAI-compatible LLM for the LLM proposer |
"""

from __future__ import annotations

import os
from pathlib import Path


def chiplore_home() -> Path:
    """Root folder for chiplore's state (``$CHIPLORE_HOME`` or ``~/.chiplore``), created if missing."""
    home = Path(os.environ.get("CHIPLORE_HOME", "~/.chiplore")).expanduser()
    home.mkdir(parents=True, exist_ok=True)
    return home


def chroma_url() -> str | None:
    """``$CHIPLORE_CHROMA_URL`` if set (server mode), else None (embedded PersistentClient)."""
    return os.environ.get("CHIPLORE_CHROMA_URL") or None


def runs_dir() -> Path:
    """Folder holding one sub-folder per optimization run."""
    path = chiplore_home() / "runs"
    path.mkdir(parents=True, exist_ok=True)
    return path
