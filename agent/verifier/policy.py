"""What a candidate kernel file may use: one table shared by the static rules and the child-side guards.

The policy is an allow-list: a legitimate Triton candidate needs torch only to allocate and describe tensors
(``torch.empty``/``empty_like``/``full``, ``.shape``/``.stride()``/``.dtype``/``.device``), triton and
``triton.language`` for its kernels, ``math`` for host arithmetic, and the task's kernel family. Everything
that computes on tensor values outside a Triton kernel, talks to the operating system, introspects the
interpreter or keeps state across calls is refused (shared/reference/verifier_threats.md).
"""

from __future__ import annotations

#: Modules a candidate may import (exact names); the task's kernel package is added per task. ``kernels.chip`` holds
#: the chip limits every task's kernels run with (numbers from the chip's profile; nothing of any answer);
#: ``kernels.launch`` is the project's launch helper (a compiled Triton kernel launched without Triton's per-call
#: binding), whose launches the guards count and disable like `JITFunction.run`'s.
ALLOWED_IMPORTS: frozenset[str] = frozenset({"torch", "triton", "triton.language", "math", "typing", "__future__",
                                             "kernels.chip", "kernels.launch"})

#: Package prefixes a candidate's own import statements may name besides `ALLOWED_IMPORTS`.
ALLOWED_IMPORT_PREFIXES: tuple[str, ...] = ("triton.language.", "kernels.chip.", "kernels.launch.")

#: Modules of a task's kernel package that compute or describe the answer (the rest -- the kernel family, its
#: shared helpers, the baseline -- is kernel code a candidate may build on).
ANSWER_MODULES: frozenset[str] = frozenset({"reference", "spec", "cases"})

#: Name of the module-level flag by which a project module declares itself outside the candidate API
#: (``CANDIDATE_API = False``): it keeps buffers across calls for the task's own kernels (a workspace pool) and hands
#: them out by name, which would give a candidate state that survives between calls out of the static rules' sight.
CANDIDATE_API_FLAG = "CANDIDATE_API"

#: Tensor methods and properties that tell how a tensor was made rather than what it holds (inference mode, a view's
#: offset into a larger buffer, autograd state, shared or pinned memory): a candidate that branches on them can
#: compute honestly on the verifier's tensors and cut corners on a caller's (a q/k/v split out of one qkv tensor has
#: a nonzero storage offset). Triton reads a view's offset itself; a kernel never needs to ask.
PROVENANCE_ATTRS: frozenset[str] = frozenset({
    "is_inference", "storage_offset", "is_leaf", "requires_grad", "grad_fn", "is_shared", "is_pinned",
    "untyped_storage", "storage", "is_set_to", "is_view", "_base", "_version",
})

#: Project functions that set process-wide state: a candidate that calls one changes what later calls (its own and
#: the harness's) see, e.g. a call counter carried in the chip limits.
PROCESS_STATE_SETTERS: frozenset[str] = frozenset({"kernels.chip.set_chip_limits"})

#: Methods that change a container in place: called on an object reached from a module-level name (an attribute of
#: the candidate's own kernel, a container a helper returned), they keep state between calls.
MUTATING_METHODS: frozenset[str] = frozenset({
    "append", "extend", "insert", "update", "setdefault", "pop", "popitem", "clear", "add", "discard", "remove",
    "appendleft", "extendleft", "rotate", "sort", "reverse", "__setitem__", "__delitem__", "__iadd__",
})

#: Types of project objects that hold state across calls when a candidate writes them (module-level containers).
#: A torch.Tensor is added by the rule (this module imports nothing).
STATEFUL_TYPES: tuple[type, ...] = (dict, list, set, bytearray)

#: Project modules that hold the answer or the harness: importing one is a library call or tampering.
REFERENCE_MODULE_PREFIXES: tuple[str, ...] = (
    "kernels", "agent", "tests", "knowledge", "ingest", "hardware_profiles", "scripts",
)

#: Modules that run work outside the caller's thread, stream or process.
CONCURRENCY_MODULES: frozenset[str] = frozenset({
    "threading", "_thread", "multiprocessing", "concurrent", "asyncio", "subprocess", "signal", "sched",
})

