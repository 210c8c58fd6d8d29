"""Tables in chunk text -> cell `Record`s: loader-rendered rows, raw pipe tables, list-tables, flat PDF tables.

- Rendered rows (``ingest.loaders`` writes one chunk per row): ``"<caption> | Header A: a | Header B: b"``.
- Raw Markdown pipe tables and reStructuredText / MyST ``list-table`` directives (header row far from the rows).
- Flat PDF tables: lines that end in two or more values under a header line that names products
  (``"MI300A APU MI300X DISCRETE GPU"``); the chip's column is chosen by its model token, and a label with
  ``|``-separated sub-labels (``"FP16 | FP16 (SPARSITY)"``) splits each column into sub-columns.
- ``key: value`` list items in prose (``- L2 cache: 32 MB``) are read as cells too, by `ingest.profile_items`.
"""

from __future__ import annotations

import re

from ingest.profile_text import (
    Record,
    level_cues,
    locator_of,
    normalize_space,
    product_scope,
    products_in,
    prose_records,
)
from ingest.chunker import rendered_row_parts
from ingest.units import find_quantities, header_unit, unit_info
from knowledge.types import Chunk

_SEPARATOR_ROW = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_LIST_TABLE = re.compile(r"^(\s*)(?:\.\. list-table::|```\{list-table\})\s*(.*)$")
_NUM_TOKEN = re.compile(r"^(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?:[A-Za-z/]{1,8})?$")
_UNIT_TOKEN = re.compile(
    r"^(?:[KMGTP]i?B(?:/s(?:ec)?)?|[KMGTP]B/S|TF|PF|TFLOPS?|TFLOP/s|PFLOP/s|TOPs?|TOPS|[KMG]Hz|GT/s|Gbps|"
    r"KiB|MiB|GiB|bytes?|W)$",
    re.IGNORECASE,
)
_DECORATION = re.compile(r"^(?:HBM\w*|GDDR\w*|LPDDR\w*|DDR\w*)$", re.IGNORECASE)
_PRODUCT_COLUMN = re.compile(r"^\s*(?:model|product|name|device|gpu|accelerator|sku|card|part|chip)\b",
                             re.IGNORECASE)
_MISSING = {"n/a", "na", "-", "—", "yes", "no"}
#: A cell with this many (lower-case) words or more is prose (a glossary definition, a remark), not a value.
_SENTENCE_WORDS = 5


def heading_scopes(section: str) -> list[str]:
    """The headings of a section path ``"Title > Part > Heading"``, innermost first: the narrowest heading that
    names a product decides whose figures a record holds ("Spec > Coming from the S3?" is about the S3 even
    though the title names the chip)."""
    parts = [p for p in (section or "").split(" > ") if p]
    return list(reversed(parts))


def cell_record(header: str, label: str, value: str, caption: str, chunk: Chunk, tokens: set[str],
                 locator: str, product: str | None = None, sparse: bool = False, unit: str | None = None) -> Record:
    key = normalize_space(f"{header} {label} {caption}")
    return Record(
        text=value, key=key, local=normalize_space(f"{header} {label}"), quote=normalize_space(value),
        locator=locator, chunk=chunk,
        product=product or product_scope([label, header, caption, *heading_scopes(chunk.section)], tokens),
        levels=level_cues(key), default_unit=unit or header_unit(header) or header_unit(label), is_table=True,
        sparse=sparse or bool(re.search(r"sparsity|sparse", f"{header} {label}", re.IGNORECASE))
        or _marked_sparse(f"{header} {label}", chunk.text),
        label=normalize_space(label), header=normalize_space(header),
    )


_FOOTNOTE_MARKS = "*†‡§¹²³⁴"
#: A column that says who shares or uses a memory ("Shared by: the work-items of one work-group") names no scope
#: of the size beside it (the memory is sized per its owner).
_SHARING = re.compile(r"\b(?:shared|used|accessed|visible)\s+(?:by|to)\b|\bscope\b|\bsharing\b", re.IGNORECASE)
#: A column that says at what level each row's figure is counted ("Counted per", "Granularity", "Where it lives",
#: "Level", "Per"): its cell is the row's scope, read as "per <cell>" (English syntax of such headers).
_SCOPE_COLUMN = re.compile(r"^\s*(?:(?:counted|given|stated|measured|sized)\s+(?:per|for|at)|per|granularity|level|"
                           r"where(?:\s+it\s+(?:lives|sits|is))?|applies\s+to|unit\s+of\s+count)\s*$", re.IGNORECASE)


