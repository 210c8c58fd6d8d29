"""The pattern graph: catalog knowledge plus measured evidence, as a typed networkx multigraph.

Nodes (attribute ``type``): ``bottleneck``, ``pattern``, ``parameter_rule``, ``hardware_feature``, ``example``,
``finding``; node ids are ``"<type>:<id>"`` (``parameter_rule:<task>/<id>``: rule ids are unique per task).
Edges (attribute ``type``, also the multigraph key):
``addresses`` (pattern -> bottleneck), ``requires`` (pattern -> parameter_rule / hardware_feature, rule -> rule),
``composes_with`` / ``conflicts_with`` (pattern -> pattern), ``evidence_for`` / ``evidence_against``
(example or finding -> pattern, with ``log_gain``).

Persistence: one JSON file ``$CHIPLORE_HOME/graph/pattern_graph.json`` holding the format name, `GRAPH_VERSION`,
the catalog's sha256, a sha256 of the payload and the node-link data. `save` writes a temp file in the same
folder, fsyncs it, `os.replace`s it over the old file and fsyncs the folder, so a crash leaves either the old or
the new graph. `load` rebuilds from the catalog (keeping every finding it can read) when the file is missing,
corrupt, of an older version or of another catalog; a file of a newer version is an error.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx

from core.atomic_io import atomic_write_text, remove_stale_temps
from core.errors import StoreError
from core.settings import chiplore_home
from knowledge.catalog import Catalog, ParameterRule, load_catalog
from knowledge.formula import parse

GRAPH_FORMAT = "chiplore-pattern-graph"
GRAPH_VERSION = 1
GRAPH_FILE = "pattern_graph.json"
NODE_TYPES = ("bottleneck", "pattern", "parameter_rule", "hardware_feature", "example", "finding")
EDGE_TYPES = ("addresses", "requires", "conflicts_with", "composes_with", "evidence_for", "evidence_against")


def graph_path() -> Path:
    """``$CHIPLORE_HOME/graph/pattern_graph.json`` (the folder is created)."""
    folder = chiplore_home() / "graph"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / GRAPH_FILE


@dataclass(frozen=True)
class Evidence:
    """One piece of evidence about a pattern: a finding or a published example.

    Attributes:
        kind: ``finding`` or ``example``. source_id: the finding or example id.
        supports: True for an ``evidence_for`` edge, False for ``evidence_against``.
        log_gain: ln of the speedup attributed to the pattern (shared equally among the patterns of a finding;
            0.0 for a failed attempt; the apportioned share of the total for an example step).
        chip / chip_features / task / case_id / case_class: where it was measured (case_id None: any case).
        citation: one line naming the finding (run, verdict, date) or the example and its source.
        data: the stored record (finding fields, or the example step).
    """

    kind: str
    source_id: str
    supports: bool
    log_gain: float
    chip: str
    chip_features: dict[str, float | None]
    task: str
    case_id: str | None
    case_class: str | None
    citation: str
    data: dict[str, Any] = field(default_factory=dict)


def finding_log_gain(record: Mapping[str, Any]) -> tuple[bool, float]:
    """(supports, log_gain per pattern) of a finding record: ln(speedup) / n_patterns for a timed, verified
    candidate (support only if accepted and faster), 0.0 against for a candidate that failed verification."""
    n = max(1, len(record.get("patterns") or ()))
    speedup = record.get("speedup")
    if record.get("verdict_stage") != "pass" or not speedup or speedup <= 0:
        return False, 0.0
    gain = math.log(float(speedup)) / n
    return bool(record.get("accepted")) and speedup > 1.0, gain


def finding_citation(record: Mapping[str, Any]) -> str:
    """One-line citation of a finding record, e.g. ``finding 3f2a.. (run r1, verdict v7 pass, 2026-11-30)``."""
    return (f"finding {record.get('id')} on {record.get('chip')} / {record.get('case_id')} "
            f"(run {record.get('run_id')}, verdict {record.get('verdict_id')} {record.get('verdict_stage')}, "
            f"{record.get('date')})")


class PatternGraph:
    """Typed pattern graph (see module docstring). Build with `build` or `load`; persist with `save`."""

    def __init__(self, graph: nx.MultiDiGraph, catalog_sha256: str) -> None:
        self.graph = graph
        self.catalog_sha256 = catalog_sha256

    # ------------------------------------------------------------------ building
    @classmethod
    def build(cls, catalog: Catalog, findings: Iterable[Mapping[str, Any]] = ()) -> PatternGraph:
        """Graph of `catalog` (bottlenecks, patterns, rules, features, examples) plus finding records."""
        g = nx.MultiDiGraph()
        for b in catalog.bottlenecks:
            g.add_node(f"bottleneck:{b.id}", type="bottleneck", data=b.model_dump(mode="json"))
        for f in catalog.hardware_features:
            g.add_node(f"hardware_feature:{f.id}", type="hardware_feature", data=f.model_dump(mode="json"))
        for r in catalog.parameter_rules:
            g.add_node(rule_node(r.task, r.id), type="parameter_rule", data=r.model_dump(mode="json"))
        for p in catalog.patterns:
            g.add_node(f"pattern:{p.id}", type="pattern", data=p.model_dump(mode="json"))
        for task in catalog.tasks:
            for p in catalog.patterns_for(task):
                src = f"pattern:{p.id}"
                for target, kind in ([(f"bottleneck:{b}", "addresses") for b in p.addresses]
                                     + [(rule_node(task, r), "requires") for r in p.rules]
                                     + [(f"hardware_feature:{f}", "requires") for f in p.requires_features]
                                     + [(f"pattern:{q}", "composes_with") for q in p.composes_with]
                                     + [(f"pattern:{q}", "conflicts_with") for q in p.conflicts_with]):
                    _edge(g, src, target, kind)
        for rule in catalog.parameter_rules:
            for dep in _rule_deps(catalog, rule):
                _edge(g, rule_node(rule.task, rule.id), rule_node(rule.task, dep), "requires")
        for ex in catalog.examples:
            _add_example(g, ex)
        out = cls(g, catalog.sha256)
        for record in findings:
            out.add_finding(record)
        return out

    def add_finding(self, record: Mapping[str, Any]) -> str:
        """Add or replace the finding node of `record` (a `Finding` dumped to JSON, plus ``chip_features``) and
        its evidence edges to the patterns it names (patterns missing from the catalog are skipped; a candidate
        that passed but was not timed gets no edge: it says nothing about speed). Idempotent.

        Returns:
            the node id ``finding:<id>``.
        """
        node = f"finding:{record['id']}"
        if node in self.graph:
            self.graph.remove_node(node)
        self.graph.add_node(node, type="finding", data=dict(record))
        if record.get("verdict_stage") == "pass" and not record.get("speedup"):
            return node  # passed but untimed (correctness-only run): no evidence for or against a speedup
        supports, gain = finding_log_gain(record)
        for pattern in record.get("patterns") or ():
            target = f"pattern:{pattern}"
            if target in self.graph:
                _edge(self.graph, node, target, "evidence_for" if supports else "evidence_against", log_gain=gain)
        return node

    # ------------------------------------------------------------------ reading
    def nodes_of(self, node_type: str) -> list[str]:
        """Node ids of one type, sorted."""
        return sorted(n for n, d in self.graph.nodes(data=True) if d.get("type") == node_type)

    def finding_records(self) -> list[dict[str, Any]]:
        """Every finding record held by the graph."""
        return [dict(self.graph.nodes[n]["data"]) for n in self.nodes_of("finding")]

    def finding_ids(self) -> set[str]:
        return {n.split(":", 1)[1] for n in self.nodes_of("finding")}

    def related(self, pattern_id: str, edge_type: str) -> list[str]:
        """Ids of patterns/bottlenecks/rules/features that `pattern_id` has an `edge_type` edge to."""
        node = f"pattern:{pattern_id}"
        return sorted(v.split(":", 1)[1] for _, v, k in self.graph.out_edges(node, keys=True) if k == edge_type)

    def evidence(self, pattern_id: str, task: str | None = None) -> list[Evidence]:
        """Evidence edges into `pattern_id` (of `task` if given), findings and examples."""
        out = []
        for src, _, key, attrs in self.graph.in_edges(f"pattern:{pattern_id}", keys=True, data=True):
            if key not in ("evidence_for", "evidence_against"):
                continue
            node = self.graph.nodes[src]
            data = dict(node["data"])
            if task is not None and data.get("task") != task:
                continue
            if node["type"] == "finding":
                out.append(Evidence("finding", data["id"], key == "evidence_for", float(attrs["log_gain"]),
                                    data["chip"], dict(data.get("chip_features") or {}), data["task"],
                                    data.get("case_id"), data.get("case_class"), finding_citation(data), data))
            else:
                out.append(Evidence("example", data["id"], key == "evidence_for", float(attrs["log_gain"]),
                                    data["chip"], dict(data.get("chip_features") or {}), data["task"], None,
                                    data.get("case_class"), str(attrs.get("citation", data["title"])),
                                    {"step": attrs.get("step"), "parameters": attrs.get("parameters", {})}))
        return sorted(out, key=lambda e: (e.kind, e.source_id))

    def stats(self) -> dict[str, int]:
        """Node counts per type and edge counts per type."""
        counts = {f"nodes.{t}": len(self.nodes_of(t)) for t in NODE_TYPES}
        for t in EDGE_TYPES:
            counts[f"edges.{t}"] = sum(1 for _, _, k in self.graph.edges(keys=True) if k == t)
        return counts

    # ------------------------------------------------------------------ persistence
    def to_json(self) -> dict[str, Any]:
        payload = nx.node_link_data(self.graph, edges="edges")
        text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
        return {"format": GRAPH_FORMAT, "version": GRAPH_VERSION, "catalog_sha256": self.catalog_sha256,
                "payload_sha256": hashlib.sha256(text.encode()).hexdigest(), "payload": payload}

    def save(self, path: str | Path | None = None) -> Path:
        """Write the graph atomically (temp file in the same folder, fsync, os.replace, fsync of the folder).

        Raises:
            StoreError: the folder is not writable (the previous file is left untouched).
        """
        target = Path(path) if path is not None else graph_path()
        try:
            atomic_write_text(target, json.dumps(self.to_json(), sort_keys=True))
        except OSError as exc:
            raise StoreError(f"pattern graph {target}: cannot write ({exc.strerror or exc})") from None
        return target

    @classmethod
    def load(cls, path: str | Path | None = None, catalog: Catalog | None = None,
             findings: Iterable[Mapping[str, Any]] = ()) -> PatternGraph:
        """Read the graph file, or rebuild it from the catalog when the file is missing, corrupt (bad JSON or
        payload hash), of an older version, or built from another catalog; `findings` (e.g. from the store) are
        added when absent. A rebuilt or extended graph is saved back atomically (skipped when the folder is not
        writable). Stale temp files are removed.

        Raises:
            StoreError: the file was written by a newer chiplore (version above `GRAPH_VERSION`).
        """
        target = Path(path) if path is not None else graph_path()
        catalog = catalog or load_catalog()
        if target.parent.is_dir():
            remove_stale_temps(target)
        doc = _read(target)
        records: list[Mapping[str, Any]] = []
        graph = None
        if doc is not None:
            if doc["version"] > GRAPH_VERSION:
                raise StoreError(f"pattern graph {target}: written by a newer chiplore (graph version "
                                 f"{doc['version']}, this version reads {GRAPH_VERSION}); upgrade chiplore")
            loaded = cls(nx.node_link_graph(doc["payload"], directed=True, multigraph=True, edges="edges"),
                         doc["catalog_sha256"])
            records = loaded.finding_records()
            if doc["version"] == GRAPH_VERSION and doc["catalog_sha256"] == catalog.sha256:
                graph = loaded
        changed = graph is None
        if graph is None:
            graph = cls.build(catalog, records)
        known = graph.finding_ids()
        for record in findings:
            if record["id"] not in known:
                graph.add_finding(record)
                changed = True
        if changed:
            with contextlib.suppress(StoreError):  # read-only home: the rebuilt graph is still correct in memory
                graph.save(target)
        return graph


def _edge(g: nx.MultiDiGraph, u: str, v: str, kind: str, **attrs: Any) -> None:
    g.add_edge(u, v, key=kind, type=kind, **attrs)


def rule_node(task: str, rule_id: str) -> str:
    """Node id of a task's parameter rule: ``parameter_rule:<task>/<rule id>`` (rule ids are unique per task)."""
    return f"parameter_rule:{task}/{rule_id}"


