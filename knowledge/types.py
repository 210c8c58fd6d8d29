"""Data passed between loaders, the chunker, the store and the profile extractor."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Section:
    """A run of text under one heading path, as a loader found it.

    Attributes:
        text: plain text of the section (tables rendered as text; one row per line where possible).
        source: file path as given by the user, or a display name.
        page: 1-based PDF page, or None for non-paginated formats.
        heading_path: headings from the document title down, e.g. ("MI300X", "Memory").
        kind: "prose" | "table" | "table_row" | "caption".
    """

    text: str
    source: str
    page: int | None = None
    heading_path: tuple[str, ...] = ()
    kind: str = "prose"


@dataclass(frozen=True)
class Chunk:
    """A retrievable unit with provenance; `id` is deterministic (content hash + source).

    Attributes:
        id: stable id, e.g. sha256(chip | source | heading_path | text)[:32].
        text: the chunk text (what is embedded and shown).
        chip: chip name it belongs to.
        source: file path/name; page: 1-based PDF page or None; section: " > ".join(heading_path).
        kind: as `Section.kind`.
        metadata: extra string/number fields stored with the chunk.
    """

    id: str
    text: str
    chip: str
    source: str
    page: int | None = None
    section: str = ""
    kind: str = "prose"
    metadata: dict[str, str | int | float] = field(default_factory=dict)

    def cite(self) -> str:
        """Citation such as ``amd-cdna-3-white-paper.pdf p.12 > Compute Units``."""
        loc = f" p.{self.page}" if self.page is not None else ""
        sec = f" > {self.section}" if self.section else ""
        return f"{self.source}{loc}{sec}"