def _scope_cell(cell: str) -> str:
    """A scope column's cell as a noun phrase: parentheticals and leading determiners dropped ("one XVE" ->
    "XVE", "cluster (shared by its 4 engines)" -> "cluster")."""
    text = re.sub(r"\([^()]*\)", " ", normalize_space(cell))
    text = re.sub(r"^(?:one|a|an|the|each|every)\s+", "", text.strip(), flags=re.IGNORECASE)
    return normalize_space(text)


#: A cell that says before its figure that the figure is with sparsity ("(with sparsity) 4,800 TFLOPS").
_SPARSE_WORDS = re.compile(r"sparsity|sparse", re.IGNORECASE)


def _marked_sparse(label: str, text: str) -> bool:
    """True when `label` carries a footnote mark that `text` defines as sparsity (``* With sparsity``)."""
    for mark in set(label) & set(_FOOTNOTE_MARKS):
        if re.search(rf"(?:^|\s){re.escape(mark)}\s*(?:with|using|includes?)?\s*(?:2:4\s+)?(?:structured\s+)?"
                     rf"sparsity", text, re.IGNORECASE | re.MULTILINE):
            return True
    return False


def _only_model(label: str) -> bool:
    """A row label that is one product model and nothing else (``P8-112``, ``MI300X``): the table has one product
    per row, whatever its first header says (``Variante / SKU``)."""
    models = products_in(label)
    return len(models) == 1 and re.sub(r"[\W_]", "", label).lower() == models[0]


def _row_records(header: list[str], row: list[str], caption: str, chunk: Chunk, tokens: set[str],
                 where: str) -> list[Record]:
    """Records for the cells of one row; the first cell is the row label."""
    if not row:
        return []
    label = normalize_space(row[0])
    row_unit = _unit_column(row[1:])
    row_product = None
    if header and (_PRODUCT_COLUMN.search(header[0]) or _only_model(label)):
        row_product = "chip" if any(t in tokens for t in products_in(label)) or label.lower() in tokens else "other"
    out = []
    for i, cell in enumerate(row[1:], start=1):
        cell = normalize_space(cell)
        if not cell or (i < len(header) and _SCOPE_COLUMN.search(header[i])):
            continue  # a scope column's cell says where the row's figure is counted; it is no figure itself
        if sum(1 for w in cell.split() if re.fullmatch(r"[A-Za-z][a-z'\-]{2,}[,.;:]?", w)) >= _SENTENCE_WORDS:
            out.extend(prose_records(cell, chunk, tokens))  # a definition or remark: read as sentences
            continue
        name = normalize_space(header[i]) if i < len(header) else ""
        locator = locator_of(chunk, f"{where}row '{label}'" + (f", column '{name}'" if name else ""))
        per = next((_scope_cell(row[j]) for j in range(1, len(row)) if j != i and j < len(header)
                    and _SCOPE_COLUMN.search(header[j])), "")
        others = " ".join(normalize_space(c) for j, c in enumerate(row[1:], start=1) if j != i
                          and not re.search(r"\d", c) and not _SHARING.search(header[j] if j < len(header) else "")
                          and not (j < len(header) and _SCOPE_COLUMN.search(header[j])))
        others = f"per {per} {others}".strip() if per else others
        for part_label, part_name, part in _split_cell(label, name, cell):
            record = cell_record(part_name, part_label, part, caption, chunk, tokens, locator, product=row_product,
                                  unit=row_unit)
            record.quote = normalize_space(f"{name}: {cell}") if name else cell
            record.row = others
            record.product_row = label if row_product else ""
            record.sparse = record.sparse or bool(_SPARSE_WORDS.search(re.split(r"\d", part, maxsplit=1)[0]))
            out.append(record)
    return out


def _unit_column(cells: list[str]) -> str | None:
    """The unit of a row whose unit has a column of its own (``Cells | 56 | count``, ``L2 | 12 | MiB``): the one
    cell that is a unit and nothing else, applied to the row's bare numbers."""
    units = [c.strip() for c in cells if c.strip() and not re.search(r"\d", c) and unit_info(c.strip())]
    return units[0] if len(units) == 1 else None


def _split_cell(label: str, name: str, cell: str) -> list[tuple[str, str, str]]:
    """One cell that holds several values of different kinds, named by a label with as many parts
    (``"HBM2 capacity and bandwidth"`` / ``"16 GB, 819 GBps"``), as one (label, header, value) per part."""
    values = [v.strip() for v in re.split(r"[,;]\s+", cell) if v.strip()]
    dims = [next((q.dimension for q in find_quantities(v) if q.dimension != "count"), None) for v in values]
    if len(values) < 2 or None in dims or len(set(dims)) != len(dims):
        return [(label, name, cell)]
    for text, is_label in ((label, True), (name, False)):
        parts = [p.strip() for p in re.split(r"\s+and\s+|,\s*|\s*/\s*", text) if p.strip()]
        if len(parts) == len(values):
            subject = " ".join(parts[0].split()[:-1])
            named = [parts[0]] + [f"{subject} {p}".strip() for p in parts[1:]]
            return [(n, name, v) if is_label else (label, n, v) for n, v in zip(named, values)]
    return [(label, name, cell)]