def _rule_deps(catalog: Catalog, rule: ParameterRule) -> list[str]:
    producer = {o.name: r.id for r in catalog.parameter_rules if r.task == rule.task for o in r.outputs}
    return sorted({producer[n] for o in rule.outputs for n in parse(o.formula).names
                   if n in producer and producer[n] != rule.id})


def _add_example(g: nx.MultiDiGraph, ex: Any) -> None:
    node = f"example:{ex.id}"
    data = ex.model_dump(mode="json")
    g.add_node(node, type="example", data=data)
    cite = f"{ex.title} [{', '.join(ex.sources)}]"
    for k, (step, gain) in enumerate(zip(ex.steps, ex.step_log_gains()), start=1):
        share = gain / len(step.patterns)
        for pattern in step.patterns:
            _edge(g, node, f"pattern:{pattern}", "evidence_for", log_gain=share, step=k,
                  parameters=dict(step.parameters), citation=f"{cite}, step {k} of {len(ex.steps)}")


def _read(path: Path) -> dict[str, Any] | None:
    """The parsed graph document, or None when missing or unusable (bad JSON, wrong format, payload hash)."""
    try:
        raw = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise StoreError(f"pattern graph {path}: cannot read ({exc.strerror or exc})") from None
    try:
        doc = json.loads(raw)
        if doc.get("format") != GRAPH_FORMAT or not isinstance(doc.get("version"), int):
            return None
        text = json.dumps(doc["payload"], sort_keys=True, separators=(",", ":"))
        if hashlib.sha256(text.encode()).hexdigest() != doc.get("payload_sha256"):
            return None
        return doc
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
