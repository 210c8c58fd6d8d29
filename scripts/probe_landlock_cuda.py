"""Which writable directories a Landlock-confined process needs for CUDA to initialize (GPU session 5).

    python scripts/probe_landlock_cuda.py

The verifier's sandbox children confine their writes with Landlock (`agent/verifier/fs_isolation.py`); on the H200
a child confined to its scratch, the Triton cache and /dev failed in cudaGetDeviceCount (error 304, "OS call
failed"). Each probe is a fresh process that imports torch (as the sandbox zygote does before forking), applies
one variant, then initializes CUDA and runs one kernel. Prints one line per variant.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = r"""
import ctypes, sys
import torch
from agent.verifier.fs_isolation import restrict_writes
mode, paths = sys.argv[1], sys.argv[2:]
if mode == "nnp":
    print("no_new_privs only:", ctypes.CDLL(None).prctl(38, 1, 0, 0, 0))
elif mode == "landlock":
    print(restrict_writes(paths))
x = torch.ones(4, device="cuda") * 2
torch.cuda.synchronize()
print("cuda ok", float(x.sum()))
"""


def variants(scratch: str) -> list[tuple[str, list[str]]]:
    """(mode, writable directories) of each probe: none, NO_NEW_PRIVS alone, then Landlock from tight to all."""
    base = [scratch, "/dev"]
    extras = [["/proc/self"], ["/proc"], ["/sys"], ["/proc", "/sys"], ["/run", "/var", "/tmp"]]
    return ([("none", []), ("nnp", []), ("landlock", [scratch]), ("landlock", base)]
            + [("landlock", base + more) for more in extras] + [("landlock", ["/"])])


def main() -> None:
    scratch = tempfile.mkdtemp(prefix="landlock-probe-")
    for mode, paths in variants(scratch):
        proc = subprocess.run([sys.executable, "-c", PROBE, mode, *paths], cwd=ROOT, capture_output=True, text=True,
                              timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT), "HOME": scratch,
                                                "TMPDIR": scratch})
        last = (proc.stdout.strip().splitlines() or [""])[-1]
        err = (proc.stderr.strip().splitlines() or [""])[-1][:160]
        label = " ".join(p.replace(scratch, "SCRATCH") for p in paths)
        print(f"{mode:9s} [{label}] rc={proc.returncode} {last} {err if proc.returncode else ''}", flush=True)


if __name__ == "__main__":
    main()
