"""Atomic file writes: a reader (or a resumed run) sees the old file or the new one, never half of one.

Recipe: write a temp file in the same folder, flush, fsync, `os.replace` over the target, fsync the folder.
Temp files are named ``.<name>.<pid>.<random>.tmp`` so that `remove_stale_temps` can tell a dead writer's leftovers
from a live writer's. Used by the run state, the pattern graph, the hardware profiles and the reports.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def atomic_write_text(path: Path, text: str) -> None:
    """Replace `path` with `text` (UTF-8) atomically; parent folders are created."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def atomic_write_json(path: Path, data: Any) -> None:
    """`atomic_write_text` of `data` as indented, key-sorted JSON."""
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def read_json(path: Path) -> Any:
    """Parsed JSON content of `path`."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


def remove_stale_temps(target: Path) -> None:
    """Delete temp files of `target` left by writers that died (their pid no longer runs)."""
    for tmp in Path(target).parent.glob(f".{Path(target).name}.*.tmp"):
        pid_text = tmp.name[len(Path(target).name) + 2:].split(".", 1)[0]
        try:
            os.kill(int(pid_text), 0)
            continue  # its writer is alive
        except (ValueError, ProcessLookupError):
            pass
        except PermissionError:
            continue
        try:
            tmp.unlink()
        except OSError:
            pass


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