#: A numbered caption ("Table 3: On-chip memory", "Tab. 2.1: Clocks"): the caption a loader put before a row, not a
#: header and its value.
_NUMBERED_CAPTION = re.compile(r"^(?:Table|Tab\.)\s*\d+(?:[.\-]\d+)*[a-z]?\s*:\s", re.IGNORECASE)


def rendered_row_records(chunk: Chunk, tokens: set[str]) -> list[Record]:
    """Cells of a loader-rendered table row.

    Two renderings are read: ``"<caption> | H: v | H: v"`` (Markdown/reStructuredText/HTML tables; quote
    ``"H: v"``) and ``"<caption> | <header line> | [<group>] | <row line>"`` (a flattened PDF table row whose
    header line names the products of its columns).
    """
    parts = [p.strip() for p in chunk.text.split(" | ")]
    if not any(re.match(r"^[^:]{1,60}: \S", p) for p in parts[1:] or parts):
        return _flat_rendered_row(parts, chunk, tokens)
    caption = ""
    # known None: a chunk stored before the chunker recorded captions, or parts of a unit side by side
    known, cells = rendered_row_parts(chunk, lambda header: bool(products_in(header)))
    if known is not None:
        caption, parts = known, cells
    elif parts and (": " not in parts[0] or parts[0].endswith(":") or len(parts[0].split(": ", 1)[0]) > 60
                    or (len(parts) > 1 and _NUMBERED_CAPTION.match(parts[0]))):
        caption = parts.pop(0)
    pairs = []
    for part in parts:
        name, _, value = part.partition(": ")
        pairs.append((name, value) if value else ("", part))
    if not pairs:
        return []
    header = [name for name, _ in pairs]
    row = [value for _, value in pairs]
    return _row_records(header, row, caption, chunk, tokens, "")


def _flat_rendered_row(parts: list[str], chunk: Chunk, tokens: set[str]) -> list[Record]:
    """A PDF table row rendered with its caption and header line: pick the chip's column (see `_flat_row`)."""
    header_at = max((i for i, p in enumerate(parts[:-1]) if len(_header_columns(p)) >= 2
                     and len(_flat_values(p)[1]) < 2), default=None)
    caption = next((p for p in parts if re.match(r"^\s*Table \d+", p)), "")
    start = header_at + 1 if header_at is not None else 0
    rest = parts[start:]
    if len(rest) > 1 and not re.search(r"\d", rest[0]) and rest[0].upper() == rest[0]:
        rest = rest[1:]  # row-group label such as "MEMORY"
    text = " | ".join(rest)
    label, values = _flat_values(text)
    if header_at is not None and len(values) >= 2 and label:
        return _flat_row(text, label, values, _header_columns(parts[header_at]), caption, chunk, tokens) or []
    if len(values) == 1 and label:
        header = parts[header_at] if header_at is not None else ""
        locator = locator_of(chunk, f"row '{label}'")
        record = cell_record(header, label, values[0], caption, chunk, tokens, locator)
        record.quote = text
        return [record]
    return []


def _pipe_cells(line: str) -> list[str]:
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|"):
        line = line[:-1]
    return [re.sub(r"[`*]", "", c).strip() for c in line.split("|")]


def _pipe_tables(lines: list[str], chunk: Chunk, tokens: set[str], used: set[int]) -> list[Record]:
    out: list[Record] = []
    i = 0
    while i < len(lines) - 1:
        if "|" in lines[i] and _SEPARATOR_ROW.match(lines[i + 1]) and lines[i].count("|") >= 2:
            header = _pipe_cells(lines[i])
            caption = _caption_above(lines, i)
            j = i + 2
            while j < len(lines) and lines[j].strip().startswith("|"):
                out.extend(_row_records(header, _pipe_cells(lines[j]), caption, chunk, tokens, ""))
                j += 1
            used.update(range(i, j))
            i = j
            continue
        i += 1
    return out


def _caption_above(lines: list[str], index: int) -> str:
    for k in range(index - 1, max(-1, index - 4), -1):
        text = lines[k].strip()
        if text:
            return text if len(text) <= 240 else ""
    return ""


