"""Numbers with units as hardware documents write them, normalized to one base unit per dimension.

Dimensions and base units:

| dimension | base unit | examples |
|---|---|---|
| ``bytes`` | byte | ``64KB``, ``1464 KiB``, ``4 MB``, ``192 GB``, ``12x 1 GiB``, ``1K-bytes`` |
| ``bytes_per_s`` | byte/s | ``5.3 TB/s``, ``5.3 TB/sec``, ``5.3 TB per second``, ``2,039GB/s``, ``24 GB/s`` |
| ``flops`` | FLOP/s, OP/s | ``163.4 TFLOPS``, ``1,307.4 TF``, ``2.6 PFLOP/s``, ``2,614.9 TOPs`` |
| ``hz`` | Hz | ``2,100 MHz``, ``1 GHz`` |
| ``transfers_per_s`` | transfer/s | ``12 GT/s``, ``5.2 Gbps`` (per pin) |

A bit rate spelled out (``3,200 Gbit/s``) is a data rate, an eighth of the same figure in bytes/s; the
abbreviations ``Gbps`` and ``Gb/s`` are what datasheets write for per-pin and per-link signalling rates, read as
``transfers_per_s``.
| ``count`` | 1 | ``304``, ``64K`` (65536), ``8K`` |

Conventions (see `hardware_profiles.schema`):

- IEC prefixes are binary (KiB, MiB, GiB, TiB), in rates too (MiB/s).
- KB and MB are binary too: on-chip memories (caches, shared memory, register files) are sized in powers of two and
  written with JEDEC's binary KB and MB (JESD100B.01) by every vendor; a device query reports them so (an H100's
  "50 MB" L2 is 52,428,800 bytes, ``cudaDeviceProp.l2CacheSize``).
- GB and TB are decimal, as in SI (``64 GB`` = 64e9 bytes = 59.6 GiB): device memory is written in both
  conventions ("192 GB" in one document, "VRAM (GiB) 192" in another), and a document that means GiB can write
  GiB. `Quantity.binary_value` keeps the binary reading of such a figure: when another statement writes the same
  figure in GiB, the two agree (one capacity, rounded to its decimal name) and the binary value is kept
  (`ingest.profile_resolve`).
- Rates are decimal SI (1 GB/s = 1e9 B/s, 1 TFLOP/s = 1e12 FLOP/s). A "K" after a bare count is 1024 when it is a
  power-of-two register or size count ("64K 32-bit registers") and 1000 otherwise ("8K operations").

Document quirks handled: thousands separators (``1,307.4``), vulgar fractions (``½ KiB``), endnote markers glued
after a unit (``2.6 PFLOP/s.MI300-11``), identifiers that contain digits (``MI300X``, ``FP64``, ``HBM3``, ``x16``,
``gfx942``: never read as numbers), per-unit suffixes (``2KBytes/clock``, ``FLOPS/CLOCK/CU``) and multipliers
(``12x 1 GiB`` = 12 GiB).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Unit spelling (lower-cased, spaces collapsed) -> (dimension, factor to the base unit).
_UNITS: dict[str, tuple[str, float]] = {}


def _add(dimension: str, factor: float, *spellings: str) -> None:
    for spelling in spellings:
        _UNITS[spelling.lower()] = (dimension, factor)


_KI, _MI, _GI, _TI = 2**10, 2**20, 2**30, 2**40
_add("bytes", 1, "b", "byte", "bytes")
_add("bytes", _KI, "kb", "kib", "kbyte", "kbytes", "k-byte", "k-bytes", "kilobyte", "kilobytes", "kibibyte", "kibibytes")
_add("bytes", _MI, "mb", "mib", "mbyte", "mbytes", "megabyte", "megabytes", "mebibyte", "mebibytes")
_add("bytes", _GI, "gib", "gibibyte", "gibibytes")
_add("bytes", 1e9, "gb", "gbyte", "gbytes", "gigabyte", "gigabytes")
_add("bytes", _TI, "tib", "tebibyte", "tebibytes")
_add("bytes", 1e12, "tb", "terabyte", "terabytes")
#: Decimal capacity prefixes -> the binary factor of the same prefix (for `Quantity.binary_value`).
_BINARY_OF_DECIMAL = {1e9: _GI, 1e12: _TI}
for _prefix, _factor in (("k", 1e3), ("m", 1e6), ("g", 1e9), ("t", 1e12), ("p", 1e15)):
    for _tail in ("b/s", "b/sec", "b/second", "bps", "b per second", "b/s.", "bytes/s", "bytes per second",
                  "byte/s"):
        _add("bytes_per_s", _factor, _prefix + _tail)
    _add("bytes_per_s", _factor / 8, _prefix + "bit/s", _prefix + "bits/s", _prefix + "bit/sec")
#: IEC rates are binary like IEC sizes (1 MiB/s = 1,048,576 B/s).
for _prefix, _factor in (("k", _KI), ("m", _MI), ("g", _GI), ("t", _TI)):
    _add("bytes_per_s", _factor, _prefix + "ib/s", _prefix + "ib/sec", _prefix + "ib per second")
_add("bytes_per_s", 1e12, "terabytes per second", "terabytes/s")
_add("bytes_per_s", 1e9, "gigabytes per second", "gigabytes/s")
for _prefix, _factor in (("", 1), ("k", 1e3), ("m", 1e6), ("g", 1e9), ("t", 1e12), ("p", 1e15), ("e", 1e18)):
    for _tail in ("flops", "flop/s", "flop/sec", "flops/s", "ops", "op/s", "ops/s", "iops"):
        _add("flops", _factor, _prefix + _tail)
_add("flops", 1e12, "tf", "teraflops", "teraflop/s", "tera-flops", "tops", "teraops", "tera-ops")
_add("flops", 1e15, "pf", "petaflops", "petaflop/s", "pops")
_add("flops", 1e9, "gigaflops")
_add("hz", 1, "hz")
_add("hz", 1e3, "khz", "kilohertz")
_add("hz", 1e6, "mhz", "megahertz")
_add("hz", 1e9, "ghz", "gigahertz")
_add("transfers_per_s", 1e9, "gt/s", "gbps", "gb/s/pin")
_add("transfers_per_s", 1e6, "mt/s", "mbps")

#: Target unit names used by profiles -> (dimension, factor from the base unit).
TARGET_UNITS: dict[str, tuple[str, float]] = {
    "KiB": ("bytes", _KI),
    "MiB": ("bytes", _MI),
    "GiB": ("bytes", _GI),
    "GB/s": ("bytes_per_s", 1e9),
    "TFLOP/s": ("flops", 1e12),
    "MHz": ("hz", 1e6),
    "count": ("count", 1),
    "threads": ("count", 1),
    "32-bit registers": ("count", 1),
}

_FRACTIONS = {"½": 0.5, "¼": 0.25, "¾": 0.75}
# A number: not glued to a preceding letter/digit/hyphen-identifier (MI300-11, FP64, x16), with optional
# thousands separators, decimals, or a vulgar fraction; "12x 1 GiB" multipliers are matched separately.
_NUMBER = (
    r"(?<![\w.\-/#])(?![0][xX][0-9A-Fa-f])"
    r"(?:(?P<frac>[½¼¾])|(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?P<fracb>[½¼¾])?)"
)
_UNIT_WORD = (
    r"(?:[kmgt]bits?/s|(?:kibi|mebi|gibi|tebi)bytes?|(?:kilo|mega|giga)hertz|terabytes?|gigabytes?|megabytes?|kilobytes?|[kmgt]-bytes?|[kmgtpe]i?b(?:ytes?)?|bytes?|[kmgtp]?flops?|"
    r"[kmgtp]?ops|tera-?flops|teraflop|petaflops|gigaflops|iops|tf|pf|pops|[kmg]?hz|[gm]t/s|[gm]bps)"
)
_RATE = r"(?:\s*/\s*s(?:ec(?:ond)?)?\b|/s|\s+per\s+second\b|ps\b)?"
_PER = r"(?P<per>(?:\s*/\s*|\s+per\s+)(?P<per_what>clock|clk|cycle|cu|sm|core|lane|pin|channel|stack)\b)?"
_QUANTITY = re.compile(
    rf"(?:(?P<mult>\d+)\s*[x×]\s+)?{_NUMBER}\s?(?P<kilo>[Kk](?![A-Za-z\-]))?"
    rf"(?:\s?(?P<unit>{_UNIT_WORD}){_RATE})?{_PER}",
    re.IGNORECASE,
)
_RANGE_AFTER = re.compile(r"^\s*(?:-|–|to)\s*\d")


@dataclass(frozen=True)
class Quantity:
    """One number found in text, normalized.

    Attributes:
        value: the number in the dimension's base unit (bytes, bytes/s, FLOP/s, Hz, transfers/s, or a count).
        dimension: ``bytes`` | ``bytes_per_s`` | ``flops`` | ``hz`` | ``transfers_per_s`` | ``count``.
        text: the exact text the quantity was read from.
        start, end: character span of `text` in the searched string.
        resolution: half a unit of the last written digit, in base units (``5.3 TB/s`` -> 0.05e12): two
            quantities agree when they differ by no more than the larger resolution.
        unit: the unit as written (``"TB/sec"``), or ``""`` for a bare count.
        per: what the value is per when the text says so (``"clock"`` in ``2KBytes/clock``), else ``""``.
        multiplier: the ``N`` of ``Nx V`` (the value already includes it), else 1.
        binary_value: for a capacity written with a decimal prefix (GB, TB), the value its figure would have in
            the binary prefix of the same name (``192 GB`` -> 192 GiB in bytes); None otherwise.
    """

    value: float
    dimension: str
    text: str
    start: int
    end: int
    resolution: float
    unit: str = ""
    per: str = ""
    multiplier: int = 1
    binary_value: float | None = None

    def to(self, target: str) -> float:
        """The value in profile unit `target` (a key of `TARGET_UNITS`).

        Raises:
            ValueError: `target` is unknown or of another dimension than this quantity.
        """
        if target not in TARGET_UNITS:
            raise ValueError(f"unknown target unit {target!r}; known: {sorted(TARGET_UNITS)}")
        dimension, factor = TARGET_UNITS[target]
        if dimension != self.dimension:
            raise ValueError(f"{self.text!r} is {self.dimension}, not {dimension} ({target})")
        return self.value / factor

    def agrees_with(self, other: Quantity) -> bool:
        """True if both have the same dimension and agree within the precision each was written with."""
        if self.dimension != other.dimension:
            return False
        tolerance = max(self.resolution, other.resolution) * 1.0001
        return abs(self.value - other.value) <= tolerance


def unit_info(unit: str) -> tuple[str, float] | None:
    """(dimension, factor to base unit) for a unit spelling such as ``"TB/sec"`` or ``"KiB"``; None if unknown.

    Case tells bytes from bits where it matters: ``GBps``/``GB/s`` are bytes per second, ``Gbps``/``Gb/s`` bits
    per second (a per-pin or per-link rate, dimension ``transfers_per_s``).
    """
    compact = unit.strip().replace(" ", "")
    bits = re.fullmatch(r"([kKMGT])b(?:ps|/s)", compact)
    if bits:
        return "transfers_per_s", {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}[bits.group(1)]
    if re.fullmatch(r"([kKMGTP])Bps", compact):
        return "bytes_per_s", {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}[compact[0]]
    key = " ".join(unit.lower().replace("™", "").split())
    key = re.sub(r"\s*/\s*", "/", key).rstrip(".")
    if key in _UNITS:
        return _UNITS[key]
    key = re.sub(r"/sec(ond)?$", "/s", key).replace(" per second", "/s")
    return _UNITS.get(key)


def parse_number(text: str) -> float:
    """``"1,307.4"`` -> 1307.4, ``"½"`` -> 0.5, ``"1½"`` -> 1.5.

    Raises:
        ValueError: `text` is not a number in one of these forms.
    """
    text = text.strip()
    if text in _FRACTIONS:
        return _FRACTIONS[text]
    frac = 0.0
    if text and text[-1] in _FRACTIONS:
        frac, text = _FRACTIONS[text[-1]], text[:-1]
    if not re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?", text):
        raise ValueError(f"not a number: {text!r}")
    return float(text.replace(",", "")) + frac


def count_kilo(number: float) -> int:
    """The factor of a "K" after a bare count (``64K``): 1024 when `number` is a power of two up to 512 (a register
    or size count, "64K 32-bit registers"), else 1000 ("8K operations")."""
    return 1024 if number in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512) else 1000


def _decimals(number_text: str) -> int:
    return len(number_text.split(".", 1)[1]) if "." in number_text else 0


def find_quantities(text: str, default_unit: str | None = None) -> list[Quantity]:
    """Every number in `text` with its unit, normalized (see the module docstring for the forms read).

    Args:
        text: any document text.
        default_unit: unit to apply to bare numbers (e.g. from a table header ``"LDS (KiB)"``); None = count.

    Returns:
        Quantities in reading order. Numbers that are part of identifiers (``MI300X``, ``FP64``) or ranges
        (``6-8``, ``1.7-3.4X``) are skipped. A unit that is not recognized makes the number a bare count.
    """
    out: list[Quantity] = []
    for match in _QUANTITY.finditer(text):
        if _RANGE_AFTER.match(text[match.end("num") if match.group("num") else match.end():]):
            continue
        quantity = _build(match, default_unit)
        if quantity is not None:
            out.append(quantity)
    return out


def _build(match: re.Match, default_unit: str | None) -> Quantity | None:
    number_text = match.group("num") or ""
    fraction = match.group("frac") or match.group("fracb") or ""
    number = parse_number(number_text + fraction) if number_text else _FRACTIONS[fraction]
    resolution = 0.5 * 10 ** (-_decimals(number_text)) if number_text and not fraction else 0.125
    if match.group("kilo") and not match.group("unit"):
        kilo = count_kilo(number)
        number, resolution = number * kilo, resolution * kilo
    unit_text, info = "", None
    if match.group("unit"):
        unit_end = match.start("per") if match.group("per") else match.end()
        unit_text = match.string[match.start("unit"):unit_end].strip()
        info = unit_info(unit_text) or unit_info(match.group("unit"))
    elif default_unit:
        unit_text, info = default_unit, unit_info(default_unit)
    if info is None:
        unit_text = ""
    dimension, factor = info if info else ("count", 1.0)
    mult = int(match.group("mult")) if match.group("mult") else 1
    binary = _BINARY_OF_DECIMAL.get(factor) if dimension == "bytes" else None
    return Quantity(
        binary_value=number * binary * mult if binary else None,
        value=number * factor * mult,
        dimension=dimension,
        text=match.group(0).strip(),
        start=match.start(),
        end=match.end(),
        resolution=resolution * factor,
        unit=unit_text,
        per=(match.group("per_what") or "").lower(),
        multiplier=mult,
    )


def parse_quantity(text: str, default_unit: str | None = None) -> Quantity | None:
    """The first quantity in `text` (see `find_quantities`), or None if there is no number."""
    found = find_quantities(text, default_unit)
    return found[0] if found else None


#: A unit "per second" written out, as a data file's key spells it ("gb per s", "tflops per sec").
_PER_SECOND = re.compile(r"\b([A-Za-z]{1,6})\s+per\s+s(?:ec(?:ond)?)?\b", re.IGNORECASE)


def header_unit(header: str) -> str | None:
    """Unit named in a table header: ``"LDS (KiB)"`` -> ``"KiB"``, ``"Peak TFLOPS"`` -> ``"TFLOPS"``,
    ``"MI300X GPU (Peak TFLOP/s)"`` -> ``"TFLOP/s"``; None when the header names no known unit or states a
    quantity itself (``"L1 scratchpad RAM (1464 KiB)"`` is a row label, not a unit for its row's cells)."""
    if any(q.dimension != "count" for q in find_quantities(header)):
        return None
    for candidate in re.findall(r"\(([^()]*)\)", header) + [header]:
        candidate = _PER_SECOND.sub(r"\1/s", candidate)  # a data file's key: "dram bandwidth gb per s"
        for token in re.findall(r"[A-Za-z][A-Za-z/\-]*(?:\s*/\s*s(?:ec)?)?", candidate):
            token = token.strip()
            if unit_info(token) and token.lower() not in {"b", "tf", "pf", "ops", "flops", "hz"}:
                return token
            if token.lower() in {"tflops", "tflop/s"}:
                return token
    return None
