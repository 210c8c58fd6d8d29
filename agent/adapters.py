"""The seams bound to the real components: the verifier, the knowledge base and the chip profiles.

The heavy modules (the verifier: torch and triton; the knowledge base: chromadb and the embedding model) are
imported where first needed, so that commands that do not need them start fast. `StoreKnowledge.check()` imports
the knowledge base's modules before a run starts: a missing third-party package is one `DependencyMissingError`
line naming it, rather than a failure in the middle of a run.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent.errors import DependencyMissingError
from agent.seams import Citation
from core.errors import BadInputError, ChiploreError, StoreError
from hardware_profiles import load_profile
from hardware_profiles.schema import HardwareProfile
from kernels.task import Case, TaskSpec
from knowledge.types import Finding

#: Our own top-level packages: an import error inside them is a bug, reported as such, never as a missing package.
OWN_PACKAGES = ("agent", "core", "hardware_profiles", "ingest", "kernels", "knowledge")


def missing_dependency(exc: ImportError, what: str) -> DependencyMissingError:
    """One line naming the third-party package `exc` could not import for `what`.

    Raises:
        ImportError: `exc` itself when the module that failed is one of `OWN_PACKAGES` (a bug, not an install
            problem).
    """
    name = exc.name or ""
    if name.split(".")[0] in OWN_PACKAGES:
        raise exc
    return DependencyMissingError(f"{what} needs the Python package {name or '?'}, which is not installed ({exc}); "
                                  f"reinstall chiplore with its dependencies (pip install chiplore)")


def load_chip_profile(chip: str) -> HardwareProfile:
    """`hardware_profiles.load_profile(chip)` (user profile first, then packaged), its kernel limits checked.

    A limit may be unknown (the kernel family says so when it needs it), but one the profile holds must be a value
    a kernel can run with: `hardware_profiles.limits.chip_limits_or_none`.

    Raises:
        BadInputError: unknown chip, naming the known ones; a limit that is not positive, or a count (compute
            units, warp width, threads per block) that is not whole, naming the chip, field and value.
    """
    from hardware_profiles.limits import chip_limits_or_none

    profile = load_profile(chip)
    chip_limits_or_none(profile)
    return profile


class RealVerifier:
    """`agent.verifier.Verifier` behind the `Verifier` seam; one verifier (one sandbox zygote, so torch and triton
    start once) serves every candidate of a run while the options stay the same.

    The loop's options map onto `VerifyOptions`: ``cases`` (bench case ids) become ``case_ids`` when timing on a
    GPU (correctness-only runs keep the verifier's own test and hidden cases), ``timing`` False switches timing
    off, ``baseline_time_us`` lets the verifier flag large speedups; anything else passes through unchanged.
    Call `close` when the run ends.
    """

    def __init__(self) -> None:
        try:
            from agent import verifier
        except ImportError as exc:
            raise missing_dependency(exc, "the verifier") from None
        self.module = verifier
        self._engine: Any = None
        self._key: tuple[str, str, str] | None = None

    def __call__(self, task: TaskSpec, candidate_path: Path, profile: HardwareProfile,
                 options: Mapping[str, Any]) -> Any:
        opts = self.options(options)
        key = (task.name, profile.chip, opts.model_dump_json())
        if key != self._key:
            self.close()
            self._engine, self._key = self.module.Verifier(task, profile, opts), key
        return self._engine.verify(Path(candidate_path))

    def options(self, options: Mapping[str, Any]) -> Any:
        """`VerifyOptions` from the loop's mapping.

        Raises:
            BadInputError: an option the verifier does not know (from pydantic, named).
        """
        values = dict(options)
        cases, timing = values.pop("cases", None), bool(values.pop("timing", True))
        baseline = values.pop("baseline_time_us", None)
        values["timing"] = timing
        if timing and cases:
            values["case_ids"] = tuple(cases)
        if baseline:
            values["baseline_time_us"] = dict(baseline)
        try:
            return self.module.VerifyOptions(**values)
        except ValueError as exc:
            raise BadInputError(f"verify options {sorted(values)}: {exc}") from None

    def close(self) -> None:
        """Stop the verifier's sandbox."""
        if self._engine is not None:
            self._engine.close()
        self._engine, self._key = None, None


class StoreKnowledge:
    """The knowledge base behind the `Knowledge` seam: `knowledge.retrieval.search` over document chunks,
    `knowledge.ranking.rank_patterns` on the pattern graph (loaded once per iteration, reloaded after a
    finding is recorded), `knowledge.findings.query_findings` / `record_finding`."""

    def __init__(self, profile: HardwareProfile) -> None:
        self.profile = profile
        self._graph: Any = None
        self._known_patterns: set[str] | None = None
        self.has_documents: bool | None = None  # None: not checked yet (`check`)
        self.warnings: list[str] = []

    def check(self) -> list[str]:
        """Before a run starts: import every module this needs, open the store, read whether the chip has
        documents, run one document query when it has, and load the pattern graph, so that a missing component
        or an unreadable store fails before a run folder is created.

        Returns:
            notes to show once, e.g. that the chip has no documents (the run then retrieves patterns ranked on
            its profile and findings only).

        Raises:
            DependencyMissingError: naming the first third-party package that is missing.
            StoreError: the store or the pattern graph cannot be read (one line naming the store).
        """
        try:
            from knowledge import findings, ranking, retrieval  # noqa: F401 - what the run will use
            from knowledge.store import KnowledgeStore
        except ImportError as exc:
            raise missing_dependency(exc, "the knowledge base") from None
        chip = self.profile.chip
        try:
            store = KnowledgeStore.open()
            held = {c.chip: c for c in store.chips()}.get(chip.strip().lower())
            self.has_documents = bool(held and held.chunks)
            if self.has_documents:
                self.search_documents(f"{chip} shared memory per block", chip, 1)
            self._load_graph()
        except ChiploreError:
            raise
        except Exception as exc:  # chromadb or file errors the store did not word itself
            text = " ".join(str(exc).split())[:300] or type(exc).__name__
            raise StoreError(f"knowledge store: cannot be read ({type(exc).__name__}: {text}); check "
                             f"CHIPLORE_HOME / CHIPLORE_CHROMA_URL or run with --no-retrieval") from None
        if self.has_documents:
            return []
        return [f"no documents onboarded for {chip}: retrieval uses patterns ranked on its profile and findings "
                f"only (add documents with `chiplore onboard {chip} DOCS...`)"]

    def search_documents(self, query: str, chip: str | None, k: int) -> list[Citation]:
        """Document chunks of `chip` for `query`; none when the chip has no documents onboarded (`check` says so
        once), so a run on a chip known only from its profile still runs on patterns and findings."""
        if self.has_documents is False and chip is not None and chip.strip().lower() == self.profile.chip.lower():
            return []
        from knowledge.retrieval import search

        try:
            hits = search(query, chip=chip, k=k, collections=("chunks",))
        except BadInputError as exc:
            if not self.warnings:
                self.warnings.append(f"no documents retrieved: {exc}")
            return []
        return [Citation(h.cite(), h.text, float(h.score), str(h.collection), str(h.id)) for h in hits]

    def rank_patterns(self, profile: HardwareProfile, task: TaskSpec, case: Case, diagnosis: Any) -> list[Any]:
        from knowledge.ranking import rank_patterns

        return rank_patterns(profile, task, case, diagnosis, graph=self._load_graph())

    def _load_graph(self) -> Any:
        """The pattern graph, synced with the findings in the store (loaded once, again after a new finding)."""
        if self._graph is None:
            from knowledge.findings import load_graph

            self._graph = load_graph(sync=True)
        return self._graph

    def query_findings(self, chip: str, task: str, k: int) -> list[Citation]:
        """Findings of `task` on any chip: this chip's first, accepted ones first, then by speedup."""
        from knowledge.findings import query_findings

        findings = query_findings(task=task)
        ordered = sorted(findings, key=lambda f: (f.chip != chip, not f.accepted, -(f.speedup or 0.0)))
        return [Citation(f"finding {f.id} (run {f.run_id}, {f.date[:10]})", f.summary(), float(f.speedup or 0.0),
                         "findings", f.id, {"status": f.status, "speedup": f.speedup, "chip": f.chip,
                                            "case_id": f.case_id, "patterns": list(f.patterns),
                                            "parameters": dict(f.parameters)}) for f in ordered[:k]]

    def record_finding(self, finding: Finding) -> str:
        """Store a finding (idempotent by id). Pattern ids the catalog does not know (e.g. from an LLM reply)
        move to the notes."""
        from knowledge.findings import record_finding

        known = self._catalog_patterns()
        extra = [p for p in finding.patterns if p not in known]
        if extra:
            notes = f"{finding.notes} (patterns not in the catalog: {', '.join(extra)})".strip()
            finding = finding.model_copy(update={"patterns": tuple(p for p in finding.patterns if p in known),
                                                 "notes": notes})
        fid = record_finding(finding, self.profile)
        self._graph = None
        return fid

    def _catalog_patterns(self) -> set[str]:
        if self._known_patterns is None:
            from knowledge.catalog import load_catalog

            self._known_patterns = {p.id for p in load_catalog().patterns}
        return self._known_patterns
