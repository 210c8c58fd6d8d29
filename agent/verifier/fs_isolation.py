"""Filesystem write isolation for a sandbox child with Linux Landlock (unprivileged, kernel >= 5.13).

The audit hook refuses Python-level opens for writing, but C++ entry points open files without an audit event (the
red team of session 4 wrote arbitrary files through a file-backed torch storage). Landlock makes the kernel refuse
every write outside the directories a child may write to -- whatever API asks -- for the child and every process
it starts (ptxas included). Reads are not restricted. Rules follow the kernel's documentation
(Documentation/userspace-api/landlock.rst, "Landlock: unprivileged access control"): a ruleset handling the
write-type access rights, one path-beneath rule per writable directory, ``PR_SET_NO_NEW_PRIVS``, then
``landlock_restrict_self``. Syscall numbers 444-446 are the same on x86-64 and arm64 (asm-generic).
"""

from __future__ import annotations

import ctypes
import os
import struct

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1  # flag: return the ABI version instead of creating a ruleset
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

# Access rights (include/uapi/linux/landlock.h): what a write can be, per ABI version that introduced it.
_WRITE_FILE, _REMOVE_DIR, _REMOVE_FILE = 1 << 1, 1 << 4, 1 << 5
_MAKE = sum(1 << b for b in range(6, 13))  # MAKE_CHAR, MAKE_DIR, MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM
_REFER, _TRUNCATE = 1 << 13, 1 << 14  # ABI 2, ABI 3


def write_rights(abi: int) -> int:
    """The write-type access rights Landlock ABI `abi` knows (a ruleset must not name newer ones)."""
    rights = _WRITE_FILE | _REMOVE_DIR | _REMOVE_FILE | _MAKE
    if abi >= 2:
        rights |= _REFER
    if abi >= 3:
        rights |= _TRUNCATE
    return rights


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 when Landlock is missing or disabled."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    version = libc.syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(int(version), 0)


def restrict_writes(writable: list[str]) -> str:
    """Allow this process (and its future children) to write only beneath the directories in `writable`.

    Irreversible for the process. Directories that do not exist are skipped.

    Returns:
        ``"landlock ABI <n>"`` when applied, or ``"unavailable: <why>"`` when the kernel has no Landlock (the child
        then runs with the audit hook and the refusing wrappers only; the verdict records which).

    Raises:
        OSError: Landlock is present but a step failed (the child must not run half-confined).
    """
    abi = landlock_abi()
    if abi < 1:
        return "unavailable: the kernel has no Landlock (Linux >= 5.13 with landlock in the LSM list)"
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    rights = write_rights(abi)
    attr = ctypes.create_string_buffer(struct.pack("=Q", rights))
    ruleset = libc.syscall(_CREATE_RULESET, attr, ctypes.c_size_t(8), ctypes.c_uint32(0))
    if ruleset < 0:
        raise _errno_error("landlock_create_ruleset")
    try:
        for path in writable:
            if os.path.isdir(path):
                _allow_beneath(libc, int(ruleset), path, rights)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise _errno_error("prctl(PR_SET_NO_NEW_PRIVS)")
        if libc.syscall(_RESTRICT_SELF, ctypes.c_int(int(ruleset)), ctypes.c_uint32(0)) != 0:
            raise _errno_error("landlock_restrict_self")
    finally:
        os.close(int(ruleset))
    return f"landlock ABI {abi}"


def _allow_beneath(libc: ctypes.CDLL, ruleset: int, path: str, rights: int) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        rule = ctypes.create_string_buffer(struct.pack("=Qi", rights, fd))  # struct landlock_path_beneath_attr
        if libc.syscall(_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH), rule,
                        ctypes.c_uint32(0)) != 0:
            raise _errno_error(f"landlock_add_rule({path})")
    finally:
        os.close(fd)


def _errno_error(what: str) -> OSError:
    err = ctypes.get_errno()
    return OSError(err, f"{what}: {os.strerror(err)}")
