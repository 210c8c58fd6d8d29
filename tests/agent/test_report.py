"""Report: Markdown, PNG plots, and the best kernel as a standalone SGLang drop-in package."""

import inspect
import os
import subprocess
import sys

import pytest
import torch

from agent.acceptance import geomean
from agent.config import OptimizeConfig, StopRules
from agent.dropin import write_dropin
from agent.family_space import FamilySpace
from agent.report import best_so_far, evals_to_fraction_of, write_report
from agent.session import run_optimization, start_run
from kernels.extend_attention import baseline
from kernels.extend_attention.spec import TASK, make_inputs, reference
from tests.agent.helpers import ScriptedKnowledge, ScriptedVerifier, h200_profile

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    config = OptimizeConfig(task="extend_attention", chip="h200", stop=StopRules(max_evals=10))
    run, state = start_run(config, run_id="report-run", root=root)
    return run, run_optimization(run, state, h200_profile(), ScriptedVerifier(), ScriptedKnowledge())


def test_report_files_and_numbers(finished_run):
    run, state = finished_run
    files = write_report(run)
    assert files.speedup_png.read_bytes()[:8] == PNG and files.roofline_png.read_bytes()[:8] == PNG
    text = files.markdown.read_text()
    best = state.best_record()
    headline = geomean([state.baseline.time_us[c] / state.best_time_us[c] for c in state.best_time_us])
    assert f"geomean x{headline:.2f} over the baseline on 9 cases" in text
    assert abs(headline / best.geomean_speedup - 1) < 0.02  # medians of replicates vs the accepted run's sample
    # the table's per-case speedups are baseline / best times of the state
    for case, t0 in state.baseline.time_us.items():
        assert f"| {case} | {t0:.1f} | {state.best_time_us[case]:.1f} | x{t0 / state.best_time_us[case]:.2f} |" in text
    assert "h200-note.md > Memory" in text and "![speedup over baseline per evaluation](speedup.png)" in text
    assert files.best_kernel.read_text() == run.read_candidate(int(state.best_id[1:]))
    steps = best_so_far(state)
    assert [n for n, _ in steps] == list(range(1, 11)) and steps[-1][1] == best.geomean_speedup
    assert evals_to_fraction_of(state, best.geomean_speedup) == best.n


def test_untimed_report_claims_nothing(tmp_path):
    config = OptimizeConfig(task="extend_attention", chip="h200", timing="interpreter", stop=StopRules(max_evals=2))
    run, state = start_run(config, root=tmp_path)
    run_optimization(run, state, h200_profile(), ScriptedVerifier(timed=False), None)
    files = write_report(run)
    text = files.markdown.read_text()
    assert "Correctness-only run" in text and "over the baseline on" not in text and "x1." not in text
    assert files.dropin is None and files.speedup_png.read_bytes()[:8] == PNG


