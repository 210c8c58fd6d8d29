"""Filesystem write isolation for a sandbox child with Linux Landlock (unprivileged, kernel >= 5.13).

The audit hook refuses Python-level opens for writing, but C++ entry points open files without an audit event (the
red team of session 4 wrote arbitrary files through a file-backed torch storage). Landlock makes the kernel refuse
every write outside the directories a child may write to -- whatever API asks -- for the child and every process
it starts (ptxas included). Reads are not restricted. Rules follow the kernel's documentation
(Documentation/userspace-api/landlock.rst, "Landlock: unprivileged access control"): a ruleset handling the
write-type access rights, one path-beneath rule per writable directory, ``PR_SET_NO_NEW_PRIVS``, then
``landlock_restrict_self``. Syscall numbers 444-446 are the same on x86-64 and arm64 (asm-generic).

On a GPU the driver opens its device nodes for writing (``open(O_RDWR)`` needs ``LANDLOCK_ACCESS_FS_WRITE_FILE``);
`gpu_device_paths` lists them, and `restrict_writes` grants them file rights only. Landlock's documentation
(https://docs.kernel.org/userspace-api/landlock.html, "Filesystem flags") says "A file can only receive these access
rights": execute, write_file, read_file, truncate, ioctl_dev -- a rule on a non-directory naming a directory right
(make_*, remove_*, refer) is refused with EINVAL (security/landlock/fs.c, ``landlock_append_fs_rule``; checked on
/dev/null here, tests/verifier/test_fs_isolation.py). ``LANDLOCK_ACCESS_FS_IOCTL_DEV`` (ABI 5) is not handled by the
ruleset, so the driver's ioctls stay allowed.
"""

from __future__ import annotations

import ctypes
import glob
import os
import struct
from collections.abc import Sequence

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1  # flag: return the ABI version instead of creating a ruleset
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

# Access rights (include/uapi/linux/landlock.h): what a write can be, per ABI version that introduced it.
_WRITE_FILE, _REMOVE_DIR, _REMOVE_FILE = 1 << 1, 1 << 4, 1 << 5
_MAKE = sum(1 << b for b in range(6, 13))  # MAKE_CHAR, MAKE_DIR, MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM
_REFER, _TRUNCATE = 1 << 13, 1 << 14  # ABI 2, ABI 3
_FILE_WRITE = _WRITE_FILE | _TRUNCATE  # the write-type rights a rule on a non-directory may carry


def write_rights(abi: int) -> int:
    """The write-type access rights Landlock ABI `abi` knows (a ruleset must not name newer ones)."""
    rights = _WRITE_FILE | _REMOVE_DIR | _REMOVE_FILE | _MAKE
    if abi >= 2:
        rights |= _REFER
    if abi >= 3:
        rights |= _TRUNCATE
    return rights


def file_write_rights(abi: int) -> int:
    """The write-type rights of ABI `abi` that a rule on a file (a device node) may carry: write_file, truncate.

    Truncate is harmless on a character device (the kernel drops ``O_TRUNC`` for non-regular files) and keeps
    ``open(O_WRONLY | O_TRUNC)`` of /dev/null working, as a shell redirection does.
    """
    return write_rights(abi) & _FILE_WRITE


def gpu_device_paths(dev: str = "/dev", hip: bool = False) -> list[str]:
    """The device paths a GPU child may write (file rights only, see `restrict_writes`), those that exist under `dev`.

    NVIDIA: every ``nvidia*`` entry -- the nodes nvidiactl, nvidia0..N, nvidia-uvm, nvidia-uvm-tools, nvidia-modeset
    and the directories nvidia-caps (MIG capability nodes) and nvidia-caps-imex-channels where present. ROCm
    (`hip`): kfd and the directory dri (render nodes). Both: null. Other nodes (/dev/shm, /dev/mqueue, ...) are left
    out: a candidate wrote /dev/shm through ``torch.save`` when all of /dev was writable (red team, session 5).
    """
    paths = sorted(glob.glob(os.path.join(glob.escape(dev), "nvidia*")))
    if hip:
        paths += [p for p in (os.path.join(dev, "kfd"), os.path.join(dev, "dri")) if os.path.exists(p)]
    null = os.path.join(dev, "null")
    return paths + ([null] if os.path.exists(null) else [])


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 when Landlock is missing or disabled."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    version = libc.syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(int(version), 0)


def restrict_writes(writable: Sequence[str], devices: Sequence[str] = ()) -> str:
    """Allow this process (and its future children) to write only beneath the directories in `writable` and to the
    files in `devices`.

    Irreversible for the process. A `writable` directory gets every write right (create, remove, rename beneath
    it); non-directories there and paths that do not exist are skipped. A `devices` path (a device node, or a
    directory of nodes such as /dev/nvidia-caps) gets `file_write_rights` only: open for writing and truncate, never
    create or remove -- the only rights Landlock accepts on a non-directory (EINVAL otherwise). Devices that do not
    exist are skipped.

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
        for path in devices:
            if os.path.exists(path):
                _allow_beneath(libc, int(ruleset), path, file_write_rights(abi))
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
