"""benchmarks/diagnose_verify_time.py counts the kernels compiled into the sandbox's Triton cache, by name."""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "diagnose_verify_time.py"


def _script():
    spec = importlib.util.spec_from_file_location("diagnose_verify_time", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_compiled_kernels_are_counted_in_the_sandbox_cache_one_per_group_file(tmp_path):
    cache = tmp_path / "triton-cache"  # where Sandbox._env points TRITON_CACHE_DIR
    layout = {"h1": ["_fwd_kernel.json", "__grp___fwd_kernel.json", "_fwd_kernel.cubin", "_fwd_kernel.ptx"],
              "h2": ["_fwd_kernel.json", "__grp___fwd_kernel.json", "_fwd_kernel.cubin"],
              "h3": ["_reduce.json", "__grp___reduce.json", "_reduce.cubin"],
              "h4": ["_half_done.ttir"],  # a compilation still in progress (no group file yet)
              "h5": ["__triton_launcher.so"], "h6": ["cuda_utils.so"]}
    for key, names in layout.items():
        (cache / key).mkdir(parents=True)
        for name in names:
            (cache / key / name).write_text("x")
    (tmp_path / ".triton" / "cache" / "h7").mkdir(parents=True)  # not the sandbox's cache
    (tmp_path / ".triton" / "cache" / "h7" / "__grp__other.json").write_text("x")
    diagnose = _script()
    verifier = SimpleNamespace(_sandboxes={True: SimpleNamespace(scratch_base=tmp_path)})
    counts = diagnose.compiled_kernels(verifier)
    assert counts == Counter({"_fwd_kernel": 2, "_reduce": 1})
    assert diagnose.by_name(counts) == "_fwd_kernel 2, _reduce 1" and diagnose.by_name(Counter()) == "-"