@pytest.mark.slow
def test_dropin_runs_without_the_repository(tmp_path):
    space = FamilySpace(TASK, h200_profile(), list(TASK.bench_cases))
    table = {"memory-d128": {"block_m": 16, "block_n": 32, "num_warps": 4, "num_stages": 2, "num_splits": 2,
                             "pack_gqa": True}}
    candidate = tmp_path / "kernel_v3.py"
    candidate.write_text(space.render(table, inspect.signature(baseline.extend_attention_fwd),
                                      {"id": "v3", "parent_id": "v0", "generation": 1, "patterns": [],
                                       "rationale": "", "run_id": "r", "chip": "h200"}))
    package = write_dropin(candidate, tmp_path / "dropin", TASK.dropin, TASK.entry_point)
    assert "from .family import ChipLimits, FamilyConfig, call_class, run_family" in (package / "kernel.py").read_text()
    assert not any("from kernels" in p.read_text() for p in package.glob("*.py"))
    results = {}
    for case_id in ("gqa-4", "mla-576-512"):  # a tuned class and the default configuration
        inputs = make_inputs(TASK.case(case_id), seed=5)
        torch.save(inputs, tmp_path / f"{case_id}.pt")
        results[case_id] = reference(inputs)["o_extend"]
    script = (
        "import sys, torch\n"
        "class NoRepository:  # the repository's packages must not be needed, even if pip-installed\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('kernels', 'knowledge', 'ingest', 'agent', 'hardware_profiles'):\n"
        "            raise ImportError('repository package ' + name + ' imported by the drop-in')\n"
        "sys.meta_path.insert(0, NoRepository())\n"
        "from chiplore_extend_attention import extend_attention_fwd\n"
        "for name in sys.argv[1:]:\n"
        "    a = torch.load(name + '.pt')\n"
        "    extend_attention_fwd(**a)\n"
        "    torch.save(a['o_extend'], name + '.out.pt')\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(tmp_path / "dropin"), TRITON_INTERPRET="1")
    done = subprocess.run([sys.executable, "-c", script, *results], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    for case_id, expected in results.items():
        got = torch.load(tmp_path / f"{case_id}.out.pt")
        torch.testing.assert_close(got.float(), expected, atol=4e-3, rtol=4e-3)


def test_the_dropin_replaces_the_function_sglangs_triton_backend_imports(tmp_path):
    """`patch_host()` rebinds SGLang 0.5.23's ``sglang.kernels.ops.attention.extend_attention.extend_attention_fwd``
    (the name ``TritonAttnBackend.__init__`` imports); checked on SGLang's own module file (``.cache/sglang``,
    benchmarks/sglang_kernel.py --fetch), in a process with only the drop-in and that cache on the path."""
    from benchmarks.sglang_kernel import CACHE, KERNEL_FILES

    if not (CACHE / KERNEL_FILES[0]).is_file():
        pytest.skip("SGLang's kernel files are not in .cache/sglang (benchmarks/sglang_kernel.py --fetch)")
    space = FamilySpace(TASK, h200_profile(), list(TASK.bench_cases))
    candidate = tmp_path / "kernel_v3.py"
    candidate.write_text(space.render({}, inspect.signature(baseline.extend_attention_fwd),
                                      {"id": "v3", "parent_id": "v0", "generation": 1, "patterns": [],
                                       "rationale": "", "run_id": "r", "chip": "h200"}))
    package = write_dropin(candidate, tmp_path / "dropin", TASK.dropin, TASK.entry_point)
    readme = (package / "README.md").read_text()
    assert "import chiplore_extend_attention; chiplore_extend_attention.patch_host()" in readme
    assert "TritonAttnBackend.__init__" in readme and "sglang.kernels.ops.attention.extend_attention" in readme
    script = (
        "import chiplore_extend_attention as c\n"
        "import sglang.kernels.ops.attention.extend_attention as sgl\n"
        "original = sgl.extend_attention_fwd\n"
        "assert c.patch_host() is original\n"
        "from sglang.kernels.ops.attention.extend_attention import extend_attention_fwd\n"
        "assert extend_attention_fwd is c.extend_attention_fwd is not original\n"
        "print('patched')\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=f"{tmp_path / 'dropin'}:{CACHE}", TRITON_INTERPRET="1")
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and "patched" in done.stdout, done.stderr[-2000:]


@pytest.mark.slow
def test_dropin_copies_submodules_imported_from_a_package(tmp_path):
    """``from kernels.<task> import <module>`` copies that module, not the package's ``__init__`` (which imports
    the task's entry points and, flattened into one package, would import the candidate's own imports in a cycle)."""
    candidate = tmp_path / "kernel_v4.py"
    candidate.write_text("from kernels.extend_attention import workspace\n"
                         "from kernels.extend_attention.family import FamilyConfig, run_family\n\n\n"
                         "def extend_attention_fwd(*args, **kwargs):\n"
                         "    return run_family(FamilyConfig(), *args, **kwargs) if workspace else None\n")
    package = write_dropin(candidate, tmp_path / "dropin", TASK.dropin, TASK.entry_point)
    kernel = (package / "kernel.py").read_text()
    assert "from . import workspace" in kernel and "from .family import FamilyConfig" in kernel
    assert (package / "workspace.py").is_file() and not (package / "extend_attention.py").exists()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(tmp_path / "dropin"), TRITON_INTERPRET="1")
    done = subprocess.run([sys.executable, "-c", f"import {TASK.dropin.package} as p; print(p.{TASK.entry_point})"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
