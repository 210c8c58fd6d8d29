"""Text hygiene: NFKC with the two documented deviations, and one-line printable text."""

import pytest

from core.text import normalize_text, printable


@pytest.mark.parametrize(("raw", "normal"), [
    ("\ufb01ne-grained con\ufb01gurable \ufb02ush", "fine-grained configurable flush"),
    ("e\ufb00ective su\ufb03x \ufb04", "effective suffix ffl"),
    ("\uff2d\uff29\uff13\uff10\uff10\uff38 64\u00a0KB", "MI300X 64 KB"),
    ("10\u2079 B/s and 2\u00b3\u00b9 bytes", "10^9 B/s and 2^31 bytes"),
    ("AMD CDNA\u2122 3", "AMD CDNA\u2122 3"),
    ("plain ascii", "plain ascii"),
])
def test_normalize_text(raw, normal):
    assert normalize_text(raw) == normal


def test_printable_escapes_control_characters():
    assert printable("a\nb\tc\r\x1b[31m\x7f\u2028z") == "a\\nb\\tc\\r\\x1b[31m\\x7f\\u2028z"
    assert printable("docs/\u00e9t\u00e9 > Memory") == "docs/\u00e9t\u00e9 > Memory"
