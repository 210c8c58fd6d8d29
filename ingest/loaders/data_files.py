"""Loaders for data files a vendor or a tool hands over instead of prose: a device descriptor or capability dump
as JSON (``.json``, ``.jsonc``), YAML (``.yaml``, ``.yml``) or INI-style configuration (``.ini``, ``.cfg``,
``.conf``).

JSON and YAML are parsed by `ingest.loaders.structured.parse_data` and become one ``- key words: value`` item
section per leaf (`ingest.loaders.structured.data_sections`), the enclosing keys joining the heading path under
the file's title, so that the extractor reads them like a datasheet's spec list. An INI file becomes one item
section per ``key = value`` line under its ``[section]`` heading (`ingest.loaders.ini.ini_sections`). A data file
that holds no mapping (a bare list of numbers, a scalar) or an INI file without a ``key = value`` line is refused:
there is nothing to read from it as a document.
"""

from __future__ import annotations

from pathlib import Path

from core.errors import BadInputError
from ingest.loaders.common import LoadedDocument, read_text_file, title_from_path
from ingest.loaders.ini import ini_sections, looks_like_ini
from ingest.loaders.structured import data_sections, parse_data

#: Suffix -> format name used in messages and size limits (`ingest.loaders.common.check_file_size`).
DATA_KINDS = {".json": "JSON", ".jsonc": "JSON", ".yaml": "YAML", ".yml": "YAML",
              ".ini": "INI", ".cfg": "INI", ".conf": "INI"}


def load_structured_file(path: Path, source: str) -> LoadedDocument:
    """Load a JSON or YAML file: one item section per leaf, under the file's title.

    Raises:
        BadInputError: empty or binary file, or content that is not a JSON/YAML mapping (or list of mappings).
    """
    kind = DATA_KINDS.get(path.suffix.lower(), "JSON")
    text = read_text_file(path, kind)
    data = parse_data(text)
    if data is None:
        raise BadInputError(f"{path}: not a {kind} mapping of named values (nothing to read as a document)")
    title = title_from_path(source)
    return LoadedDocument(sections=data_sections(data, source, (title,)), title=title)


def load_ini_file(path: Path, source: str) -> LoadedDocument:
    """Load an INI-style file: one item section per ``key = value`` line under its ``[section]`` heading.

    Raises:
        BadInputError: empty or binary file, or no ``[section]`` / ``key = value`` structure.
    """
    text = read_text_file(path, "INI")
    if not looks_like_ini(text):
        raise BadInputError(f"{path}: no [section] and key = value lines (not an INI file)")
    return LoadedDocument(sections=ini_sections(text, source), title=title_from_path(source))