def _list_tables(lines: list[str], chunk: Chunk, tokens: set[str], used: set[int]) -> list[Record]:
    out: list[Record] = []
    i = 0
    while i < len(lines):
        match = _LIST_TABLE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, caption = len(match.group(1)), match.group(2).strip()
        myst = lines[i].strip().startswith("```")
        end, header_rows, rows = _parse_list_table(lines, i + 1, indent, myst)
        header = rows[0] if header_rows and rows else []
        for row in rows[header_rows:]:
            out.extend(_row_records(header, row, caption, chunk, tokens, f"table '{caption}' " if caption else ""))
        used.update(range(i, end))
        i = end
    return out


def _parse_list_table(lines: list[str], start: int, indent: int, myst: bool) -> tuple[int, int, list[list[str]]]:
    """(end line, header-row count, rows) of a list-table body starting at `start`."""
    rows: list[list[str]] = []
    header_rows = 0
    j = start
    while j < len(lines):
        raw = lines[j]
        text = raw.strip()
        if myst and text.startswith("```"):
            return j + 1, header_rows, rows
        if not myst and text and len(raw) - len(raw.lstrip()) <= indent:
            break
        option = re.match(r"^:header-rows:\s*(\d+)", text)
        if option:
            header_rows = int(option.group(1))
        elif re.match(r"^\*\s*(?:-\s*(.*))?$", text):
            rows.append([])
            first = re.match(r"^\*\s*-\s*(.*)$", text)
            if first:
                rows[-1].append(first.group(1))
        elif re.match(r"^-(\s+.*)?$", text) and rows:
            rows[-1].append(text[1:].strip())
        elif text and rows and rows[-1] and not text.startswith(":"):
            rows[-1][-1] = f"{rows[-1][-1]} {text}".strip()
        j += 1
    return j, header_rows, rows


def _flat_values(line: str) -> tuple[str, list[str]]:
    """Split a flattened PDF table line into (label, values); values are read from the end of the line."""
    tokens = line.split()
    k = len(tokens)
    while k > 0:
        token = tokens[k - 1]
        if token.endswith(")") and "(" not in token:
            opener = next((m for m in range(k - 1, max(-1, k - 5), -1) if tokens[m].startswith("(")), None)
            if opener is None or opener == 0 or not _is_value_piece(tokens[opener - 1]):
                break
            k = opener
            continue
        if not _is_value_piece(token) and not (token.lower() in ("up", "to") and k < len(tokens)):
            break
        k -= 1
    label = " ".join(tokens[:k])
    values: list[str] = []
    current: list[str] = []
    for token in tokens[k:]:
        if token == "|":
            continue
        starts_value = _NUM_TOKEN.match(token) or token.lower() in _MISSING or token.lower() == "up"
        if starts_value and current and current[-1].lower() not in ("up", "to"):
            values.append(" ".join(current))
            current = []
        current.append(token)
    if current:
        values.append(" ".join(current))
    values = [v for v in values if not re.fullmatch(r"(?i)up|to|up to", v)]
    return label, values


def _is_value_piece(token: str) -> bool:
    return bool(_NUM_TOKEN.match(token) or _UNIT_TOKEN.match(token) or _DECORATION.match(token)
                or token == "|" or token.lower() in _MISSING or (len(token) > 2 and unit_info(token)))


def _header_columns(line: str) -> list[tuple[str, list[str]]]:
    """Column names of a header line, split where each product token starts."""
    starts = []
    for match in re.finditer(r"(?<![\w\-])([A-Za-z]{1,4}\d{2,4}[A-Za-z]{0,3})(?![\w\-])", line):
        if products_in(match.group(1)):
            starts.append(match.start())
    columns = []
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(line)
        name = normalize_space(line[start:end])
        columns.append((name, products_in(name)))
    return columns


def _flat_tables(lines: list[str], chunk: Chunk, tokens: set[str], used: set[int]) -> list[Record]:
    out: list[Record] = []
    header: list[tuple[str, list[str]]] = []
    header_line, caption = -1, ""
    for i, line in enumerate(lines):
        text = normalize_space(line)
        label, values = _flat_values(text)
        if len(values) < 2 and len(text) <= 160 and not re.search(r"[.,;]\s", text):
            columns = _header_columns(text)
            if len(columns) >= 2:
                header, header_line, caption = columns, i, _table_caption(lines, i)
                continue
        if not header and len(values) == 1 and _spec_line(text, label, values[0]):
            used.add(i)
            locator = locator_of(chunk, f"row '{label}'")
            record = cell_record("", label, values[0], caption, chunk, tokens, locator)
            record.quote = text
            out.append(record)
            continue
        if not header or len(values) < 2 or not label:
            if len(text) > 100:
                header = []
            continue
        records = _flat_row(text, label, values, header, caption, chunk, tokens)
        if records is not None:
            used.update((i, header_line))
            out.extend(records)
    return out


