"""Which files an onboarding reads: folders walked without leaving them, every file left out listed with why.

- Folders are walked in sorted order without following symbolic links to folders. A symbolic link to a file is
  read only when its target lies inside the folder given; one that leaves it (``docs/passwd.txt -> /etc/passwd``)
  is skipped, and so is a link that is broken or points at a folder.
- Hidden entries (names starting with ``.``, such as ``.git/`` or ``..evil..md``) are skipped: a hidden folder is
  listed once, not file by file.
- Files that have no loader, and entries that are not regular files (FIFOs, sockets, devices), are skipped.
- A supported file over its format's size limit fails from ``stat`` alone (`ingest.loaders.check_size`), before
  anything reads or hashes it.

A file named directly on the command line is read even when it is a link: the user chose it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from core.errors import BadInputError
from core.text import printable
from ingest.loaders import check_size, is_supported

HASH_BLOCK = 1 << 20


@dataclass
class Listed:
    """A path met while collecting: to read (`reason` empty) or left out (`reason` says why; `failed` when it is a
    supported document that cannot be read, e.g. too large)."""

    path: Path
    source: str
    reason: str = ""
    failed: bool = False


def collect(paths: Sequence[str | Path]) -> list[Listed]:
    """Expand `paths` into the files to read and the entries left out, in order.

    Raises:
        BadInputError: a path does not exist (checked for all paths before anything is read).
    """
    resolved = []
    for raw in paths:
        path = Path(raw).expanduser()
        if not path.exists() and not path.is_symlink():
            raise BadInputError(f"{printable(str(raw))}: no such file or directory")
        resolved.append(path)
    out: list[Listed] = []
    for path in resolved:
        if path.is_dir():
            out.extend(_walk(path))
        else:
            out.append(_check(Listed(path, path.name)))
    return out


def _walk(root: Path) -> list[Listed]:
    inside = root.resolve()
    out: list[Listed] = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        here = Path(folder)
        kept = []
        for name in sorted(dirs):
            sub = here / name
            rel = sub.relative_to(root).as_posix()
            if name.startswith("."):
                out.append(Listed(sub, rel + "/", "hidden folder (name starts with '.'), not read"))
            elif sub.is_symlink():
                out.append(Listed(sub, rel + "/", "symbolic link to a folder, not followed"))
            else:
                kept.append(name)
        dirs[:] = kept
        for name in sorted(files):
            file = here / name
            item = Listed(file, file.relative_to(root).as_posix())
            if name.startswith("."):
                item.reason = "hidden file (name starts with '.'), not read"
            elif file.is_symlink():
                item.reason = _link_problem(file, inside)
            out.append(item if item.reason else _check(item))
    return out


def _link_problem(link: Path, inside: Path) -> str:
    """Why the symbolic link `link` is not read ("" when its target is a file inside `inside`)."""
    try:
        target = link.resolve(strict=True)
    except (OSError, RuntimeError):
        return "broken symbolic link"
    if not target.is_relative_to(inside):
        return f"symbolic link to {printable(str(target))}, outside {printable(str(inside))}; not followed"
    return "" if target.is_file() else "symbolic link to something other than a file"


def _check(item: Listed) -> Listed:
    """`item` with its reason set when it is not a regular supported file within its size limit."""
    path = item.path
    if not path.is_file():
        item.reason = "not a regular file" if path.exists() else "broken symbolic link"
    elif not is_supported(path):
        item.reason = f"unsupported file type {path.suffix or '(none)'!r}"
    else:
        try:
            check_size(path)
        except BadInputError as exc:
            item.reason, item.failed = str(exc), True
    return item


def file_sha256(path: Path) -> str:
    """sha256 of the file's bytes, read in blocks of `HASH_BLOCK` (the file is never held in memory whole).

    Raises:
        OSError: the file cannot be read.
    """
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(HASH_BLOCK):
            digest.update(block)
    return digest.hexdigest()
