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
    import json, sys, torch
    sys.path.insert(0, {root!r})
    from pathlib import Path
    from agent.verifier import guard
    from agent.verifier.guard import STATE, FrameJudge, Guards, SandboxViolation

    guards = Guards(FrameJudge(Path({root!r})), "kernels.extend_attention", torch.device("cpu"))
    guards._patch_streams()  # the CUDA-only layer: refusing happens before torch would need a GPU
    results = {{}}

    def attempt(name, code, timed=False):
        STATE.violations.clear()
        nl = chr(10)
        source = "def run():" + nl + "    " + code.replace(";", nl + "   ") + nl
        namespace = {{"torch": torch}}
        exec(compile(source, "/tmp/untrusted_candidate.py", "exec"), namespace)
        try:
            with guards.armed(timed=timed):
                namespace["run"]()
            results[name] = "allowed"
        except SandboxViolation as exc:
            results[name] = "refused: " + str(exc)
        except BaseException as exc:
            results[name] = "error: " + type(exc).__name__ + ": " + str(exc)

    {attempts}
    print(json.dumps(results))
''')

ATTEMPTS = {
    "alloc_and_views": ("x = torch.empty(4, 4); y = x[1:3].view(-1); x.fill_(0); s = x.shape, x.stride()", "allowed"),
    "torch_matmul": ("torch.mm(torch.ones(2, 2), torch.ones(2, 2))", "forbidden torch operation"),
    "tensor_method_compute": ("torch.ones(3).softmax(0)", "forbidden torch operation"),
    "host_read": ("torch.ones(3).tolist()", "forbidden torch operation"),
    "numpy_escape": ("torch.ones(3).numpy()", "forbidden torch operation"),
    "advanced_index": ("torch.ones(3)[torch.tensor([0, 1])]", "forbidden torch operation"),
    "timed_matmul": ("torch.mm(torch.ones(2, 2), torch.ones(2, 2))", "forbidden torch operation aten.mm"),
    "timed_alloc": ("x = torch.empty(8); x.fill_(1); x.view(2, 4)", "allowed"),
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
}


@pytest.fixture(scope="module")
def results():
    lines = "\n".join(f"attempt({name!r}, {code!r}, timed={name.startswith('timed')})"
                      for name, (code, _) in ATTEMPTS.items())
    script = SCRIPT.format(root=str(ROOT), attempts=lines)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={"TRITON_INTERPRET": "1", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", sorted(ATTEMPTS))
def test_guard_layer(results, name):
    expected = ATTEMPTS[name][1]
    if expected == "allowed":
        assert results[name] == "allowed"
    else:
        assert results[name].startswith("refused") and expected in results[name], results[name]
