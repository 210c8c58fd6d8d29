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
    """``{key: value}``: the sha256 of every project file with a watched suffix, of every bytecode cache file in the
    project's packages (a rewritten ``.pyc`` runs in the next process that imports the module -- red team, session
    4), of the git configuration and hooks, and the names (newline-joined) in every watched directory listing (kept
    as names so that a change can say which entries came or went)."""
    out: dict[str, str] = {}
    for pkg in _PACKAGES:
        base = root / pkg
        if not base.is_dir():
            continue
        for path in base.rglob("*"):
            cached = "__pycache__" in path.parts
            if (path.suffix == ".pyc" if cached else path.suffix in _SUFFIXES) and path.is_file():
                out[str(path)] = _sha256(path)
    for path in _git_files(root):
        out[str(path)] = _sha256(path)
    for path in root.iterdir():
        if path.is_file() and path.suffix in _SUFFIXES:
            out[str(path)] = _sha256(path)
    for d in watched_dirs(root):
        names = sorted(n for n in os.listdir(d) if _importable(d, n))
        out[f"{_LISTING}{d}"] = "\n".join(names)
    return out


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


_LISTING = "listing of "
#: File suffixes Python's import system or site initialization acts on (sources, bytecode, extensions, .pth).
_IMPORT_SUFFIXES = (".py", ".pyc", ".so", ".pyd", ".pth")


def _importable(directory: str | Path, name: str) -> bool:
    """Whether entry `name` of `directory` can change what an import or site initialization finds: a file with an
    import suffix (hidden ones too: some Python versions read hidden ``.pth`` files), or a directory (a package,
    now or once files are added) unless hidden (module names cannot start with a dot) or a bytecode cache.
    Other entries (``.pytest_cache``, logs, core files another process writes into the same checkout) are not
    watched: they made an honest candidate fail on the H200 while a test run shared the checkout."""
    if name == "__pycache__":
        return False
    if name.endswith(_IMPORT_SUFFIXES):
        return True
    return not name.startswith(".") and os.path.isdir(os.path.join(directory, name))


def _entries_changed(before: str, after: str) -> str:
    """`` (added: a, b; removed: c)`` between two newline-joined listings (at most 5 names each)."""
    old, new = set(before.split("\n")) - {""}, set(after.split("\n")) - {""}
    parts = [f"{what}: {', '.join(sorted(names)[:5])}{' ...' if len(names) > 5 else ''}"
             for what, names in (("added", new - old), ("removed", old - new)) if names]
    return f" ({'; '.join(parts)})" if parts else ""


def _git_files(root: Path) -> list[Path]:
    """The repository's configuration and hooks (``.git/config``, ``.git/hooks/*``): git runs commands named there
    (``core.fsmonitor``, hooks) the next time a user or tool runs git in the checkout."""
    git = root / ".git"
    if not git.is_dir():
        return []
    hooks = git / "hooks"
    return [p for p in (git / "config", *(sorted(hooks.iterdir()) if hooks.is_dir() else ())) if p.is_file()]


def changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """Readable list of what differs between two snapshots (added, removed, modified). Bytecode caches
    (``__pycache__/*.pyc``) count when modified or removed, not when added: the verifier's own process may compile
    a module it imports for the first time while a candidate runs."""
    found = []
    for key in sorted(set(before) | set(after)):
        if key not in before and key.endswith(".pyc") and "__pycache__" in key:
            continue
        if key not in after:
            found.append(f"{key} was removed")
        elif key not in before:
            found.append(f"{key} was added")
        elif before[key] != after[key]:
            detail = _entries_changed(before[key], after[key]) if key.startswith(_LISTING) else ""
            found.append(f"{key} was modified{detail}")
    return found
