"""Host time of the tuned extend-attention entry point's own Python, on the CPU, with the GPU launch left out.

Method: each bench case's arguments are made on the CPU at their real shapes (`spec.make_inputs`; nothing is
computed on them) and two paths are timed in warm calls back to back (`timeit`, best of 5 repeats, process CPU time:
other processes on a shared machine do not count):

- ``first_us``: the plain host path of ``extend_attention_fwd``, the one every call took before replays (run this
  script on such a commit to time it there) and the first call of a signature takes now (the replay cache emptied
  before each call): checks, `tuned.choose_config`, `family.run_family` (fitting, workspaces, descriptors,
  constexpr dicts), and per kernel launch Triton's binding as `JITFunction.run` does it for an sm_90 target (the
  binder that specializes every argument, then the kernel-cache key); the compiled-kernel lookup and the launcher
  itself are left out (no GPU here).
- ``record_us``: the second call of a signature, the plain path inside a `kernels.launch.Recording` (each launch
  through a new `DirectLaunch`, its argument recipe built).
- ``replay_us``: a warm call of ``extend_attention_fwd`` now: the call signature (`tuned.call_key`), the replay
  lookup, and per launch the argument substitution, descriptor rebasing and `DirectLaunch.launch` up to the
  compiled kernel's launcher, which is replaced by one that returns at once.

What both leave out, and the GPU bench's host column (bench_extend_attention.py) adds: Triton's launcher
(`CompiledKernel.run`: argument parsing, TMA descriptor encoding, cuLaunchKernelEx) and the CUDA device and stream
queries. On the CPU, MLA runs the Triton MLA kernel's path; the H200 runs the Gluon kernel's (same mechanism).

    python benchmarks/host_overhead_extend.py [--calls 2000] [--cases decode,mla] [--out host.json]

No GPU, no interpreter: the kernels never run, so the figures are host time only, never kernel time.

With ``--device cuda`` (a GPU machine) the same cases run for real, replayed from the third call, and each row gives
host microseconds per replayed call (`kernels.timing.host_us`: ``time.perf_counter`` around one call, the device
synchronized between calls): ``host_us`` as the tuned entry point runs (launches through
`kernels.tensormap.PreparedLauncher`, tensor maps encoded once per buffer), ``host_us_triton_launcher`` with
`kernels.launch.PREPARED_LAUNCHERS` off (Triton's ``CompiledKernel.run``, which encodes every tensor map on every
launch), ``launch_us`` the part of a call spent in `DirectLaunch.launch_compiled` (the launchers), the launches per
call, the tensor maps encoded per replayed call (0 once the buffers were seen) and the launches per call that went
through ``JITFunction.run`` instead (0 unless launch hooks are set).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import make_backend  # noqa: E402
from triton.runtime.jit import JITFunction, compute_cache_key, create_function_from_signature  # noqa: E402

from hardware_profiles import load_profile  # noqa: E402
from kernels.chip import ChipLimits, chip_limits  # noqa: E402
from kernels.extend_attention import tuned  # noqa: E402
from kernels.extend_attention.spec import TASK, make_inputs  # noqa: E402

_BACKEND = make_backend(GPUTarget("cuda", 90, 32))
_BINDERS: dict[int, tuple] = {}


def binding_only_run(self, *args, grid, warmup, **kwargs):
    """Stand-in for `JITFunction.run` (Triton 3.6-3.9): the same option defaults, binder and cache key for an sm_90
    target, then return None (nothing compiled, nothing launched)."""
    kwargs["debug"] = kwargs.get("debug", self.debug)
    if id(self) not in _BINDERS:
        _BINDERS[id(self)] = ({}, create_function_from_signature(self.signature, self.params, _BACKEND))
    key_cache, binder = _BINDERS[id(self)]
    _, specialization, options = binder(*args, **kwargs)
    compute_cache_key(key_cache, specialization, options)
    return None


class NoLaunch:
    """A compiled kernel whose launcher returns at once (same call signature as `CompiledKernel.run`)."""

    function = 0
    packed_metadata = None

    @staticmethod
    def run(*args) -> None:
        return None


def first_call(args: dict) -> None:
    """The tuned entry point's plain host path: the replay cache emptied first where there is one (a main without
    replays takes this path on every call)."""
    replays = getattr(tuned, "_REPLAYS", None)
    if replays is not None:
        replays.clear()
    tuned.extend_attention_fwd(**args)


def recording_call(args: dict) -> None:
    """The call that records a signature (its second): the cache emptied, then the first call replaced by the mark."""
    tuned._REPLAYS.clear()
    tuned._REPLAYS.should_record(_KEY[0])
    tuned.extend_attention_fwd(**args)


_KEY: list = [None]


def per_call_us(fn, calls: int) -> float:
    """Best of 5 repeats of `calls` back-to-back calls, in microseconds per call."""
    return min(timeit.repeat(fn, number=calls, repeat=5, timer=time.process_time)) / calls * 1e6


def case_row(case, limits: ChipLimits, calls: int) -> dict:
    """Host microseconds per warm call of one bench case: the first-call path, the replay, the signature alone."""
    args = make_inputs(case, device="cpu")
    first_call(args)  # warm: binders made, fits remembered
    row = {"case": case.id, "first_us": per_call_us(lambda: first_call(args), max(1, calls // 10))}
    if not hasattr(tuned, "_REPLAYS"):
        print(f"{case.id:16s} plain path {row['first_us']:6.1f} us", flush=True)
        return row
    first_call(args)
    _KEY[0] = next(iter(tuned._REPLAYS._seen))
    row["record_us"] = per_call_us(lambda: recording_call(args), max(1, calls // 10))
    replays = list(tuned._REPLAYS._entries.values())
    if not replays:
        raise RuntimeError(f"{case.id}: the tuned entry point recorded no replay")
    launches = replays[0][1].launches
    for direct, *_ in launches:
        direct._compiled[None] = NoLaunch()  # None: the device of CPU tensors (no driver query)
    tensors = tuple(args.get(name) for name in ("q_extend", "k_extend", "v_extend", "o_extend", "k_buffer",
                                                "v_buffer", "qo_indptr", "kv_indptr", "kv_indices", "custom_mask",
                                                "mask_indptr", "sinks")) + (None, None)
    scalars = (args["is_causal"], args["sm_scale"], args["logit_cap"], args["skip_prefix_custom_mask"],
               args["sliding_window_size"], args["k_scale"], args["v_scale"], False, False, 1, False,
               args["max_len_extend"], None)
    row.update(launches=len(launches), replay_us=per_call_us(lambda: tuned.extend_attention_fwd(**args), calls),
               call_key_us=per_call_us(lambda: tuned.call_key(tensors, scalars, limits), calls))
    print(f"{case.id:16s} launches {row['launches']}  plain path {row['first_us']:6.1f} us  recording call "
          f"{row['record_us']:6.1f} us  replay {row['replay_us']:5.1f} us  (call_key {row['call_key_us']:4.1f} us)",
          flush=True)
    return row


def gpu_row(case, calls: int) -> dict:
    """Host microseconds per replayed call of one bench case on the GPU (module docstring, ``--device cuda``)."""
    from kernels import launch, tensormap
    from kernels.timing import host_us

    args = make_inputs(case, device="cuda")
    tuned._REPLAYS.clear()
    for _ in range(3):  # mark, record, first replay
        tuned.extend_attention_fwd(**args)
    torch.cuda.synchronize()
    replays = [replay for _, replay in tuned._REPLAYS._entries.values()]
    if len(replays) != 1:
        raise RuntimeError(f"{case.id}: {len(replays)} replays recorded, expected 1")
    encodes = tensormap.TENSOR_MAPS.encodes
    row = {"case": case.id, "launches": len(replays[0].launches),
           "host_us": host_us(tuned.extend_attention_fwd, args, calls)}
    row["maps_encoded_per_call"] = (tensormap.TENSOR_MAPS.encodes - encodes) / (calls + 1)
    spent, jit_calls = [0.0], [0]
    original, jit_run = launch.DirectLaunch.launch_compiled, JITFunction.run

    def timed(self, *a):
        t0 = time.perf_counter()
        original(self, *a)
        spent[0] += time.perf_counter() - t0

    def counted(self, *a, **k):
        jit_calls[0] += 1
        return jit_run(self, *a, **k)

    launch.DirectLaunch.launch_compiled, JITFunction.run = timed, counted
    try:
        host_us(tuned.extend_attention_fwd, args, calls)
    finally:
        launch.DirectLaunch.launch_compiled, JITFunction.run = original, jit_run
    row["launch_us"] = spent[0] / (calls + 1) * 1e6
    row["jit_launches_per_call"] = jit_calls[0] / (calls + 1)  # 0 when every launch is replayed directly
    row["launch_hooks"] = launch.launch_hooks()
    launch.PREPARED_LAUNCHERS = False
    try:
        row["host_us_triton_launcher"] = host_us(tuned.extend_attention_fwd, args, calls)
    finally:
        launch.PREPARED_LAUNCHERS = True
    print(f"{case.id:16s} launches {row['launches']}  host {row['host_us']:6.1f} us (launchers {row['launch_us']:5.1f})"
          f"  with Triton's launcher {row['host_us_triton_launcher']:6.1f} us  maps encoded per call "
          f"{row['maps_encoded_per_call']:.2f}  JITFunction.run per call {row['jit_launches_per_call']:.2f}"
          f"{'  (launch hooks set)' if row['launch_hooks'] else ''}", flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--cases", help="comma-separated bench case ids (default: all)")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    cases = [TASK.case(c) for c in args.cases.split(",")] if args.cases else list(TASK.bench_cases)
    limits = ChipLimits.from_profile(load_profile("h200"))  # the bench's (--chip h200)
    if args.device == "cuda":
        with chip_limits(limits):
            rows = [gpu_row(case, min(args.calls, 200)) for case in cases]
        if args.out:
            args.out.write_text(json.dumps({"rows": rows, "device": torch.cuda.get_device_name(),
                                            "torch": torch.__version__}, indent=1))
        return
    JITFunction.run = binding_only_run
    with chip_limits(limits):
        rows = [case_row(case, limits, args.calls) for case in cases]
    if args.out:
        args.out.write_text(json.dumps({"rows": rows, "torch": torch.__version__}, indent=1))


if __name__ == "__main__":
    main()