#: Modules that introspect or rewrite the interpreter (frames, objects, memory, the import system).
INTROSPECTION_MODULES: frozenset[str] = frozenset({
    "gc", "inspect", "ctypes", "sys", "importlib", "builtins", "types", "weakref", "traceback", "dis",
    "marshal", "pickle", "copyreg", "code", "codeop", "ast", "faulthandler", "tracemalloc", "atexit",
    "cffi", "_ctypes", "numba", "cython", "pdb", "bdb", "runpy", "pkgutil", "site", "functools", "operator",
})

#: Modules that reach files, the network, the clock or the environment.
IO_MODULES: frozenset[str] = frozenset({
    "os", "io", "pathlib", "shutil", "tempfile", "glob", "fnmatch", "socket", "ssl", "urllib", "http",
    "requests", "ftplib", "smtplib", "mmap", "fcntl", "select", "selectors", "resource", "time", "timeit",
    "datetime", "json", "csv", "sqlite3", "shelve", "dbm", "zipfile", "tarfile", "gzip", "lzma", "bz2",
    "platform", "getpass", "pwd", "grp", "posix", "nt", "numpy", "random", "secrets", "hashlib", "uuid",
    "logging", "warnings", "contextlib", "copy",
})

#: Modules an attribute chain may reach besides the allowed imports and the task's kernel package (device
#: queries and Triton's driver, which the baseline reads shared-memory limits from).
REACHABLE_MODULES: frozenset[str] = frozenset({"torch.cuda", "torch.version", "triton.runtime",
                                               "triton.runtime.driver"})

#: Special methods a candidate's classes may define; every other one is a callback that torch or the interpreter
#: calls implicitly (``__index__`` while parsing a size, ``__del__`` after the call, ``__torch_function__``).
ALLOWED_SPECIAL_METHODS: frozenset[str] = frozenset({"__init__", "__post_init__", "__slots__", "__doc__"})

#: ``torch.X`` attributes a candidate may name: allocation, dtypes, devices, device queries.
TORCH_ALLOWED_ATTRS: frozenset[str] = frozenset({
    "empty", "empty_like", "empty_strided", "full", "full_like", "zeros", "zeros_like", "ones", "ones_like",
    "Tensor", "Size", "dtype", "device", "finfo", "iinfo", "float16", "bfloat16", "float32", "float64",
    "half", "float", "int8", "int16", "int32", "int64", "uint8", "bool", "long", "int", "float8_e4m3fn",
    "float8_e5m2", "cuda", "version", "no_grad", "inference_mode", "is_tensor", "get_default_dtype",
})

#: ``torch.cuda.X`` attributes a candidate may name (read-only device queries).
TORCH_CUDA_ALLOWED_ATTRS: frozenset[str] = frozenset({
    "is_available", "current_device", "device_count", "get_device_properties", "get_device_capability",
    "get_device_name",
})

#: ``torch.version.X`` attributes a candidate may name.
TORCH_VERSION_ALLOWED_ATTRS: frozenset[str] = frozenset({"cuda", "hip", "git_version"})

#: ``triton.X`` attributes a candidate may name.
TRITON_ALLOWED_ATTRS: frozenset[str] = frozenset({
    "jit", "autotune", "Config", "heuristics", "cdiv", "next_power_of_2", "language", "runtime", "constexpr",
    "OutOfResources",
})

#: Attribute names that mean streams, graphs, events or timers: work or clocks outside the harness's view.
TIMING_AND_STREAM_NAMES: frozenset[str] = frozenset({
    "Stream", "stream", "set_stream", "ExternalStream", "Event", "graph", "CUDAGraph", "graphs",
    "make_graphed_callables", "elapsed_time", "perf_counter", "perf_counter_ns", "do_bench",
    "do_bench_cudagraph", "testing", "synchronize", "current_stream", "default_stream", "launch_enter_hook",
    "launch_exit_hook", "knobs", "set_sync_debug_mode",
})

