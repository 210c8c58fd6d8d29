"""SGLang 0.5.23's own extend-attention Triton kernel, as a benchmark peer and a GPU test reference.

`fetch` downloads the wheel from PyPI (``pip download sglang==0.5.23 --no-deps``) and extracts the kernel files the
function needs (``sglang/kernels/ops/attention/{extend_attention,decode_attention,score_mod,prefill_attention}.py``)
into the git-ignored ``.cache/sglang/`` of the checkout, with small import stubs of ours for the two runtime modules
they import (``sglang.srt.utils``: device queries; ``sglang.srt.environ``: the five environment flags they read,
with SGLang's defaults) and empty package ``__init__`` files (SGLang's own pull in the whole runtime). SGLang is
Apache-2.0; its files are never committed here. `load` imports the extracted module; it raises `SGLangUnavailable`
with the reason when the cache is missing, so a benchmark or test can skip.

    python benchmarks/sglang_kernel.py --fetch      # once, on a machine with PyPI access (then carry .cache/sglang)
    python benchmarks/sglang_kernel.py              # says whether the cache is there and loads
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from types import ModuleType

VERSION = "0.5.23"
ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "sglang"
MODULE = "sglang.kernels.ops.attention.extend_attention"
#: Files taken from the wheel (extend_attention imports decode_attention for `_extract_kv_strides` and score_mod).
KERNEL_FILES = tuple(f"sglang/kernels/ops/attention/{name}.py"
                     for name in ("extend_attention", "decode_attention", "score_mod", "prefill_attention"))
PACKAGES = ("sglang", "sglang/kernels", "sglang/kernels/ops", "sglang/kernels/ops/attention", "sglang/srt")

UTILS_STUB = '''"""chiplore's stub of sglang.srt.utils: the device queries SGLang's attention kernels import."""

import torch


def is_cuda():
    return torch.cuda.is_available() and torch.version.cuda is not None


def is_hip():
    return torch.version.hip is not None


def is_gfx95_supported():
    return False  # AMD-only code paths; the stub serves NVIDIA GPUs and the CPU interpreter


def is_gfx1250_supported():
    return False


def get_device_core_count(device_id=0):
    if torch.cuda.is_available():
        return torch.cuda.get_device_properties(device_id).multi_processor_count
    return 0


def get_device():
    return "cuda" if torch.cuda.is_available() else "cpu"
'''

ENVIRON_STUB = '''"""chiplore's stub of sglang.srt.environ: the flags SGLang 0.5.23's attention kernels read, with its
defaults (srt/environ.py), overridable by the same environment variables."""

import os

_DEFAULTS = {
    "SGLANG_TRITON_DECODE_ATTN_STATIC_KV_SPLITS": False, "SGLANG_FORCE_LEAN_GRID_CU_MULT": 1.0,
    "SGLANG_TRITON_COMPACT_EXTEND_ATTENTION": True, "SGLANG_MLA_DECODE_TUNE": False,
    "SGLANG_TRITON_FP8_PREFILL_ATTN": True,
}


class _Field:
    def __init__(self, name, default):
        self.name, self.default = name, default

    def get(self):
        raw = os.environ.get(self.name)
        if raw is None:
            return self.default
        if isinstance(self.default, bool):
            return raw.strip().lower() in ("1", "true", "yes", "on")
        return type(self.default)(raw)


class _Envs:
    def __getattr__(self, name):
        if name not in _DEFAULTS:
            raise AttributeError(f"sglang.srt.environ stub: no flag {name}")
        return _Field(name, _DEFAULTS[name])


envs = _Envs()
'''


class SGLangUnavailable(RuntimeError):
    """SGLang's kernel cannot be loaded here; the message says why and how to fetch it."""


def fetch(cache: Path = CACHE, version: str = VERSION) -> Path:
    """Download SGLang `version`'s wheel (no dependencies) and extract `KERNEL_FILES` plus our stubs into `cache`.

    Returns:
        `cache`. A ``SOURCE.json`` there records the wheel's file name and sha256 and each extracted file's sha256.

    Raises:
        SGLangUnavailable: pip failed or the wheel lacks a file (its output in the message).
    """
    with tempfile.TemporaryDirectory() as tmp:
        base = [sys.executable, "-m", "pip", "download", f"sglang=={version}", "--no-deps", "-d", tmp, "-q"]
        done = subprocess.run(base, capture_output=True, text=True)
        if done.returncode:  # this interpreter has no wheel of its own: the kernel files are the same in any
            done = subprocess.run(base + ["--only-binary=:all:", "--python-version", "3.11", "--platform",
                                          "manylinux_2_34_x86_64"], capture_output=True, text=True)
        wheels = sorted(Path(tmp).glob("sglang-*.whl"))
        if done.returncode or not wheels:
            raise SGLangUnavailable(f"pip download sglang=={version} failed: {(done.stderr or done.stdout)[-500:]}")
        wheel = wheels[0]
        source = {"version": version, "wheel": wheel.name, "wheel_sha256": _sha256(wheel.read_bytes()), "files": {}}
        with zipfile.ZipFile(wheel) as zf:
            names = set(zf.namelist())
            missing = [f for f in KERNEL_FILES if f not in names]
            if missing:
                raise SGLangUnavailable(f"{wheel.name} lacks {missing}")
            for name in KERNEL_FILES:
                data = zf.read(name)
                _write(cache / name, data)
                source["files"][name] = _sha256(data)
    for package in PACKAGES:
        _write(cache / package / "__init__.py", b"")
    _write(cache / "sglang/srt/utils.py", UTILS_STUB.encode())
    _write(cache / "sglang/srt/environ.py", ENVIRON_STUB.encode())
    _write(cache / "SOURCE.json", json.dumps(source, indent=1).encode())
    return cache


def load(cache: Path = CACHE) -> ModuleType:
    """SGLang's ``extend_attention`` module from `cache` (its ``extend_attention_fwd`` has SGLang 0.5.23's signature).

    Raises:
        SGLangUnavailable: the cache is missing, or another ``sglang`` is already imported.
    """
    if not (cache / KERNEL_FILES[0]).is_file():
        raise SGLangUnavailable(f"SGLang {VERSION}'s kernel is not in {cache}: run `python benchmarks/sglang_kernel.py "
                                "--fetch` where PyPI is reachable, then carry .cache/sglang")
    loaded = sys.modules.get("sglang")
    if loaded is not None and Path(getattr(loaded, "__file__", "") or "").parent != cache / "sglang":
        raise SGLangUnavailable(f"another sglang is already imported ({getattr(loaded, '__file__', '?')})")
    if str(cache) not in sys.path:
        sys.path.insert(0, str(cache))
    try:
        return importlib.import_module(MODULE)
    except Exception as exc:  # noqa: BLE001 - any import failure means the peer is unavailable, with its reason
        raise SGLangUnavailable(f"importing {MODULE} from {cache} failed: {type(exc).__name__}: {exc}") from exc


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fetch", action="store_true", help=f"download sglang=={VERSION} and extract its kernel files")
    ap.add_argument("--cache", type=Path, default=CACHE)
    args = ap.parse_args()
    if args.fetch:
        print(f"extracted into {fetch(args.cache)}")
    try:
        module = load(args.cache)
    except SGLangUnavailable as exc:
        sys.exit(f"unavailable: {exc}")
    print(f"loaded {module.__name__} from {module.__file__}")


if __name__ == "__main__":
    main()
