"""Jinja2 environment for the files under ``agent/templates/`` (prompts, candidate files, reports)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

TEMPLATE_DIR = Path(__file__).parent / "templates"


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """Strict environment (an undefined variable is an error), trailing newline kept, no autoescape."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE_DIR),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


def render(name: str, **variables: Any) -> str:
    """Render template `name` (e.g. ``report.md.j2``) with `variables`."""
    return environment().get_template(name).render(**variables)
