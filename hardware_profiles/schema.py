"""Typed hardware profile: numeric chip facts with units in the key names, each value sourced.

A profile is the only place chip-specific numbers come from (DESIGN.md, "HardwareProfile"). Every field is
a `ProfileField`: a value (or ``None`` when the documents do not say), the unit, where it came from
(`Source`: document + page/section + the quoted phrase, or ``device-query``) and how it was obtained
(`kind`: stated | derived | conflict | device_query | measured). Unknown is allowed; a guessed number is not.
A ``measured`` value (``chiplore profile probe``) carries its `Measurement`: method, repeats and spread; a
measurement that checks a documented value is kept on that field beside it. `MEASURED_FIELDS` and
`achievable_tflops` hold what only a measurement gives (achievable bandwidth and dot throughput, launch overhead),
beside the documents' peaks. A profile may describe a virtual chip: a `Partition` of a real device.
Numeric facts are `SCALAR_FIELDS`; yes/no facts about the chip's units (`FEATURE_FIELDS`, unit ``bool``) hold
``true``/``false`` with the same provenance, ``null`` when the documents do not say.

Unit conventions (read by `ingest.units`): KiB/MiB/GiB are binary; KB and MB of on-chip memories are binary as
JEDEC and vendor tables write them (1 KB = 1024 B); GB and TB are decimal (a "64 GB" part holds 64e9 B = 59.6 GiB;
the same figure written "64 GiB" elsewhere agrees with it); rates are decimal SI (1 GB/s = 1e9 B/s,
1 TFLOP/s = 1e12 FLOP/s). `peak_tflops[dtype]` is the highest dense (non-sparse) per-device peak for inputs of
that dtype, matrix/tensor units included: a roofline floor computed from it is never beaten by a correct kernel.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

FieldKind = Literal["stated", "derived", "conflict", "device_query", "measured"]

#: Scalar fields of a profile and their units (the unit is part of the key name, repeated here for output).
SCALAR_FIELDS: dict[str, str] = {
    "num_compute_units": "count",
    "warp_size": "threads",
    "max_threads_per_block": "threads",
    "smem_per_block_kb": "KiB",
    "smem_per_compute_unit_kb": "KiB",
    "registers_per_compute_unit": "32-bit registers",
    "l2_cache_mb": "MiB",
    "mem_bw_gbps": "GB/s",
    "mem_capacity_gb": "GiB",
    "clock_mhz": "MHz",
}
#: Yes/no chip features and their unit: the value is true, false or null (unknown), never a number.
FEATURE_FIELDS: dict[str, str] = {
    # a bulk tensor-copy engine: multi-dimensional tiles move between device memory and shared memory
    # asynchronously, described by a tensor descriptor (NVIDIA's Tensor Memory Accelerator, TMA, compute
    # capability >= 9.0; Ampere's cp.async copies per thread, not per tile, and does not count)
    "tensor_memory_accelerator": "bool",
}
#: What each per-chip field is, in plain words (for people, and for matching a question to a chip fact).
FIELD_LABELS: dict[str, str] = {
    "num_compute_units": "number of compute units (SMs, CUs, cores)",
    "warp_size": "warp size (threads per warp or wavefront)",
    "max_threads_per_block": "maximum threads per thread block",
    "smem_per_block_kb": "shared memory one thread block can use",
    "smem_per_compute_unit_kb": "shared memory per compute unit",
    "registers_per_compute_unit": "registers per compute unit",
    "l2_cache_mb": "L2 cache size",
    "mem_bw_gbps": "memory bandwidth",
    "mem_capacity_gb": "memory capacity",
    "clock_mhz": "clock frequency",
    "tensor_memory_accelerator": "tensor memory accelerator (a bulk tensor-copy engine)",
}
#: Every per-chip field of a profile (numbers, then yes/no features) and its unit.
PROFILE_FIELDS: dict[str, str] = {**SCALAR_FIELDS, **FEATURE_FIELDS}
#: Numbers only a measurement on the chip gives (``chiplore profile probe``), never a document: the achievable
#: device-memory bandwidth of a copy kernel (bytes read + written per second) and the host-side cost of one empty
#: kernel launch. With `HardwareProfile.achievable_tflops` they make the measured roofline beside the spec one.
MEASURED_FIELDS: dict[str, str] = {
    "achievable_mem_bw_gbps": "GB/s",
    "launch_overhead_us": "us",
}
#: Data types for which `peak_tflops` may hold a dense (non-sparse) per-device peak.
PEAK_DTYPES: tuple[str, ...] = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8")
#: `Source.document` of every value the probe measured (``chiplore profile probe``).
MEASURED_DOCUMENT = "chiplore profile probe"
#: Unit of every `peak_tflops` and `achievable_tflops` entry.
PEAK_UNIT = "TFLOP/s"
#: The profile's per-dtype tables (peaks from documents, achievable rates from measurements).
RATE_TABLES: tuple[str, ...] = ("peak_tflops", "achievable_tflops")


def field_unit(name: str) -> str:
    """Unit of a field name as `HardwareProfile.fields` names it (``peak_tflops.bf16`` -> ``TFLOP/s``).

    Raises:
        KeyError: not a profile field.
    """
    if name.split(".", 1)[0] in RATE_TABLES:
        return PEAK_UNIT
    if name in PROFILE_FIELDS:
        return PROFILE_FIELDS[name]
    return MEASURED_FIELDS[name]


def display_value(value: float | bool | None) -> str:
    """A field value as text: ``null`` when unknown, ``true``/``false`` for a feature, else ``%g``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"{value:g}"


