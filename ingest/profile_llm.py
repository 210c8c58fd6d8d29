"""Optional LLM proposals for profile fields; a proposal counts only if its quote is verbatim in its chunk.

Used only when an OpenAI-compatible endpoint is configured (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``,
``CHIPLORE_MODEL``; see `core.settings`). The model sees the chunks that contain numbers with units and
answers a JSON list of ``{field, value, chunk_id, quote}`` (prompt: ``ingest/prompts/profile_extract.j2``).
Each proposal is checked, and rejected with a reason unless:

1. the field is a profile field (or ``peak_tflops.<dtype>``) and the chunk id is one of the excerpts;
2. the quote appears verbatim (whitespace collapsed) in that chunk's text;
3. a number in the quote, read with its unit by `ingest.units`, equals the proposed value in the field's unit
   (within the precision it is written with) and has the field's dimension;
4. the quote does not name only other products.

Accepted proposals become ordinary candidates of `ingest.profile_extract` (so they can agree with, or conflict
with, the rules' values). Nothing the model says without a verbatim quote reaches a profile.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Protocol

import jinja2

from core.errors import ChiploreError
from hardware_profiles.schema import PEAK_DTYPES, SCALAR_FIELDS
from ingest.profile_candidate import FIELD_LIMITS, Candidate
from ingest.profile_text import Record, chip_tokens, clause_product, locator_of
from ingest.units import TARGET_UNITS, find_quantities
from knowledge.types import Chunk

PROMPT_DIR = Path(__file__).resolve().parent / "prompts"
_DIMENSIONS = {name: TARGET_UNITS[unit][0] for name, unit in SCALAR_FIELDS.items()}


class ProposalModel(Protocol):
    """Anything that turns a prompt into a completion (the OpenAI client, or a scripted model in tests)."""

    def complete(self, prompt: str) -> str: ...


class OpenAIModel:
    """`ProposalModel` over an OpenAI-compatible chat endpoint (``OPENAI_BASE_URL``, ``CHIPLORE_MODEL``)."""

    def __init__(self, model: str | None = None, base_url: str | None = None, timeout_s: float = 120.0) -> None:
        from openai import OpenAI

        self.model = model or os.environ.get("CHIPLORE_MODEL", "default")
        self.client = OpenAI(base_url=base_url or os.environ.get("OPENAI_BASE_URL"),
                             api_key=os.environ.get("OPENAI_API_KEY", "none"), timeout=timeout_s)

    def complete(self, prompt: str) -> str:
        """One chat completion at temperature 0.

        Raises:
            ChiploreError: the endpoint cannot be reached or answers with an error.
        """
        try:
            response = self.client.chat.completions.create(
                model=self.model, temperature=0, messages=[{"role": "user", "content": prompt}])
        except Exception as exc:  # noqa: BLE001 - the openai client raises many types
            raise ChiploreError(f"LLM endpoint {os.environ.get('OPENAI_BASE_URL')}: {exc}") from exc
        return response.choices[0].message.content or ""


def default_model() -> ProposalModel | None:
    """An `OpenAIModel` when ``OPENAI_BASE_URL`` is set, else None (rules only)."""
    return OpenAIModel() if os.environ.get("OPENAI_BASE_URL") else None


def _squash(text: str) -> str:
    return " ".join(text.split())


def render_prompt(chip: str, chunks: list[Chunk]) -> str:
    """The proposal prompt for `chunks` (template ``prompts/profile_extract.j2``)."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(PROMPT_DIR), autoescape=False,
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return env.get_template("profile_extract.j2").render(chip=chip, chunks=chunks, fields=SCALAR_FIELDS,
                                                          dtypes=PEAK_DTYPES)


def _parse(answer: str) -> list[dict]:
    match = re.search(r"\[.*\]", answer, re.S)
    if not match:
        return []
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError:
        return []
    return [d for d in data if isinstance(d, dict)]


def verify(chip: str, proposal: dict, chunks_by_id: dict[str, Chunk]) -> tuple[Candidate | None, str]:
    """A candidate for one proposal if it passes the checks of the module docstring, else (None, reason)."""
    field, chunk_id, quote = proposal.get("field"), proposal.get("chunk_id"), proposal.get("quote")
    try:
        value = float(proposal.get("value"))
    except (TypeError, ValueError):
        return None, f"{field}: value {proposal.get('value')!r} is not a number"
    if field in SCALAR_FIELDS:
        unit = SCALAR_FIELDS[field]
    elif isinstance(field, str) and field.startswith("peak_tflops.") and field.split(".", 1)[1] in PEAK_DTYPES:
        unit = "TFLOP/s"
    else:
        return None, f"{field!r} is not a profile field"
    chunk = chunks_by_id.get(str(chunk_id))
    if chunk is None:
        return None, f"{field}: chunk {chunk_id!r} is not one of the excerpts"
    if not isinstance(quote, str) or not _squash(quote) or _squash(quote) not in _squash(chunk.text):
        return None, f"{field}: quote {quote!r} is not verbatim in chunk {chunk_id}"
    quote = _squash(quote)
    dimension = TARGET_UNITS[unit][0]
    matching = [q for q in find_quantities(quote) if q.dimension == dimension
                and abs(q.to(unit) - value) <= q.resolution / TARGET_UNITS[unit][1] * 1.0001 + 1e-9]
    if not matching:
        return None, f"{field}: no number in {quote!r} reads as {value:g} {unit}"
    product = clause_product(quote, quote, chunk.section, chip_tokens(chip))
    if product == "other":
        return None, f"{field}: {quote!r} names another product"
    if field in FIELD_LIMITS and FIELD_LIMITS[field].allowed and value not in FIELD_LIMITS[field].allowed:
        return None, f"{field}: {value:g} is not a possible value"
    record = Record(text=quote, key=quote, local=quote, quote=quote, chunk=chunk, product=product,
                    locator=locator_of(chunk, "proposed by the LLM, quote verified"), originals=(chunk,))
    q = matching[0]
    return Candidate(field, q.to(unit), q.resolution / TARGET_UNITS[unit][1], record, q), "accepted"


def propose_candidates(chip: str, chunks: list[Chunk], model: ProposalModel,
                       batch_chars: int = 12000) -> tuple[list[Candidate], list[str]]:
    """Verified LLM candidates for `chip` and the reasons for every rejected proposal.

    Only chunks that contain a number with a unit are sent, in batches of about `batch_chars` characters.

    Raises:
        ChiploreError: the model endpoint fails.
    """
    useful = [c for c in chunks if any(q.dimension != "count" for q in find_quantities(c.text))]
    by_id = {c.id: c for c in useful}
    accepted: list[Candidate] = []
    rejected: list[str] = []
    batch: list[Chunk] = []
    size = 0
    for c in useful + [None]:
        if c is not None and (size + len(c.text) <= batch_chars or not batch):
            batch.append(c)
            size += len(c.text)
            continue
        if batch:
            for proposal in _parse(model.complete(render_prompt(chip, batch))):
                candidate, reason = verify(chip, proposal, by_id)
                if candidate is None:
                    rejected.append(reason)
                else:
                    accepted.append(candidate)
        batch, size = ([c], len(c.text)) if c is not None else ([], 0)
    return accepted, rejected
