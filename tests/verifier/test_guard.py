"""The child-side guards, one layer at a time, in a throwaway interpreter (audit hooks cannot be removed, so they
never run inside the pytest process). Untrusted code is compiled under a file name outside torch, triton and
the project, exactly as a candidate file is."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent('''
    import json, sys, textwrap, torch
    sys.path.insert(0, {root!r})
    from pathlib import Path
    from agent.verifier import guard
    from agent.verifier.guard import STATE, FrameJudge, Guards, SandboxViolation

    guards = Guards(FrameJudge(Path({root!r})), "kernels.extend_attention", torch.device("cpu"))
    guards._patch_streams()  # the CUDA-only layer: refusing happens before torch would need a GPU
    results = {{}}

    def attempt(name, code):
        STATE.violations.clear()
        source = "def run():" + chr(10) + textwrap.indent(code.replace("; ", chr(10)), "    ") + chr(10)
        namespace = {{"torch": torch}}
        exec(compile(source, "/tmp/untrusted_candidate.py", "exec"), namespace)
        try:
            with guards.armed():
                namespace["run"]()
            results[name] = "refused: " + STATE.violations[0] if STATE.violations else "allowed"
        except SandboxViolation as exc:
            results[name] = "refused: " + str(exc)
        except BaseException as exc:  # torch turns an exception raised in a callback into its own TypeError
            results[name] = ("refused: " + STATE.violations[0] if STATE.violations
                             else "error: " + type(exc).__name__ + ": " + str(exc))

    {attempts}
    print(json.dumps(results))
''')

#: A class whose __index__ runs torch compute the third time torch asks: the third call is the one a torch
#: function mode would make while it re-runs the allowed call with itself popped.
TRIGGER = ("box = [0]; class Trigger:\n    def __index__(self):\n        box[0] += 1\n        if box[0] == 3:\n"
           "            torch.ones(2, 2).mm(torch.ones(2, 2))\n        return 1")
DEL_CYCLE = ("class Later:\n    def __del__(self):\n        torch.ones(2).sum()\n"
             "def make():\n    x = Later()\n    x.me = x; make()")

ATTEMPTS = {
    "alloc_and_views": ("x = torch.empty(4, 4); y = x[1:3].view(-1); x.fill_(0); s = x.shape, x.stride()", "allowed"),
    "torch_matmul": ("torch.mm(torch.ones(2, 2), torch.ones(2, 2))", "forbidden torch operation aten.mm"),
    "tensor_method_compute": ("torch.ones(3).softmax(0)", "forbidden torch operation"),
    "host_read_item": ("torch.ones(3)[0].item()", "_local_scalar_dense"),
    "host_read_tolist": ("torch.ones(3).tolist()", "host read-out"),
    "host_read_numpy": ("torch.ones(3).numpy()", "host read-out"),
    "host_read_numpy_via_super": ("super(torch.Tensor, torch.ones(3)).numpy()", "host read-out"),
    "host_read_format": ("format(torch.ones(3)[0], '.9g')", "host read-out"),
    "host_read_str": ("str(torch.ones(3))", "host read-out"),
    "host_read_fstring": ("f'{torch.ones(3)[0]:.9g}'", "host read-out"),
    "host_read_percent": ("'%s' % (torch.ones(3),)", "host read-out"),
    "host_read_float": ("float(torch.ones(3)[0])", "_local_scalar_dense"),
    "host_read_bool": ("bool(torch.ones(1))", "forbidden torch operation"),
    "host_read_private_printer": ("torch._tensor_str._str(torch.ones(3))", "switches the torch guard off"),
    "host_read_storage": ("torch.ones(3).untyped_storage()", "host read-out"),
    "host_read_dlpack": ("torch.utils.dlpack.to_dlpack(torch.ones(3))", "_to_dlpack"),
    "advanced_index": ("torch.ones(3)[torch.tensor([0, 1])]", "forbidden torch operation"),
    "index_callback_compute": (TRIGGER + "; torch.empty(Trigger())", "forbidden torch operation aten.mm"),
    "torch_function_callback": ("class Hook:\n    @classmethod\n    def __torch_function__(cls, f, t, a=(), k=None):\n"
                                "        torch.ones(2).sum()\n        return torch.empty(1)\n"
                                "torch.empty_like(Hook())", "forbidden torch operation aten.sum"),
    "finalizer_after_return": (DEL_CYCLE, "forbidden torch operation aten.ones"),
    "gc_switched_on": ("torch.sys.modules['gc'].enable()", "garbage collection was switched back on"),
    "disable_modes": ("with torch.utils._python_dispatch._disable_current_modes():\n    torch.ones(2).sum()",
                      "switches the torch guard off"),
    "disable_dispatch": ("with torch._C._DisableTorchDispatch():\n    torch.ones(2).sum()",
                         "switches the torch guard off"),
    "register_kernel": ("torch._C._dispatch_library('IMPL', 'aten', '')", "switches the torch guard off"),
    "dispatch_subclass": ("class S(torch.Tensor):\n    @classmethod\n"
                          "    def __torch_dispatch__(cls, f, t, a=(), k=None):\n"
                          "        return f(*a, **(k or {}))\ntorch.empty_like(torch.Tensor._make_subclass(S, "
                          "torch.empty(2)))", "tensor subclass"),
    "signal_handler": ("torch.sys.modules['signal'].signal(14, print)", "installs a signal handler"),
    "flag_flip_keeps_guards": ("torch.sys.modules['agent.verifier.judge'].STATE.active = False; "
                               "open('shadow.py', 'w')", "sandbox: open"),
    # the guards' own "judging" flag is plain Python state: forged, it must not wave through what they refuse
    "in_guard_forged_open": ("torch.sys.modules['agent.verifier.judge'].STATE.in_guard = True; "
                             "open('shadow.py', 'w')", "sandbox: open"),
    "in_guard_forged_import": ("torch.sys.modules['agent.verifier.judge'].STATE.in_guard = True; import os",
                               "import of 'os'"),
    "in_guard_forged_dispatch_off": ("torch.sys.modules['agent.verifier.judge'].STATE.in_guard = True\n"
                                     "with torch._C._DisableTorchDispatch():\n    torch.ones(2).sum()",
                                     "switches the torch guard off"),
    "import_os": ("import os", "import of 'os'"),
    "import_cached_sys": ("import sys", "import of 'sys'"),
    "import_math": ("import math, triton.language", "allowed"),
    "from_torch_import_module": ("from torch import os", "module os"),
    "open_for_write": ("open('shadow.py', 'w')", "sandbox: open"),
    "thread": ("torch.sys.modules['threading'].Thread(target=print).start()", "starts a thread"),
    "side_stream": ("torch.cuda.Stream()", "side stream or graph"),
    "set_stream": ("torch.cuda.set_stream(None)", "switches streams"),
    "frame_walk": ("torch.sys._getframe(0)", "sys._getframe"),
    "gc_scan": ("torch.sys.modules['gc'].get_objects()", "gc.get_objects"),
    "exec_string": ("exec('1')", "sandbox: compile"),
    # a subclass of a trusted dataclass with a C-level __post_init__, re-created by trusted kernel code
    # (dataclasses.replace in family.resolve_tiles): the generated __init__ would open the file under the kernel's name
    "dataclass_post_init_via_trusted_replace": (
        "from kernels.extend_attention import family; sink = []\nclass Config(family.FamilyConfig):\n    pass\n"
        "config = Config(ragged_tiles=16); Config.__post_init__ = staticmethod(torch.sys.modules['functools'].partial("
        "sink.extend, map(open, ['shadow.py'], ['w']))); family.resolve_tiles(config, None, None)", "sandbox: open"),
}


@pytest.fixture(scope="module")
def results():
    lines = "\n".join(f"attempt({name!r}, {code!r})" for name, (code, _) in ATTEMPTS.items())
    script = SCRIPT.format(root=str(ROOT), attempts=lines)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={"TRITON_INTERPRET": "1", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", sorted(ATTEMPTS))
@pytest.mark.slow
def test_guard_layer(results, name):
    expected = ATTEMPTS[name][1]
    if expected == "allowed":
        assert results[name] == "allowed"
    else:
        assert results[name].startswith("refused") and expected in results[name], results[name]


MODES = textwrap.dedent('''
    import json, torch
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode
    seen = {"function": [], "dispatch": []}

    class Functions(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen["function"].append(getattr(func, "__name__", str(func)))
            return func(*args, **(kwargs or {}))

    class Dispatch(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen["dispatch"].append(str(func.overloadpacket))
            return func(*args, **(kwargs or {}))

    class Trigger:
        calls = 0
        def __index__(self):
            Trigger.calls += 1
            torch.ones(2, 2).mm(torch.ones(2, 2))
            return 1

    for name, mode in (("function", Functions), ("dispatch", Dispatch)):
        Trigger.calls = 0
        with mode():
            torch.empty(Trigger())
        seen[name + "_index_calls"] = Trigger.calls
    print(json.dumps(seen))
''')


@pytest.mark.slow
def test_dispatch_mode_sees_ops_of_reentrant_callbacks_a_function_mode_misses():
    """The claim the compute guard rests on: torch pops a TorchFunctionMode while the mode re-runs a call, so
    torch ops made by a Python callback during that re-run (``__index__`` parsing a size) never reach it; a
    TorchDispatchMode stays on its stack and sees every one of them."""
    proc = subprocess.run([sys.executable, "-c", MODES], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    calls_f, calls_d = seen["function_index_calls"], seen["dispatch_index_calls"]
    assert calls_f > calls_d >= 1  # the function mode makes torch parse the size again
    assert seen["function"].count("mm") < calls_f  # some callbacks' mm calls ran with the mode popped
    assert seen["dispatch"].count("aten.mm") == calls_d  # every callback's mm reached the dispatch mode


DIRECT = textwrap.dedent('''
    import json, sys, torch
    sys.path.insert(0, {root!r})
    from pathlib import Path
    from agent.verifier.guard import STATE, FrameJudge, Guards
    from kernels.launch import DirectLaunch
    from kernels.splitk_gemm.family_kernels import _reduce_kernel

    guards = Guards(FrameJudge(Path({root!r})), "kernels.splitk_gemm", torch.device("cpu"))  # installs them
    ran = []

    class Compiled:  # stands for a CompiledKernel kept by a DirectLaunch: its launcher records the call
        function, packed_metadata = 0, None
        def run(self, *args):
            ran.append(len(args))

    launch = DirectLaunch(_reduce_kernel, (1,), dict(SPLIT_K=1, BLOCK=16, UNROLL=8), 6)
    launch._compiled[None] = Compiled()
    out = {{}}
    for disabled in (False, True):
        STATE.launches = 0
        with guards.armed(disabled):
            launch.launch(None, 0, (torch.empty(4), torch.empty(4), 1, 4, 4, 1))
        out[str(disabled)] = {{"launches": STATE.launches, "ran": len(ran)}}
    print(json.dumps(out))
''')


@pytest.mark.slow
def test_direct_launches_are_counted_and_disabled_like_jit_launches():
    """A kernel launched through `kernels.launch.DirectLaunch` (a kept compiled kernel, no JITFunction.run) is
    counted by the guards, and under kernel ablation it does not run."""
    proc = subprocess.run([sys.executable, "-c", DIRECT.format(root=str(ROOT))], capture_output=True, text=True,
                          timeout=120, env={"TRITON_INTERPRET": "1", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == {"False": {"launches": 1, "ran": 1}, "True": {"launches": 1, "ran": 1}}, out  # ran: cumulative


def test_free_blocks_of_small_segments_are_taken_back_in_small_pool_requests():
    from agent.verifier.guard import _refill_requests

    mib = 1 << 20
    snapshot = [
        {"segment_type": "small", "blocks": [{"size": 2 * mib, "state": "inactive"}]},
        {"segment_type": "small", "blocks": [{"size": mib // 2, "state": "active_allocated"},
                                             {"size": 3 * mib // 2, "state": "inactive"}]},
        {"segment_type": "large", "blocks": [{"size": 20 * mib, "state": "inactive"},
                                             {"size": 4 * mib, "state": "active_allocated"}]},
    ]
    requests = _refill_requests(snapshot)
    # every request of a small segment's block must be small-pool sized (<= 1 MiB) and cover the block exactly
    assert sorted(requests) == sorted([mib, mib, mib, mib // 2, 20 * mib])
    assert sum(requests) == 2 * mib + 3 * mib // 2 + 20 * mib


#: Where a candidate finds the judge and the guards' state: the dispatch mode on torch's stack, the import hook's
#: ``__self__``, the closure of a refusing torch wrapper, the shared `SandboxState`. Each attempt tampers with every
#: one it can (ignoring the errors sealed objects raise) and then does what the guards refuse.
FIND = textwrap.dedent("""\
    def holders():
        found = [torch.utils._python_dispatch._get_current_dispatch_mode()]
        found.append(getattr(torch.sys.modules['builtins'].__import__, '__self__', None))
        return [h for h in found if h is not None]
    def judges():
        return [j for j in (getattr(h, 'judge', None) for h in holders()) if j is not None]
    def attempt_all(*steps):
        for step in steps:
            try:
                step()
            except (AttributeError, TypeError, ValueError):
                pass
    class Fake:
        def responsible(self, frame): return (None, 'trusted')
        def is_harness(self, frame): return True
        def frame_kind(self, frame): return 'trusted'
        def code_kind(self, code): return 'trusted'
        def kind(self, name): return 'trusted'
    FAKES = {n: getattr(Fake, n) for n in ('responsible', 'is_harness', 'frame_kind', 'code_kind', 'kind')}
