"""The pattern catalog: a generic part and one part per task, parsed into typed, checked entries and merged.

- ``knowledge/pattern_catalog.yaml`` (`CATALOG_PATH`): scoring weights, sources, bottlenecks (with signals over the
  variables every task has), chip features, and the patterns as ideas that hold for any kernel (`PatternDef`:
  name, description, what they address and need, which compose or conflict).
- ``kernels/<task>/catalog.yaml`` (the task's `TaskSpec.files.catalog`, for every task of `kernels.task.TASK_MODULES`):
  ``task:``, its sources, bottleneck ``signals:`` over its variables, ``parameter_rules:``, ``patterns:`` and
  ``examples:``. A pattern entry whose id the generic part defines applies that pattern to the task (`PatternUse`:
  an optional task-specific description, preconditions, rules, parameters, knobs, prior gain, family flags, extra
  sources and composition); an entry with a ``name`` defines a pattern of that task alone (definition and use).

Consumers read `Catalog.patterns_for(task)`, which gives each pattern flattened for the task (`Pattern`), and
`Catalog.patterns` (the definitions: ids, graph nodes). Loading checks every cross-reference and every formula: a
formula naming something that is neither a profile field, a case or diagnosis variable, nor an output of a
parameter rule of the task fails with the pattern (or rule) and the name, e.g. ``pattern 'split_kv' (rule 'split',
slots): unknown field 'num_compute_unitz'`` (`knowledge.catalog_check`). Knob names must be knobs of the task's
kernel family (`TaskSpec.knobs`).

Public API: `load_catalog(path=None, task_files=None) -> Catalog`, `CatalogError`, `evaluate_rules`, the entry
models.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from kernels.task import TASK_MODULES, load_task
from knowledge.catalog_check import check_catalog
from knowledge.catalog_files import GenericFile, TaskFile, merge
from knowledge.catalog_models import (
    Bottleneck,
    Catalog,
    CatalogError,
    Example,
    ExampleStep,
    HardwareFeature,
    ParameterRule,
    Pattern,
    PatternDef,
    PatternUse,
    Precondition,
    RuleOutput,
    Scoring,
    SourceRef,
)
from knowledge.formula import FormulaError, UnknownValue, parse

__all__ = ["CATALOG_PATH", "Bottleneck", "Catalog", "CatalogError", "Example", "ExampleStep", "HardwareFeature",
           "ParameterRule", "Pattern", "PatternDef", "PatternUse", "Precondition", "RuleOutput", "Scoring",
           "SourceRef", "default_task_files", "evaluate_rules", "load_catalog"]

CATALOG_PATH = Path(__file__).with_name("pattern_catalog.yaml")
CATALOG_FORMAT_VERSION = 1


def default_task_files() -> dict[str, Path]:
    """The catalog file of every registered task that has one (`TaskSpec.files.catalog`)."""
    out = {}
    for name in TASK_MODULES:
        spec = load_task(name)
        if spec.files is not None:
            out[name] = spec.files.catalog
    return out


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise CatalogError(f"pattern catalog {path}: cannot read ({exc.strerror or exc})") from None


def load_catalog(path: str | Path | None = None, task_files: Mapping[str, str | Path] | None = None) -> Catalog:
    """Load, merge and check the generic catalog at `path` (default `CATALOG_PATH`) and the task parts
    `task_files` (task name -> file; default: every registered task's, `default_task_files`).

    Raises:
        CatalogError: unreadable file, YAML error, wrong format version, a missing or extra key, a task file of
            another task, a dangling reference (bottleneck, feature, rule, pattern, source id), a pattern defined
            twice, an unknown knob, or a formula that does not parse or names an unknown field (the message names
            the file, the pattern or rule and the field).
    """
    generic = Path(path) if path is not None else CATALOG_PATH
    files = {t: Path(p) for t, p in (task_files if task_files is not None else default_task_files()).items()}
    raws = tuple((t, str(p), _read(p)) for t, p in files.items())
    raw = _read(generic)
    sha = hashlib.sha256(raw + b"".join(t.encode() + b"\0" + r for t, _, r in raws)).hexdigest()
    return _load_cached(str(generic), raw, raws, sha)


def _parse(path: str, raw: bytes) -> dict[str, Any]:
    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise CatalogError(f"pattern catalog {path}: not valid YAML: {' '.join(str(exc).split())}") from None
    if not isinstance(data, dict):
        raise CatalogError(f"pattern catalog {path}: expected a mapping at the top level")
    version = data.get("format_version")
    if version != CATALOG_FORMAT_VERSION:
        raise CatalogError(f"pattern catalog {path}: format_version {version!r}, this chiplore reads "
                           f"{CATALOG_FORMAT_VERSION}")
    return data


def _validated(model: type[BaseModel], data: Mapping[str, Any], path: str) -> Any:
    try:
        return model(**data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise CatalogError(f"pattern catalog {path}: {where}: {err['msg']}") from None


@lru_cache(maxsize=8)
def _load_cached(path: str, raw: bytes, raws: tuple[tuple[str, str, bytes], ...], sha: str) -> Catalog:
    generic = _validated(GenericFile, _parse(path, raw), path)
    parts = []
    for task, task_path, task_raw in raws:
        part = _validated(TaskFile, _parse(task_path, task_raw), task_path)
        if part.task != task:
            raise CatalogError(f"pattern catalog {task_path}: task {part.task!r}, registered as {task!r}")
        parts.append((task_path, part))
    catalog = merge(generic, parts, path, sha)
    check_catalog(catalog)
    return catalog


def evaluate_rules(cat: Catalog, task: str, env: dict[str, Any], functions: dict[str, Any]) -> \
        tuple[dict[str, Any], dict[str, str]]:
    """Evaluate every rule of `task` in order over `env` (profile + case + diagnosis variables).

    Returns:
        (values, unknown): `values` maps every rule output to its value (``None`` when unknown); `unknown` maps
        each unknown output to the reason (the null field it needed, or the arithmetic error).
    """
    values = dict(env)
    unknown: dict[str, str] = {}
    for rule in cat.rules_in_order(task):
        for out in rule.outputs:
            try:
                values[out.name] = parse(out.formula).evaluate(values, functions)
            except UnknownValue as exc:
                values[out.name] = None
                unknown[out.name] = unknown.get(exc.name, f"needs {exc.name} (unknown in the profile)")
            except FormulaError as exc:
                values[out.name] = None
                unknown[out.name] = str(exc)
    return values, unknown