class Source(BaseModel):
    """Where a value was read: a document and locator with the quoted phrase, or a device query."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    document: str = Field(description="file name, URL, or 'device-query'")
    locator: str | None = Field(default=None, description="'page 12', a section path, or the API used")
    quote: str | None = Field(default=None, description="the phrase the value was read from, verbatim")

    def cite(self) -> str:
        """One-line citation, e.g. ``mi300.md > Memory: "5.3 TB/s"``."""
        parts = [self.document]
        if self.locator:
            parts.append(self.locator)
        text = " > ".join(parts)
        return f'{text}: "{self.quote}"' if self.quote else text


class Alternative(BaseModel):
    """A competing value for a field whose sources disagree."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    value: float | bool
    source: Source

    @field_validator("value")
    @classmethod
    def _non_negative(cls, v: float) -> float:
        if v < 0:
            raise ValueError(f"must be >= 0, got {v}")
        return v


class Measurement(BaseModel):
    """How a value was measured on the chip: what was timed or tried, how often, how far the repeats spread."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    value: float = Field(ge=0, description="the measured value, in the field's unit")
    method: str = Field(min_length=1, description="what was run, e.g. 'copy kernel over 16 x L2, median'")
    repeats: int = Field(ge=1, description="independent repeats the value is the median of")
    spread: float = Field(ge=0, description="(max - min) / median of the repeats (0 for an exact count)")
    device: str = Field(default="", description="the device (and partition) it ran on")


class ProfileField(BaseModel):
    """One profile value with unit, provenance and kind. ``value is None`` means unknown; a feature
    (`FEATURE_FIELDS`) holds a bool, every other field a number (checked by `HardwareProfile`). `measurement` is
    the probe's reading of this field: the value itself when ``kind='measured'``, a cross-check beside a
    documented value otherwise (a disagreement is a ``conflict``, never a silent replacement)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    value: float | bool | None = None
    unit: str = ""
    source: Source | None = None
    kind: FieldKind | None = None
    formula: str | None = Field(default=None, description="for kind='derived': how it was computed")
    alternatives: tuple[Alternative, ...] = ()
    measurement: Measurement | None = None

    @field_validator("value")
    @classmethod
    def _non_negative(cls, v: float | None) -> float | None:
        if v is not None and v < 0:
            raise ValueError(f"must be >= 0, got {v}")
        return v


