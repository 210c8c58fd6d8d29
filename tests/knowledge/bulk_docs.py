"""Plain-text documents of exactly N chunks, each chunk a few words, for tests that write many records.

Every chunk is one section (``r<i>`` underlined with ``=``, then one line such as ``v 4821 kib``): the chunker
keeps a section whole, so the document gives exactly `n` chunks, and each text embeds in a few word pieces (the real
MiniLM model stays cheap at thousands of chunks).
"""

from __future__ import annotations

import random
from pathlib import Path

_UNITS = ("kib", "mhz", "lanes", "banks", "ways", "ports")


def write_chunk_doc(path: Path, n: int, seed: int = 0) -> Path:
    """Write a document of exactly `n` chunks at `path` and return it."""
    rng = random.Random(seed)
    parts = [f"r{i}\n{'=' * 8}\n\nv {rng.randint(1, 99999)} {rng.choice(_UNITS)}\n" for i in range(n)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