""")

#: Tampering with the judge or the guards' own objects, then a refused operation: the refusal must stand.
TAMPERING = {
    # the judge's methods rebound on the instance and on its class
    "judge_method_rebound": (
        "for j in judges():\n    for n, f in FAKES.items():\n"
        "        attempt_all(lambda: setattr(j, n, f.__get__(j)), lambda: setattr(type(j), n, f))\n"
        "torch.ones(2).sum()", "forbidden torch operation"),
    # every dict the judge holds (its caches) calls untrusted code transparent and any code the harness, the
    # candidate's own file and the script around it included
    "judge_cache_edited": (
        "for j in judges():\n    for n in [n for n in dir(j) if not n.startswith('__')]:\n"
        "        v = getattr(j, n, None)\n        if type(v) is dict:\n"
        "            for k in list(v) + ['/tmp/untrusted_candidate.py', '<string>']:\n"
        "                v[k] = True if type(v.get(k)) is bool else ('transparent' if v.get(k, 'untrusted') == "
        "'untrusted' else v[k])\n"
        "        attempt_all(lambda: v.cache_clear())\n"
        "open('shadow.py', 'w')", "sandbox: open"),
    # another judge put where the guards keep theirs
    "judge_replaced": (
        "for h in holders():\n"
        "    attempt_all(lambda: setattr(h, 'judge', Fake()), lambda: setattr(type(h), 'judge', Fake()))\n"
        "torch.ones(2).sum()", "forbidden torch operation"),
    "refusal_judge_replaced": (
        "for c in getattr(torch.Tensor.__repr__, '__closure__', None) or ():\n"
        "    if hasattr(c.cell_contents, 'responsible'):\n        c.cell_contents = Fake()\n"
        "str(torch.ones(3))", "host read-out"),
    # the mode's handler shadowed by an instance attribute or rebound on its class
    "dispatch_handler_shadowed": (
        "def passthrough(self, func, types, args=(), kwargs=None):\n    return func(*args, **(kwargs or {}))\n"
        "mode = holders()[0]\nmethod = torch.sys.modules['types'].MethodType(passthrough, mode)\n"
        "attempt_all(lambda: setattr(mode, '__torch_dispatch__', method),\n"
        "            lambda: mode.__dict__.__setitem__('__torch_dispatch__', method),\n"
        "            lambda: setattr(type(mode), '__torch_dispatch__', passthrough))\n"
        "torch.ones(2).sum()", "forbidden torch operation"),
    # the shared state's 'armed' answer rebound, with the flag off
    "state_armed_rebound": (
        "state = torch.sys.modules['agent.verifier.judge'].STATE\n"
        "attempt_all(lambda: setattr(type(state), 'armed', lambda self: False),\n"
        "            lambda: setattr(state, 'armed', lambda: False),\n"
        "            lambda: state.__dict__.__setitem__('armed', lambda: False))\nstate.active = False\n"
        "open('shadow.py', 'w')", "sandbox: open"),
    # a module global the import hook consults rebound
    "policy_global_rebound": (
        "torch.sys.modules['agent.verifier.policy'].import_allowed = lambda *a: True\nimport os",
        "import of 'os'"),
}


@pytest.fixture(scope="module")
def tampering_results():
    """Each attempt in its own throwaway interpreter: tampering that works would leak into the next attempt."""
    results = {}
    for name, (code, _) in TAMPERING.items():
        script = SCRIPT.format(root=str(ROOT), attempts=f"attempt({name!r}, {FIND + code!r})")
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                              env={"TRITON_INTERPRET": "1", "PATH": "/usr/bin:/bin"},
                              cwd=str(ROOT / "tests" / "verifier"))
        Path(ROOT / "tests" / "verifier" / "shadow.py").unlink(missing_ok=True)
        assert proc.returncode == 0, proc.stderr[-3000:]
        results.update(json.loads(proc.stdout.strip().splitlines()[-1]))
    return results


@pytest.mark.parametrize("name", sorted(TAMPERING))
@pytest.mark.slow
def test_tampering_with_the_judge_leaves_its_refusals_standing(tampering_results, name):
    """The judge, the mode's handler and the hooks' state are sealed (agent/verifier/seal.py): a candidate that
    reaches them can neither rebind, edit nor replace them."""
    result = tampering_results[name]
    assert result.startswith("refused") and TAMPERING[name][1] in result, result


HARNESS_CLASSES = textwrap.dedent('''
    import json, sys, torch
    sys.path.insert(0, {root!r})
    from pathlib import Path
    from agent.verifier import child
    from agent.verifier.guard import FrameJudge, Guards

    guards = Guards(FrameJudge(Path({root!r})), "kernels.extend_attention", torch.device("cpu"))
    code = ("def run():\\n"
            "    child = torch.sys.modules['agent.verifier.child']\\n"
            "    child.Child._contract_problems = lambda self, *a: []\\n"
            "    guard = torch.sys.modules['agent.verifier.guard']\\n"
            "    try:\\n"
            "        guard.Guards.after_call = lambda self, *a: []\\n"
            "    except TypeError:\\n"
            "        pass\\n")
    namespace = {{"torch": torch}}
    exec(compile(code, "/tmp/untrusted_candidate.py", "exec"), namespace)
    with guards.armed():
        namespace["run"]()
    problems = guards.after_call(set(), None)
    print(json.dumps({{"problems": problems, "after_call_kept": Guards.after_call.__name__ == "after_call"}}))
''')


@pytest.mark.slow
def test_rebinding_a_harness_class_member_is_reported_and_the_checker_cannot_be_rebound():
    """The checks after a call run harness code (`child.Child`, `guard.Guards`): a member of a harness class rebound
    by the candidate is reported as tampering, and `Guards`, which reports it, is sealed."""
    proc = subprocess.run([sys.executable, "-c", HARNESS_CLASSES.format(root=str(ROOT))], capture_output=True,
                          text=True, timeout=120, env={"TRITON_INTERPRET": "1", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["after_call_kept"], out
    assert any("agent.verifier.child.Child._contract_problems" in p for p in out["problems"]), out