class Partition(BaseModel):
    """A virtual chip: a partition of a real device (DESIGN.md, "Virtual chips"). Everything timed for the chip
    runs inside it: `compute_units` SMs of a CUDA green context on the host device, and, when set, a per-program
    shared-memory cap that refuses larger kernels as such a chip would (`hardware_profiles.virtual`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    host_chip: str = Field(min_length=1, description="profile name of the host device, e.g. 'h200'")
    compute_units: int = Field(gt=0, description="SMs asked of the driver (it may round up; the probe measures)")
    smem_per_block_cap_kb: float | None = Field(default=None, gt=0, description="per-program shared memory, KiB")


class HardwareProfile(BaseModel):
    """Frozen, numeric chip profile (DESIGN.md contract). Missing facts are ``None``, never guessed.

    Use `get(name)` for a plain number (``None`` if unknown), `peak_flops(dtype)` for FLOP/s and
    `achievable_flops(dtype)` / `achievable_bytes_per_s()` for what the probe measured.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    chip: str
    display_name: str = ""
    vendor: str = ""
    backend: Literal["cuda", "rocm", "tenstorrent", "xpu", "unknown"] = "unknown"
    compute_unit_name: str | None = None
    compute_unit_name_source: Source | None = None
    num_compute_units: ProfileField = ProfileField(unit="count")
    warp_size: ProfileField = ProfileField(unit="threads")
    max_threads_per_block: ProfileField = ProfileField(unit="threads")
    smem_per_block_kb: ProfileField = ProfileField(unit="KiB")
    smem_per_compute_unit_kb: ProfileField = ProfileField(unit="KiB")
    registers_per_compute_unit: ProfileField = ProfileField(unit="32-bit registers")
    l2_cache_mb: ProfileField = ProfileField(unit="MiB")
    mem_bw_gbps: ProfileField = ProfileField(unit="GB/s")
    mem_capacity_gb: ProfileField = ProfileField(unit="GiB")
    clock_mhz: ProfileField = ProfileField(unit="MHz")
    tensor_memory_accelerator: ProfileField = Field(default=ProfileField(unit="bool"), description=(
        "the chip has a bulk tensor-copy engine (FEATURE_FIELDS): true / false / null = unknown"))
    peak_tflops: dict[str, ProfileField] = Field(default_factory=dict)
    achievable_mem_bw_gbps: ProfileField = ProfileField(unit="GB/s")
    launch_overhead_us: ProfileField = ProfileField(unit="us")
    achievable_tflops: dict[str, ProfileField] = Field(default_factory=dict)
    partition: Partition | None = None
    notes: str = ""

    @field_validator(*RATE_TABLES)
    @classmethod
    def _known_dtypes(cls, v: dict[str, ProfileField]) -> dict[str, ProfileField]:
        unknown = sorted(set(v) - set(PEAK_DTYPES))
        if unknown:
            raise ValueError(f"unknown dtype key(s) {unknown}; expected some of {list(PEAK_DTYPES)}")
        for field in v.values():
            _check_kind_of_value(field, feature=False)
        return v

    @field_validator(*SCALAR_FIELDS, *MEASURED_FIELDS)
    @classmethod
    def _numbers(cls, v: ProfileField) -> ProfileField:
        return _check_kind_of_value(v, feature=False)

    @field_validator(*FEATURE_FIELDS)
    @classmethod
    def _yes_no(cls, v: ProfileField) -> ProfileField:
        return _check_kind_of_value(v, feature=True)

    @property
    def is_virtual(self) -> bool:
        """Whether the chip is a partition of a real device (`partition`)."""
        return self.partition is not None

    def get(self, name: str) -> float | bool | None:
        """Value of field `name` (a key of `PROFILE_FIELDS` or `MEASURED_FIELDS`: a number, or a bool for a
        feature), or None if unknown.

        Raises:
            KeyError: `name` is not a profile field.
        """
        if name not in PROFILE_FIELDS and name not in MEASURED_FIELDS:
            raise KeyError(f"unknown profile field {name!r}; known: {sorted({*PROFILE_FIELDS, *MEASURED_FIELDS})}")
        return getattr(self, name).value

    def peak_flops(self, dtype: str) -> float | None:
        """Dense peak in FLOP/s for `dtype` ('bf16', 'fp16', 'fp32', ...), or None if unknown."""
        field = self.peak_tflops.get(dtype)
        return None if field is None or field.value is None else field.value * 1e12

    def peak_bytes_per_s(self) -> float | None:
        """Peak device-memory bandwidth in bytes/s (from `mem_bw_gbps`, 1 GB = 1e9 B), or None."""
        bw = self.mem_bw_gbps.value
        return None if bw is None else bw * 1e9

    def achievable_flops(self, dtype: str) -> float | None:
        """Measured dense FLOP/s of `dtype` (`achievable_tflops`), or None if not measured."""
        field = self.achievable_tflops.get(dtype)
        return None if field is None or field.value is None else field.value * 1e12

    def achievable_bytes_per_s(self) -> float | None:
        """Measured device-memory bandwidth in bytes/s (`achievable_mem_bw_gbps`), or None."""
        bw = self.achievable_mem_bw_gbps.value
        return None if bw is None else bw * 1e9

    def fields(self) -> dict[str, ProfileField]:
        """All scalar and feature fields, ``peak_tflops.<dtype>`` entries, then the measured-only fields and
        ``achievable_tflops.<dtype>`` entries, in a stable order."""
        out = {name: getattr(self, name) for name in PROFILE_FIELDS}
        out.update({f"peak_tflops.{k}": v for k, v in sorted(self.peak_tflops.items())})
        out.update({name: getattr(self, name) for name in MEASURED_FIELDS})
        out.update({f"achievable_tflops.{k}": v for k, v in sorted(self.achievable_tflops.items())})
        return out


def _check_kind_of_value(field: ProfileField, feature: bool) -> ProfileField:
    """`field` if its value and alternatives are bools (`feature`) or numbers (not), else ValueError."""
    for value in (field.value, *(a.value for a in field.alternatives)):
        if value is not None and isinstance(value, bool) != feature:
            raise ValueError(f"must be true, false or null (a yes/no feature), got {value!r}" if feature
                             else f"must be a number or null, got {value!r}")
    return field
