"""Data blocks inside documents (JSON, JSON with comments, YAML): a device descriptor or capability record in a
code fence read as label/value items.

A nested mapping becomes one ``- key words: value`` item section per leaf, the enclosing keys joining the heading
path (``{"memory": {"l2_mib": 48}}`` -> heading ``memory``, item ``- l2 mib: 48``), so that the extractor reads it
like a Markdown list item and a unit written into the key applies to a bare value
(`ingest.profile_items.list_item_records`). A ``{"value": 48, "unit": "MiB"}`` object is one value with its unit.
A list of mappings gives one sub-heading per element, named by the element's name-like key (``name``, ``model``,
``sku``, ``id``, ``product``, ``variant``) when it has one. Keys are read as words: ``maxThreadsPerGroup`` ->
``max threads per group``, ``smem_kib`` -> ``smem kib``.

Parsers: the standard library's `json`, then PyYAML's `yaml.safe_load` (YAML 1.1; it also reads most JSON). A
JSON-with-comments block (``//`` and ``/* */``, as in VS Code's JSONC) is tried with its comments removed.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ingest.loaders.common import one_line
from knowledge.types import Section

#: Fence info strings that name a data language.
DATA_LANGUAGES = frozenset({"json", "jsonc", "json5", "yaml", "yml"})
#: Leaves a block needs to be read as data when its fence names no data language.
MIN_LEAVES = 3
_NAME_KEYS = ("name", "model", "sku", "product", "variant", "id")
_LINE_COMMENT = re.compile(r"""("(?:[^"\\]|\\.)*")|//[^\n]*""")
_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


def parse_data(text: str) -> Any | None:
    """The mapping (or list of mappings) a data block holds, else None (prose, code, a scalar)."""
    for candidate in (text, _without_comments(text)):
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        return data if _is_record(data) else None
    try:
        import yaml

        data = yaml.safe_load(text)
    except yaml.YAMLError:  # not YAML: not a data block
        return None
    return data if _is_record(data) else None


def data_sections(data: Any, source: str, heading_path: tuple[str, ...]) -> list[Section]:
    """Item sections of parsed `data` under `heading_path` (see module docstring)."""
    out: list[Section] = []
    _walk(data, heading_path, source, out)
    return out


def leaf_count(data: Any) -> int:
    """Scalar leaves in `data` (a value-with-unit object counts once)."""
    if isinstance(data, dict):
        return 1 if _value_with_unit(data) is not None else sum(leaf_count(v) for v in data.values())
    if isinstance(data, list):
        return sum(leaf_count(v) for v in data)
    return 1


def key_words(key: str) -> str:
    """A key as words: camelCase, snake_case, kebab-case and dotted keys split (`_KEY_TOKEN`); a capitalized word
    lower-cased, an acronym or unit (``L2``, ``FP16``, ``CUs``, ``MiB``) kept: ``maxThreadsPerGroup`` -> ``max
    threads per group``, ``peakFP16Tflops`` -> ``peak FP16 tflops``, ``numCUs`` -> ``num CUs``."""
    words = [w for part in re.split(r"[_.\-\s]+", str(key)) for w in _KEY_TOKEN.findall(part)]
    return " ".join(w.lower() if w[:1].isupper() and w[1:].islower() else w for w in words)


#: One word of a key: a frequency unit, a binary unit, an acronym with digits (``HBM3e``, ``FP16``), a plural
#: acronym, an acronym, a (capitalized) word, a number with its suffix.
_KEY_TOKEN = re.compile(r"[kKMGT]?Hz|[KMGTP]iB|[A-Z]+\d+[a-z]?(?![a-z])|[A-Z]{2,}s(?![a-z])|[A-Z]+(?![a-z])"
                        r"|[A-Z]?[a-z]+\d*|\d+[A-Za-z]*")


def _is_record(data: Any) -> bool:
    return isinstance(data, dict) and bool(data) or (
        isinstance(data, list) and bool(data) and all(isinstance(x, dict) for x in data))


def _without_comments(text: str) -> str:
    text = _BLOCK_COMMENT.sub("", text)
    text = _LINE_COMMENT.sub(lambda m: m.group(1) or "", text)
    return _TRAILING_COMMA.sub(r"\1", text)


def _value_with_unit(node: dict) -> str | None:
    keys = {str(k).lower(): k for k in node}
    if "value" not in keys or "unit" not in keys:
        return None
    value, unit = node[keys["value"]], node[keys["unit"]]
    if isinstance(value, dict | list) or isinstance(unit, dict | list):
        return None
    extra = [f"{key_words(k)} {v}" for k, v in node.items()
             if str(k).lower() not in ("value", "unit") and not isinstance(v, dict | list)]
    return f"{_scalar(value)} {_scalar(unit)}".strip() + (f" ({'; '.join(extra)})" if extra else "")


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return one_line(str(value))


def _walk(node: Any, path: tuple[str, ...], source: str, out: list[Section], key: str | None = None) -> None:
    if isinstance(node, dict):
        combined = _value_with_unit(node)
        if combined is not None and key is not None:
            out.append(Section(text=f"- {key_words(key)}: {combined}", source=source, heading_path=path))
            return
        inner = path + ((key_words(key),) if key is not None else ())
        for k, v in node.items():
            _walk(v, inner, source, out, str(k))
    elif isinstance(node, list) and any(isinstance(x, dict) for x in node):
        for index, element in enumerate(node, 1):
            name = _element_name(element) if isinstance(element, dict) else None
            label = f"{key_words(key)} {name or index}" if key is not None else (name or str(index))
            _walk(element, path + (label,), source, out)
    elif key is not None:
        value = ", ".join(_scalar(x) for x in node) if isinstance(node, list) else _scalar(node)
        out.append(Section(text=f"- {key_words(key)}: {value}", source=source, heading_path=path))


def _element_name(element: dict) -> str | None:
    lower = {str(k).lower(): v for k, v in element.items()}
    for name in _NAME_KEYS:
        value = lower.get(name)
        if isinstance(value, str | int) and not isinstance(value, bool):
            return one_line(str(value))
    return None
