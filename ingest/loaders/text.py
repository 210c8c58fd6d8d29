"""Plain-text loader: paragraphs split on blank lines; a line underlined with ``===`` or ``---`` is a heading."""

from __future__ import annotations

import re
from pathlib import Path

from ingest.loaders.common import LoadedDocument, one_line, read_text_file, title_from_path
from knowledge.types import Section

_UNDERLINE = re.compile(r"^\s*(=+|-+)\s*$")


def load_text(path: Path, source: str) -> LoadedDocument:
    """Load a plain-text file into prose sections.

    Raises:
        BadInputError: empty or binary file.
    """
    text = read_text_file(path, "plain")
    sections: list[Section] = []
    heading: list[str] = []
    for block in re.split(r"\n\s*\n", text):
        lines = [line for line in block.splitlines() if line.strip()]
        while len(lines) >= 2 and _UNDERLINE.match(lines[1]) and len(lines[0].strip()) <= 120:
            level = 1 if lines[1].strip()[0] == "=" else 2
            heading = heading[: level - 1] + [one_line(lines[0])]
            lines = lines[2:]
        body = one_line(" ".join(lines))
        if body:
            sections.append(Section(text=body, source=source, heading_path=tuple(heading)))
    return LoadedDocument(sections=sections, title=title_from_path(source))
