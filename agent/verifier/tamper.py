"""Environment-tampering check: content hashes of the project's code and data, and listings of every directory
on the sandbox's import path, taken before and after each candidate.

A candidate that writes a shadow ``torch.py``, installs a package or edits the harness or the reference changes
one of these; the verdict then fails and names the file.
"""

from __future__ import annotations

import hashlib
import os
import sysconfig
from pathlib import Path

_PACKAGES = ("agent", "kernels", "hardware_profiles", "knowledge", "ingest", "scripts")
_SUFFIXES = (".py", ".yaml", ".yml", ".json", ".md", ".j2", ".toml", ".pth")


def watched_dirs(root: Path) -> list[Path]:
    """Directories whose listings must not change: the project root and its packages, and every directory on the
    sandbox's import path (stdlib, lib-dynload, site-packages, the torch and triton package folders)."""
    import torch
    import triton

    paths = sysconfig.get_paths()
    dirs = [root, *(root / p for p in _PACKAGES)]
    dirs += [Path(paths[k]) for k in ("stdlib", "platstdlib", "purelib", "platlib")]
    dirs += [Path(torch.__file__).parent, Path(triton.__file__).parent]
    dirs += [Path(paths["stdlib"]) / "lib-dynload", Path(paths["platstdlib"]) / "lib-dynload"]
    unique: dict[str, Path] = {}
    for d in dirs:
        if d.is_dir():
            unique.setdefault(str(d.resolve()), d.resolve())
    return list(unique.values())


def snapshot(root: Path) -> dict[str, str]:
    """``{key: sha256}`` for every project file with a watched suffix and every watched directory listing."""
    out: dict[str, str] = {}
    for pkg in _PACKAGES:
        base = root / pkg
        if not base.is_dir():
            continue
        for path in base.rglob("*"):
            if path.suffix in _SUFFIXES and "__pycache__" not in path.parts and path.is_file():
                out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    for path in root.iterdir():
        if path.is_file() and path.suffix in _SUFFIXES:
            out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    for d in watched_dirs(root):
        names = sorted(n for n in os.listdir(d) if n != "__pycache__")
        out[f"listing of {d}"] = hashlib.sha256("\n".join(names).encode()).hexdigest()
    return out


def changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """Readable list of what differs between two snapshots (added, removed, modified)."""
    found = []
    for key in sorted(set(before) | set(after)):
        if key not in after:
            found.append(f"{key} was removed")
        elif key not in before:
            found.append(f"{key} was added")
        elif before[key] != after[key]:
            found.append(f"{key} was modified")
    return found
