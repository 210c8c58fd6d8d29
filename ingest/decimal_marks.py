"""A document's decimal convention: decimal commas and thousands points (``1,8 GHz``, ``3,2 TB/s``, ``2.048 cores``,
as German, French or Italian datasheets write them) read as the rules read English figures.

`uses_decimal_comma(texts)` decides it for one document from its figures with a unit (``unit_info``): a comma
followed by one, two or more than three digits (``1,8 GHz``, ``19,25 TFLOPS``) can only be a decimal comma, a point
followed by those can only be a decimal point (``1.8 GHz``); a mark followed by exactly three digits (``1,024``,
``2.048``) is ambiguous and counts for neither. The document uses decimal commas when at least one figure can only
be read so and none can only be read the English way; a document that writes both is left as written. An English
``1,024 KB`` or ``2,039 GB/s`` is never changed.

`to_point_decimals(text)` swaps the marks of every number written in that convention (``1,8`` -> ``1.8``,
``2.048`` -> ``2,048``, ``1.234,5`` -> ``1,234.5``); other numbers (``5.0``, section numbers ``4.2.1``, dates) stay.
The swap keeps every character at its place, so a span of the converted text is the same span of the document's
own text (quotes stay verbatim: `original_span`).

Source: the CLDR number formats (decimal and grouping symbols by locale: de-DE ``1.234,5``, en-US ``1,234.5``).
"""

from __future__ import annotations

import re

from ingest.units import unit_info

#: A number with marks (``1,8``, ``2.048``, ``1.234,56``) and the word after it (a unit, where it is a figure).
_FIGURE = re.compile(r"(?<![\w.,])(\d+(?:[.,]\d+)+)(?![\w]|[.,]\d)\s?([A-Za-z][A-Za-z/]{0,8}(?:/s)?)?")
_ONLY_COMMA = re.compile(r"^\d+(?:,\d{1,2}|,\d{4,})$|^\d{1,3}(?:\.\d{3})+,\d+$|^\d{1,3}(?:\.\d{3}){2,}$")
_ONLY_POINT = re.compile(r"^\d+(?:\.\d{1,2}|\.\d{4,})$|^\d{1,3}(?:,\d{3})+\.\d+$|^\d{1,3}(?:,\d{3}){2,}$")
#: A number in the decimal-comma convention: thousands points and an optional decimal comma, or a decimal comma.
_COMMA_NUMBER = re.compile(r"^\d{1,3}(?:\.\d{3})+(?:,\d+)?$|^\d+,\d+$")
_NUMBER = re.compile(r"(?<![\w.,])\d+(?:[.,]\d+)+(?![\w]|[.,]\d)")


def uses_decimal_comma(texts: list[str]) -> bool:
    """Whether the texts of one document write their figures with decimal commas (see module docstring)."""
    comma = point = 0
    for text in texts:
        for match in _FIGURE.finditer(text):
            number, unit = match.group(1), match.group(2)
            if not unit or unit_info(unit) is None:
                continue
            comma += bool(_ONLY_COMMA.match(number))
            point += bool(_ONLY_POINT.match(number))
    return comma > 0 and point == 0


def to_point_decimals(text: str) -> str:
    """`text` with each number of the decimal-comma convention written the English way (same length)."""
    def swap(match: re.Match) -> str:
        number = match.group(0)
        return number.translate(_SWAP) if _COMMA_NUMBER.match(number) else number

    return _NUMBER.sub(swap, text)


_SWAP = str.maketrans(".,", ",.")
#: Chunk metadata key: the chunk's text had its decimal commas swapped (`to_point_decimals`).
DECIMAL_COMMA = "decimal_comma"


def original_span(wanted: str, converted: str, original: str) -> str | None:
    """The words of `original` that `wanted` is in `converted` (`original` run through `to_point_decimals`), or
    None when `converted` does not hold it."""
    at = converted.find(wanted)
    return original[at:at + len(wanted)] if at >= 0 else None
