"""The task plug-in contract (kernels/task.py), checked for every registered task (parametrized over the registry):
the spec's data and functions, the hidden cases, the family as the agent searches it, the candidate template (valid
Python, imports only the family module, dispatches exactly like the family's `dispatch_class`), the catalog part,
the formula variables and the drop-in."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import random
import sys

import pytest
import torch

from agent.dropin import write_dropin
from agent.family_space import FamilySpace
from kernels.task import TASK_MODULES, Case, KernelFamily, load_task
from knowledge.catalog import load_catalog
from knowledge.ranking import rank_patterns
from knowledge.variables import case_functions, case_variables
from tests.agent.helpers import h200_profile

TASKS = sorted(TASK_MODULES)
HEADER = {"id": "v1", "parent_id": "v0", "generation": 1, "patterns": [], "rationale": "", "run_id": "r",
          "chip": "h200"}


@pytest.fixture(scope="module", params=TASKS)
def task(request):
    return load_task(request.param)


def _small_cases(task, n_random: int = 6) -> list[Case]:
    rng = random.Random(11)
    return list(task.test_cases) + [task.random_case(rng, True) for _ in range(n_random)]


def test_registry_names_the_spec(task):
    assert TASK_MODULES[task.name].endswith(".spec") and TASK_MODULES[task.name].startswith(f"kernels.{task.name}")
    for which in ("baseline", "optimized"):
        assert callable(task.load_entry_point(which))
    ids = [c.id for c in (*task.bench_cases, *task.test_cases)]
    assert task.bench_cases and task.test_cases and len(ids) == len(set(ids))


def test_cases_build_inputs_and_float32_references(task):
    for case in task.test_cases[:4]:
        assert task.dtype_of(case) in task.tolerances, case.id
        a, b = task.make_inputs(case, seed=3), task.make_inputs(case, seed=3)
        for name in task.output_args:
            assert isinstance(a[name], torch.Tensor), (case.id, name)
        for k, v in a.items():
            if isinstance(v, torch.Tensor) and k not in task.output_args:
                assert torch.equal(v, b[k]) or (v.is_floating_point() and torch.equal(v.isnan(), b[k].isnan())), k
        ref = task.reference(a)
        assert set(ref) == set(task.output_args) and all(r.dtype in (torch.float32, torch.float64)
                                                        for r in ref.values())
    for case in task.bench_cases:
        assert task.flops(case) > 0 and task.bytes(case) > 0, case.id


def test_random_and_hidden_cases_are_valid(task):
    rng = random.Random(5)
    cases = [task.random_case(rng, True) for _ in range(3)]
    cases += [c for _, c in task.hidden_cases(rng, True)]
    if task.dtype_case is not None:
        cases += [task.dtype_case(rng, "float32", True), task.dtype_case(rng, "float32", False)]
        assert all(task.dtype_of(c) == "float32" for c in cases[-2:])
    labels = [label for label, _ in task.hidden_cases(random.Random(5), False)]
    assert len(labels) == len(set(labels)) and all(labels)
    for case in cases:
        inputs = task.make_inputs(case, seed=1)
        assert all(name in inputs for name in task.output_args), case.id


def test_family_follows_the_protocol(task):
    assert isinstance(task.family, KernelFamily) and importlib.util.find_spec(task.family.module)
    family, profile = task.family, h200_profile()
    defaults = family.defaults()
    assert set(task.knobs) <= set(defaults)
    limits = family.candidate_limits(profile)
    assert limits is None or (isinstance(limits, dict) and all(isinstance(k, str) for k in limits))
    cases = list(task.bench_cases) + _small_cases(task)
    for case in cases:
        features = family.features(case)
        hash(features)
        assert family.dispatch_class(features, None) and family.dispatch_class(features, 200.0), case.id
        assert family.programs(None, features, profile) > 0, case.id
    space = FamilySpace(task, profile, list(task.bench_cases))
    for key in space.classes:
        structure = space.structure_config(key)
        assert all(structure[k] in allowed for k, allowed in task.knobs.items()), (key, structure)
        assert space.feasible(structure, key), key
        for case_id in space.class_cases(key):
            case = task.case(case_id)
            assert family.programs(structure, family.features(case), profile) > 0, case_id
            assert family.smem_kb(structure, family.features(case)) > 0


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow  # ~18 s on the 2-core machine
def test_candidate_dispatches_like_the_family(task, tmp_path, monkeypatch):
    """Each class of the drawn cases gets its own configuration; the rendered candidate, called on each case,
    passes run_family the configuration of the class the family computes for that case."""
    rng = random.Random(3)
    cases = _small_cases(task) + [task.random_case(rng, False) for _ in range(8)]
    space = FamilySpace(task, h200_profile(), cases)
    fixed = {k: v[0] for k, v in list(space.knobs.items())[6:]}  # the whole product is too large to list
    table = {key: space.all_configs(key, fixed)[i] for i, key in enumerate(sorted(space.classes))}
    signature = inspect.signature(task.load_entry_point("baseline"))
    source = space.render(table, signature, HEADER)
    tree = ast.parse(source)
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert imported == {task.family.module}
    path = tmp_path / "kernel_v1.py"
    path.write_text(source)
    module = _load(path, f"candidate_{task.name}")
    config_type = module.FamilyConfig
    seen = []
    monkeypatch.setattr(module, "run_family", lambda config, **kwargs: seen.append(config))
    for case in cases:
        module.__dict__[task.entry_point](**task.make_inputs(case, seed=0))
        assert seen[-1] == config_type(**space.full_table(table)[space.class_of(case)]), case.id
    assert len({space.class_of(c) for c in cases}) == len(table) >= 2


def test_catalog_part_loads_and_ranks(task, chiplore_home):
    catalog = load_catalog()
    assert task.name in catalog.tasks
    patterns = catalog.patterns_for(task.name)
    assert patterns and all(set(p.knobs) <= set(task.knobs) for p in patterns)
    ranked = rank_patterns(h200_profile(), task, task.bench_cases[0], catalog=catalog)
    assert {r.pattern_id for r in ranked} == {p.id for p in patterns}


def test_formula_variables_are_complete(task):
    for case in (*task.bench_cases, *task.test_cases[:3]):
        values = case_variables(task, case)
        assert set(task.variables.variables) <= set(values), case.id
        assert set(task.variables.functions) <= set(case_functions(task, case))


def test_dropin_imports_with_torch_and_triton_only(task, tmp_path):
    space = FamilySpace(task, h200_profile(), list(task.bench_cases))
    table = {k: space.structure_config(k) for k in space.classes}
    candidate = tmp_path / "kernel_v2.py"
    candidate.write_text(space.render(table, inspect.signature(task.load_entry_point("baseline")), HEADER))
    folder = write_dropin(candidate, tmp_path / "dropin", task.dropin, task.entry_point)
    assert folder.name == task.dropin.package and folder.name.isidentifier()
    sys.path.insert(0, str(folder.parent))
    try:
        package = importlib.import_module(task.dropin.package)
        assert callable(getattr(package, task.entry_point))
        for path in folder.glob("*.py"):
            tree = ast.parse(path.read_text())
            roots = {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0
                     and n.module}
            roots |= {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
            assert roots <= set(sys.stdlib_module_names) | {"torch", "triton"}, (path.name, roots)
    finally:
        sys.path.remove(str(folder.parent))
        for name in [m for m in sys.modules if m == task.dropin.package or m.startswith(task.dropin.package + ".")]:
            del sys.modules[name]
