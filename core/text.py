"""Text hygiene: one normal form for document text, and text made safe to print on one line.

`normalize_text` is Unicode NFKC (UAX #15, compatibility composition): PDF ligature glyphs become their letters
(``ﬁ`` U+FB01 -> ``fi``, ``ﬂ`` -> ``fl``, ``ﬃ`` -> ``ffi``), full-width forms and no-break spaces become ASCII.
pypdf returns ligature code points as they are in the font (pypdf issues #598 and #1351), which split words for
keyword search (``conﬁgurable`` -> tokens ``con``, ``gurable``) and shift their embeddings. Two deviations:
NFKC maps superscript digits to plain digits, which would turn ``10⁹`` into ``109``, so a run of superscript
characters is written ``^`` + the run first (``10⁹`` -> ``10^9``, ``2³¹`` -> ``2^31``); and the trademark signs
``™`` and ``℠`` are kept (NFKC would glue ``TM`` to the name: ``CDNA™ 3`` -> ``CDNATM 3``).

`printable` escapes control characters (a newline in a file name becomes ``\\n``), so a citation stays one line.
"""

from __future__ import annotations

import re
import unicodedata

_SUPERSCRIPTS = "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079\u207a\u207b\u207c\u207d\u207e"
_SUPERSCRIPT_RUN = re.compile(f"[{_SUPERSCRIPTS}]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


_KEPT = re.compile("([\u2122\u2120])")


def normalize_text(text: str) -> str:
    """`text` in Unicode NFKC, superscript runs written as ``^`` + digits, trademark signs kept (module docstring)."""
    if text.isascii():
        return text
    text = _SUPERSCRIPT_RUN.sub(lambda m: "^" + m.group(0), text)
    return "".join(part if _KEPT.fullmatch(part) else unicodedata.normalize("NFKC", part)
                   for part in _KEPT.split(text))


def printable(text: str) -> str:
    """`text` with every control character (C0, DEL, C1, line and paragraph separators) written as an escape:
    ``\\n``, ``\\t``, ``\\r`` or ``\\xNN`` / ``\\uNNNN``."""
    return _CONTROL.sub(_escape, text)


def _escape(match: re.Match) -> str:
    ch = match.group(0)
    return {"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(ch) or (f"\\x{ord(ch):02x}" if ord(ch) < 256
                                                              else f"\\u{ord(ch):04x}")