#: Tensor methods that compute on values (outside a Triton kernel this is a library call), move data to the host
#: or rebind storage. Matched by method name on any receiver that is not ``math``/``triton.language``.
TENSOR_COMPUTE_METHODS: frozenset[str] = frozenset({
    "matmul", "mm", "bmm", "baddbmm", "addmm", "addbmm", "einsum", "softmax", "log_softmax", "exp", "exp2",
    "expm1", "log", "log2", "log1p", "sum", "mean", "max", "min", "amax", "amin", "argmax", "argmin", "topk",
    "sort", "cumsum", "cumprod", "prod", "mul", "mul_", "add", "add_", "sub", "sub_", "div", "div_", "where",
    "masked_fill", "masked_fill_", "copy_", "clone", "set_", "index_select", "index_copy", "index_copy_",
    "gather", "scatter", "scatter_", "scatter_add", "scatter_add_", "index_put", "index_put_", "index_add_",
    "repeat", "repeat_interleave", "tanh", "tanh_", "sigmoid", "relu", "pow", "sqrt", "rsqrt", "abs", "neg",
    "reciprocal", "scaled_dot_product_attention", "flex_attention", "tolist", "item", "numpy", "cpu",
    "masked_scatter", "masked_scatter_", "triu", "tril", "outer", "dot", "vdot", "mv", "addcmul", "addcdiv",
    "lerp", "clamp", "clamp_", "clip", "norm", "normalize", "linear", "conv1d", "conv2d", "apply_", "map_",
    "share_memory_", "pin_memory", "record_stream", "register_hook", "backward", "new_tensor", "cat", "stack",
    "kron", "tensordot", "chain_matmul", "nan_to_num", "nan_to_num_", "logsumexp", "exp_", "log_",
    "baddbmm_", "copysign", "as_subclass", "uniform_", "normal_", "random_", "bernoulli_",
})

#: Calls that expose buffer identity (pointers, ids, storages): the keys of result caches across calls.
IDENTITY_CALLS: frozenset[str] = frozenset({"id", "hash", "data_ptr", "storage", "untyped_storage", "_cdata"})

#: Builtins that turn a tensor into text (``format(t[i], ".9g")`` reads an element through ``Tensor.__format__``):
#: host read-outs of values outside any Triton kernel. ``str``/f-strings stay allowed (error messages); the guards
#: refuse every printing path of a tensor at run time.
HOST_READOUT_BUILTINS: frozenset[str] = frozenset({"format", "repr", "ascii"})

#: Names of builtins that run code from strings, reach objects by name or leave the process.
FORBIDDEN_BUILTINS: frozenset[str] = frozenset({
    "exec", "eval", "compile", "__import__", "getattr", "setattr", "delattr", "hasattr", "globals", "locals",
    "vars", "open", "breakpoint", "input", "memoryview", "help", "dir", "__builtins__", "__loader__",
    "__spec__",
})

#: Names that end the process or the harness's run early.
EXIT_NAMES: frozenset[str] = frozenset({"exit", "quit", "SystemExit", "KeyboardInterrupt", "GeneratorExit",
                                        "BaseException", "_exit", "abort"})

#: Attribute names that walk frames, code objects, globals or the object graph.
INTROSPECTION_ATTRS: frozenset[str] = frozenset({
    "f_back", "f_locals", "f_globals", "f_code", "f_builtins", "f_lineno", "gi_frame", "gi_code", "cr_frame",
    "ag_frame", "tb_frame", "tb_next", "co_code", "co_consts", "func_globals", "func_code", "modules",
    "meta_path", "path_hooks", "settrace", "setprofile", "getrefcount",
})


def kernel_package(task_optimized_module: str) -> str:
    """The task's kernel package (``kernels.extend_attention``): its family and helper modules are importable."""
    return task_optimized_module


def module_reachable(name: str, package: str | None) -> bool:
    """Whether an attribute chain may reach module `name` (e.g. ``torch.cuda``; never ``torch.serialization``,
    ``torch.importlib`` = importlib, ``triton.runtime.jit``): an allowed import or one of `REACHABLE_MODULES`."""
    return import_allowed(name, package) or name in REACHABLE_MODULES


def import_allowed(name: str, package: str | None) -> bool:
    """Whether an import statement written in the candidate may name module `name` (relative imports never):
    torch, triton(.language), math, typing, and the task's kernel `package` minus its `ANSWER_MODULES`."""
    if name in ALLOWED_IMPORTS or name.startswith(ALLOWED_IMPORT_PREFIXES):
        return True
    if package is not None and (name == package or name.startswith(package + ".")):
        return not set(name[len(package) + 1:].split(".")) & ANSWER_MODULES
    return False
