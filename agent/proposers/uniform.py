"""Uniform random search over the family space: the `--no-retrieval` ablation.

Each proposal picks a case class uniformly, then a configuration uniformly among the class's configurations
that fit the chip (the same space the pattern-guided proposer searches), on top of the current best table: every
knob's value drawn uniformly, drawn again until the configuration fits (rejection sampling is uniform over the
configurations that fit, and the space is too large to enumerate: millions of knob combinations).
It consults no documents, patterns or findings, and never proposes the same configuration for a class twice.
"""

from __future__ import annotations

from agent.errors import SearchSpaceExhausted
from agent.family_space import Config, FamilySpace, config_key, table_hash
from agent.proposers.base import Proposal, ProposalContext
from agent.runstate import EvalRecord, Lineage

#: Draws before concluding that the space holds nothing untried.
MAX_DRAWS = 20000


class UniformProposer:
    """See the module docstring."""

    name = "uniform"

    def __init__(self, space: FamilySpace) -> None:
        self.space = space
        self.tried: set[str] = set()
        self.tried_in_class: set[tuple[str, str]] = set()

    def observe(self, lineage: Lineage | None, record: EvalRecord) -> None:
        if lineage is None:
            return
        self.tried.add(lineage.content_hash)
        table = lineage.parameters.get("table", {})
        for key in lineage.parameters.get("classes", []):
            if key in table:
                self.tried_in_class.add((key, config_key(table[key])))

    def propose(self, ctx: ProposalContext) -> Proposal:
        """A uniformly drawn untried (class, configuration) on top of the best table.

        Raises:
            SearchSpaceExhausted: `MAX_DRAWS` draws found nothing untried.
        """
        classes = sorted(self.space.classes)
        for _ in range(MAX_DRAWS):
            key = ctx.rng.choice(classes)
            config = {knob: ctx.rng.choice(values) for knob, values in self.space.knobs.items()}
            if not self.space.feasible(config, key):
                continue
            table = {**ctx.best_table, key: config}
            digest = table_hash(table)
            if digest in self.tried or (key, config_key(config)) in self.tried_in_class:
                continue
            return self._proposal(ctx, table, key, digest)
        raise SearchSpaceExhausted(f"uniform proposer: {MAX_DRAWS} draws found no untried configuration")

    def _proposal(self, ctx: ProposalContext, table: dict[str, Config], key: str, digest: str) -> Proposal:
        targets = self.space.class_cases(key)
        knobs = ", ".join(f"{k}={v}" for k, v in table[key].items())
        rationale = f"{key}: uniform draw among the configurations that fit the chip ({knobs})"
        generation = (ctx.best_lineage.generation if ctx.best_lineage else 0) + 1
        header = {"id": f"v{ctx.n}", "parent_id": ctx.best_id, "generation": generation, "patterns": [],
                  "rationale": rationale, "run_id": ctx.run_id, "chip": ctx.chip}
        source = self.space.render(table, ctx.signature, header)
        params = {"table": table, "classes": [key], "move": None,
                  "dispatch": {c: k for k, ids in self.space.classes.items() for c in ids}}
        return Proposal(source, digest, [], params, rationale, targets)