def _spec_line(text: str, label: str, value: str) -> bool:
    """A specification-sheet line ``"GPU Memory Bandwidth 4.8TB/s"``: a short label (no sentence punctuation)
    and one value with a unit, nothing after it."""
    from ingest.units import parse_quantity

    quantity = parse_quantity(value)
    return (len(text) <= 80 and 0 < len(label) <= 50 and not re.search(r"[.,;:]\s|[.,;:]$", label)
            and quantity is not None and quantity.dimension != "count" and len(label.split()) <= 7)


def _table_caption(lines: list[str], index: int) -> str:
    for k in range(index - 1, max(-1, index - 4), -1):
        if re.match(r"^\s*Table \d+", lines[k]):
            return normalize_space(" ".join(lines[k:index]))
    return ""


def _flat_row(text: str, label: str, values: list[str], header: list[tuple[str, list[str]]], caption: str,
              chunk: Chunk, tokens: set[str]) -> list[Record] | None:
    sublabels = [s.strip() for s in label.split("|")]
    width = len(sublabels) if len(values) == len(header) * len(sublabels) else 1
    if len(values) != len(header) * width:
        return None
    chip_columns = [n for n, (_, named) in enumerate(header) if any(t in tokens for t in named)]
    if len(chip_columns) != 1:
        return []
    column = chip_columns[0]
    name = header[column][0]
    out = []
    for sub in range(width):
        value = values[column * width + sub]
        if value.lower() in _MISSING:
            continue
        sublabel = sublabels[sub] if width > 1 else label
        locator = locator_of(chunk, f"{caption[:60] + ' ' if caption else ''}row '{sublabel}', column '{name}'")
        record = cell_record(name, sublabel, value, caption, chunk, tokens, locator, product="chip")
        record.quote = text
        out.append(record)
    return out


def _html_to_text(text: str) -> str:
    """HTML table markup inside Markdown as plain lines (one per row)."""
    if "<t" not in text:
        return text
    text = re.sub(r"(?i)</tr>|<br\s*/?>", "\n", text)
    text = re.sub(r"(?i)</t[dh]>", " ", text)
    return re.sub(r"<[^>]+>", "", text)


def _row_rank(label: str, tokens: set[str]) -> tuple[int, int]:
    """(0 for an exact name, else 1; words) of a product cell that names the chip: its words other than the
    brand words are the chip's model token alone ("Nimbus N8" for chip ``n8``), or more ("Nimbus N8 Twin")."""
    brands = getattr(tokens, "brands", frozenset())
    words = [w for w in re.findall(r"[\w\-]+", label.lower()) if w not in brands]
    exact = len(words) == 1 and words[0].replace("-", "") in tokens
    return (0 if exact else 1, len(words))


def prefer_exact_product_rows(records: list[Record], tokens: set[str]) -> None:
    """In a table with one product per row, only the row that names the chip most exactly is the chip's: the
    exact name, else the shortest name that contains the chip's model token ("N8" over "N8 Twin", a board of
    two); the other rows that contain it are about other products (their `Record.product` becomes ``other``).
    Rows are grouped by document and section."""
    tables: dict[tuple[str, str], list[Record]] = {}
    for record in records:
        if record.product_row and record.product == "chip":
            tables.setdefault((record.chunk.source, record.chunk.section), []).append(record)
    for rows in tables.values():
        best = min(_row_rank(r.product_row, tokens) for r in rows)
        for record in rows:
            if _row_rank(record.product_row, tokens) != best:
                record.product = "other"


def table_records(chunk: Chunk, tokens: set[str]) -> tuple[list[Record], str]:
    """Cell records of the tables in a chunk, and the chunk's remaining (prose) text.

    Rendered rows (``chunk.kind == "table_row"``) give only cell records; other chunks are scanned for raw
    pipe tables, list-tables and flat PDF tables, whose lines are removed from the prose.
    """
    if chunk.kind == "table_row":
        return rendered_row_records(chunk, tokens), ""
    lines = _html_to_text(chunk.text).splitlines()
    used: set[int] = set()
    records = _list_tables(lines, chunk, tokens, used)
    records += _pipe_tables(lines, chunk, tokens, used)
    records += _flat_tables(lines, chunk, tokens, used)
    prose = "\n".join(line for n, line in enumerate(lines) if n not in used)
    return records, prose
