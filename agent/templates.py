"""Jinja2 environment for the files under ``agent/templates/`` (prompts, reports) and for the candidate templates
that task folders ship (`kernels.task.TaskFiles.candidate_template`)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

TEMPLATE_DIR = Path(__file__).parent / "templates"


@lru_cache(maxsize=8)
def environment(directory: Path = TEMPLATE_DIR) -> jinja2.Environment:
    """Strict environment over `directory` (an undefined variable is an error), trailing newline kept, no
    autoescape."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(directory),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


def render(name: str, **variables: Any) -> str:
    """Render template `name` of ``agent/templates/`` (e.g. ``report.md.j2``) with `variables`."""
    return environment().get_template(name).render(**variables)


def render_file(path: Path, **variables: Any) -> str:
    """Render the template file at `path` (a task's candidate template) with `variables`."""
    path = Path(path)
    return environment(path.parent).get_template(path.name).render(**variables)
