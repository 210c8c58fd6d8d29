"""Which writable paths a Landlock-confined process needs for CUDA (and Triton) to work (GPU sessions 5 and 6).

    python scripts/probe_landlock_cuda.py            # every variant (~14 fresh processes, each compiles Triton)
    python scripts/probe_landlock_cuda.py --narrow   # only the device-node variants (session 6, item 2b)

The verifier's sandbox children confine their writes with Landlock (`agent/verifier/fs_isolation.py`); on the H200
a child confined to its scratch, the Triton cache and /dev failed in cudaGetDeviceCount (error 304, "OS call
failed") until /proc/self was added. Session 6 narrows /dev to the driver's device nodes
(`fs_isolation.gpu_device_paths`, granted file rights only): the "nodes" variants check that CUDA initializes, a
torch matmul (cuBLAS) runs and a Triton kernel compiles and runs with only those nodes writable.

Each probe is a fresh process that imports torch and Triton (as the sandbox zygote does before forking), applies
one variant, then initializes CUDA, runs a 64x64 matmul and a Triton add kernel compiled into a fresh cache (the
variant's Triton cache directory, outside its scratch, as the zygote's is). Prints a table: one row per variant,
``ok`` or the first failing step with its error. Without CUDA it says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PROBE = r"""
import ctypes, json, sys
import torch, triton, triton.language as tl
from agent.verifier.fs_isolation import restrict_writes
mode, writable, devices = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
step = "restrict"
try:
    if mode == "nnp":
        print("status: no_new_privs", ctypes.CDLL(None).prctl(38, 1, 0, 0, 0))
    elif mode == "landlock":
        print("status:", restrict_writes(writable, devices))
    step = "cuda init"
    torch.cuda.init()
    x = torch.ones(4, device="cuda") * 2
    torch.cuda.synchronize()
    assert float(x.sum()) == 8.0
    step = "matmul"
    a = torch.randn(64, 64, device="cuda")
    err = float((a @ a - (a.double() @ a.double()).float()).abs().max())
    assert err < 1e-2, err

    @triton.jit
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + tl.load(y_ptr + offs, mask=offs < n),
                 mask=offs < n)

    step = "triton"
    u, v = torch.arange(1000, device="cuda", dtype=torch.float32), torch.ones(1000, device="cuda")
    out = torch.empty_like(u)
    add[(4,)](u, v, out, 1000, BLOCK=256)
    torch.cuda.synchronize()
    assert torch.equal(out, u + 1)
    print("result: ok")
except BaseException as exc:
    print(f"result: {step} failed: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}")
"""


def variants(scratch: str, cache: str, devices: list[str], narrow: bool = False
             ) -> list[tuple[str, str, list[str], list[str]]]:
    """(name, mode, writable directories, device paths) of each probe: none, NO_NEW_PRIVS alone, Landlock from
    tight to all (sessions 5), then the narrow /dev variants the verifier's GPU children use (session 6).

    `scratch` and `cache` are placeholders replaced per probe with fresh directories; `narrow`: session 6 only."""
    base = [scratch, cache, "/dev"]
    extras = [["/proc/self"], ["/proc"], ["/sys"], ["/proc", "/sys"], ["/run", "/var", "/tmp"]]
    session5 = ([("none", "none", [], []), ("nnp only", "nnp", [], []),
                 ("scratch+cache", "landlock", [scratch, cache], []), ("+/dev", "landlock", base, [])]
                + [("+/dev +" + " +".join(more), "landlock", base + more, []) for more in extras]
                + [("/ (everything)", "landlock", ["/"], [])])
    child = [scratch, cache, "/proc/self"]  # what child.confine grants besides the devices
    nvidia = [d for d in devices if os.path.basename(d).startswith("nvidia")]
    session6 = [("nodes (child default)", "landlock", child, devices),
                ("nodes w/o /dev/null", "landlock", child, nvidia),
                ("nodes w/o /proc/self", "landlock", [scratch, cache], devices),
                ("child + all /dev (fallback)", "landlock", child + ["/dev"], [])]
    return session6 if narrow else session5 + session6


def cuda_available() -> str:
    """'' when torch sees a CUDA (or ROCm) device, else why not."""
    try:
        import torch
    except ImportError as exc:
        return f"torch is not importable ({exc})"
    return "" if torch.cuda.is_available() else "torch.cuda.is_available() is False (no GPU or no driver)"


def run_probe(script: str, mode: str, writable: list[str], devices: list[str], scratch: str, cache: str
              ) -> tuple[str, str, float]:
    """One fresh process; returns (status line, result line, seconds)."""
    t0 = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": scratch, "TMPDIR": scratch, "TRITON_CACHE_DIR": cache}
    try:
        proc = subprocess.run([sys.executable, script, mode, json.dumps(writable), json.dumps(devices)],
                              cwd=ROOT, capture_output=True, text=True, timeout=180, env=env)
    except subprocess.TimeoutExpired:
        return "", "timed out after 180 s", time.perf_counter() - t0
    lines = proc.stdout.splitlines()
    status = next((ln[len("status: "):] for ln in lines if ln.startswith("status: ")), "")
    result = next((ln[len("result: "):] for ln in lines if ln.startswith("result: ")), "")
    if not result:  # the process died (a signal, a crash inside the driver)
        err = (proc.stderr.strip().splitlines() or [""])[-1][:200]
        result = f"process ended rc={proc.returncode} without a result: {err}"
    return status, result, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--narrow", action="store_true", help="only the session-6 device-node variants")
    args = parser.parse_args(argv)
    why = cuda_available()
    if why:
        print(f"no CUDA device: {why}; nothing probed")
        return 0
    import torch

    from agent.verifier.fs_isolation import gpu_device_paths, landlock_abi

    devices = gpu_device_paths(hip=bool(torch.version.hip))
    print(f"Landlock ABI {landlock_abi()}; torch {torch.__version__}; {torch.cuda.get_device_name(0)}")
    print("device paths granted by the 'nodes' variants: " + " ".join(devices))
    base = tempfile.mkdtemp(prefix="landlock-probe-")
    script = os.path.join(base, "probe.py")  # a file: triton.jit reads its kernel's source (not from `-c`)
    Path(script).write_text(PROBE)
    todo = variants("SCRATCH", "CACHE", devices, narrow=args.narrow)
    rows = []
    for i, (name, mode, writable, devs) in enumerate(todo):
        scratch, cache = os.path.join(base, f"scratch-{i}"), os.path.join(base, f"triton-cache-{i}")
        os.makedirs(scratch)
        os.makedirs(cache)  # the child creates the cache before restricting (Landlock rules name existing paths)
        real = [{"SCRATCH": scratch, "CACHE": cache}.get(w, w) for w in writable]
        status, result, seconds = run_probe(script, mode, real, devs, scratch, cache)
        rows.append((name, "ok" if result == "ok" else "FAIL", f"{seconds:5.1f}", status, result))
        print(f"  {name}: {result}", flush=True)
    widths = [max(len(r[k]) for r in rows + [("variant", "result", "s", "landlock", "detail")]) for k in range(4)]
    print()
    for row in [("variant", "result", "s", "landlock", "detail")] + rows:
        print("  ".join(c.ljust(w) for c, w in zip(row[:4], widths)) + "  " + row[4])
    return 0


if __name__ == "__main__":
    sys.exit(main())
