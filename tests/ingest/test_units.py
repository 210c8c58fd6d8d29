"""Unit normalizer on real phrasings quoted from shared/corpus (file named beside each case).

Expected values are computed by hand from the quoted text: capacities binary (KB = KiB), rates decimal.
"""

from __future__ import annotations

import pytest

from ingest.units import TARGET_UNITS, find_quantities, header_unit, parse_number, parse_quantity, unit_info

KI, MI, GI = 2**10, 2**20, 2**30
GB = 1e9  # GB and TB are decimal (ingest.units); KB and MB binary
WP = "amd-cdna-3-white-paper.pdf"
MD = "mi300.md"
RST = "gpu-arch-specs.rst"
WH = "tenstorrent_wormhole/"

# (source, phrase as it appears in the document, [(value in base unit, dimension), ...] in reading order)
CASES = [
    (WP + " p.3", "peak theoretical FP8 performance of 2.6 PFLOP/s.MI300-11 For classic HPC",
     [(2.6e15, "flops")]),
    (WP + " p.3", "offering 163.4 TFLOP/S FP64 Matrix for a single processor.MI300-11", [(163.4e12, "flops")]),
    (WP + " p.5", "The 38 CUs all share a 4MB L2 cache", [(38, "count"), (4 * MI, "bytes")]),
    (WP + " p.10", "16 channels that are each 256KB.", [(16, "count"), (256 * KI, "bytes")]),
    (WP + " p.10", "up to 34.4 TB/s aggregate read bandwidth", [(34.4e12, "bytes_per_s")]),
    (WP + " p.10", "for a total of 1K-bytes per XCD at the IOD interface", [(1 * KI, "bytes")]),
    (WP + " p.11", "connects to 2 MB of data arrays", [(2 * MI, "bytes")]),
    (WP + " p.11", "for 128 channels or 256MB of data", [(128, "count"), (256 * MI, "bytes")]),
    (WP + " p.11", "The peak bandwidth from the Infinity Cache is an astounding 17.2 TB/s",
     [(17.2e12, "bytes_per_s")]),
    (WP + " p.11", "drive a bus that operates at 5.2 Gbps", [(5.2e9, "transfers_per_s")]),
    (WP + " p.11", "each stack contains 16GB or 24GB of memory", [(16 * GB, "bytes"), (24 * GB, "bytes")]),
    (WP + " p.11", "192GB on MI300X per accelerator and both have an astounding 5.3 TB/s peak theoretical",
     [(192 * GB, "bytes"), (5.3e12, "bytes_per_s")]),
    (WP + " p.13", "switch stack every 4KiB through physical memory space", [(4 * KI, "bytes")]),
    (WP + " p.13", "128 GiB of DRAM", [(128 * GI, "bytes")]),
    (WP + " p.14", "192 GB per Partition / 192 GB per VM", [(192 * GB, "bytes"), (192 * GB, "bytes")]),
    (WP + " p.23", "MAX ENGINE CLOCK (PEAK) 2,100 MHz 2,100 MHz", [(2.1e9, "hz"), (2.1e9, "hz")]),
    (WP + " p.24", "FP16  |  FP16 (SPARSITY) 980.6 TF  | 1,961.2 1,307.4 TF  |  2,614.9 TF",
     [(980.6e12, "flops"), (1961.2, "count"), (1307.4e12, "flops"), (2614.9e12, "flops")]),
    (WP + " p.24", "INT8  |  INT8 (SPARSITY) 1,961.2 TOPs  |  3,922.3 TOPs",
     [(1961.2e12, "flops"), (3922.3e12, "flops")]),
    (WP + " p.24", "MEMORY BANDWIDTH (PEAK) up to 5.3 TB/sec up to 5.3 TB/sec",
     [(5.3e12, "bytes_per_s"), (5.3e12, "bytes_per_s")]),
    (WP + " p.24", "L1 CACHE 32 KiB 32 KiB", [(32 * KI, "bytes"), (32 * KI, "bytes")]),
    (WP + " p.24", "MEMORY CAPACITY 128GB HBM3 192 GB HBM3", [(128 * GB, "bytes"), (192 * GB, "bytes")]),
    (WP + " p.25", "I/O BANDWIDTH 384 GB/S (4 APUs) 896 GB/s (8 GPUs)",
     [(384e9, "bytes_per_s"), (4, "count"), (896e9, "bytes_per_s"), (8, "count")]),
    (WP + " p.17", "two AMD Infinity Fabric links with 144GB/s throughput", [(144e9, "bytes_per_s")]),
    (WP + " p.26", "ties together all the components over a massive 4TB/s fabric", [(4e12, "bytes_per_s")]),
    (WP + " p.26", "HBM3 interface with 5.3TB/s of peak theoretical bandwidth and up to 192GB of capacity",
     [(5.3e12, "bytes_per_s"), (192 * GB, "bytes")]),
    (WP + " p.27", "at 2,100 MHz peak boost engine clock resulted in 163.4 TFLOPS peak theoretical",
     [(2.1e9, "hz"), (163.4e12, "flops")]),
    (WP + " p.27", "2614.9 TOPs INT8 floating-point performance.", [(2614.9e12, "flops")]),
    # the white paper writes a bandwidth in TFLOPS: the normalizer keeps the written dimension
    (WP + " p.27", "5.325 TFLOPS peak theoretical memory bandwidth performance", [(5.325e12, "flops")]),
    (WP + " p.27", "total peak memory bandwidth of 5.325 TB/s (8,192 bits memory bus interface",
     [(5.325e12, "bytes_per_s"), (8192, "count")]),
    (WP + " p.15", "enhanced to operate at up to 32Gbps", [(32e9, "transfers_per_s")]),
    (MD, "shared 4MB of L2 cache and an HWS Hardware Scheduler", [(4 * MI, "bytes")]),
    (MD, "40 Compute Units, each with 32 KB L1 cache", [(40, "count"), (32 * KI, "bytes")]),
    (MD, "The theoretical aggregated peak memory bandwidth of the GPU is 5.3 TB per second.",
     [(5.3e12, "bytes_per_s")]),
    (MD, "the processor can include 6 or 8 XCDs for up to 304 CUs", [(6, "count"), (8, "count"), (304, "count")]),
    (RST, "304 (38 per XCD)", [(304, "count"), (38, "count")]),
    (WH + "WormholeB0__TensixTile__L1.md", "Each Tensix tile has 1464 KiB of scratchpad RAM.", [(1464 * KI, "bytes")]),
    (WH + "WormholeB0__TensixTile__L1.md", "L1 is organised as 16 banks of 91.5 KiB",
     [(16, "count"), (91.5 * KI, "bytes")]),
    (WH + "WormholeB0__DRAMTile__README.md", "collectively exposing 12x 1 GiB channels of GDDR6.",
     [(12 * GI, "bytes")]),
    (WH + "WormholeB0__README.md",
     "collectively exposing 12 GiB of GDDR6 (each 2 GiB is exposed identically on 3 tiles)",
     [(12 * GI, "bytes"), (2 * GI, "bytes"), (3, "count")]),
    (WH + "WormholeB0__DRAMTile__README.md", "which is 16 bits wide, and typically operating at 12 GT/s",
     [(16, "count"), (12e9, "transfers_per_s")]),
    (WH + "WormholeB0__DRAMTile__README.md", "With twelve channels per Wormhole ASIC, this is 288 GB/s in aggregate.",
     [(288e9, "bytes_per_s")]),
    (WH + "WormholeB0__DRAMTile__README.md", "giving 576 GB/s in aggregate across the entire board",
     [(576e9, "bytes_per_s")]),
    (WH + "WormholeB0__DRAMTile__README.md",
     "|1, randomly chosen|DRAM to L1 (read)|Static (‡)|NoC #0|22.2 GB/s (92.5%)|",
     [(1, "count"), (22.2e9, "bytes_per_s"), (92.5, "count")]),
    (WH + "WormholeB0__DRAMTile__README.md", "Each router has a 2 KiB buffer per inbound port", [(2 * KI, "bytes")]),
    (WH + "WormholeB0__DRAMTile__README.md", "the remaining 1½ KiB is dynamically shared", [(1.5 * KI, "bytes")]),
    (WH + "WormholeB0__DRAMTile__README.md", "able to claim up to 480 bytes from this shared pool", [(480, "bytes")]),
    (WH + "WormholeB0__TensixTile__BabyRISCV__README.md", "½ KiB cache + 16 KiB RAM",
     [(0.5 * KI, "bytes"), (16 * KI, "bytes")]),
    (WH + "WormholeB0__TensixTile__TensixCoprocessor__MatrixUnit.md",
     "running at Wormhole's standard 1 GHz clock rate", [(1e9, "hz")]),
    (WH + "WormholeB0__TensixTile__TensixCoprocessor__MatrixUnit.md",
     "|`MVMUL`, `DOTPV`, `GAPOOL`|4.096 TFLOP/s|2.048 TFLOP/s|1.366 TFLOP/s|1.024 TFLOP/s|",
     [(4.096e12, "flops"), (2.048e12, "flops"), (1.366e12, "flops"), (1.024e12, "flops")]),
    (WH + "WormholeB0__TensixTile__TensixCoprocessor__MatrixUnit.md",
     "has theoretical maximum performance of 0.064 TFLOP/s (per Vector Unit) at FP32 precision",
     [(0.064e12, "flops")]),
]


@pytest.mark.parametrize(("source", "phrase", "expected"), CASES, ids=[f"{s}: {p[:40]}" for s, p, _ in CASES])
def test_real_phrasings(source, phrase, expected):
    found = [(q.value, q.dimension) for q in find_quantities(phrase)]
    assert len(found) == len(expected), (source, found)
    for (value, dimension), (want_value, want_dimension) in zip(found, expected):
        assert dimension == want_dimension
        assert value == pytest.approx(want_value, rel=1e-12)


def test_at_least_thirty_real_phrasings():
    assert len(CASES) >= 30


@pytest.mark.parametrize("identifier", ["MI300X", "FP64", "TF32", "HBM3", "x16 PCIe", "gfx942", "RV32IM",
                                        "MI300-11", "GDDR6", "E5M2", "0x0016_FFFF", "NoC #0"])
def test_identifiers_are_not_numbers(identifier):
    assert find_quantities(identifier) == []


def test_ranges_are_not_values():
    # "6-8 XCDs" (white paper p.5), "1.7-3.4X" (p.3)
    assert find_quantities("includes 6-8 XCDs") == []
    assert find_quantities("has increased 1.7-3.4X offering") == []


def test_per_clock_suffix_is_kept():
    q = parse_quantity("a combined throughput of 2KBytes/clock for each XCD")  # white paper p.10
    assert q.value == 2 * KI and q.dimension == "bytes" and q.per == "clock"


def test_multiplier_and_resolution():
    q = parse_quantity("12x 1 GiB channels")
    assert q.multiplier == 12 and q.value == 12 * GI
    assert parse_quantity("5.3 TB/s").agrees_with(parse_quantity("5.325 TB/s"))  # written precision 0.05 TB/s
    assert not parse_quantity("490.3 TF").agrees_with(parse_quantity("653.7 TF"))
    assert parse_quantity("2.6 PFLOP/s").agrees_with(parse_quantity("2,614.9 TF"))
    assert not parse_quantity("64 KiB").agrees_with(parse_quantity("64 GB/s"))


def test_default_unit_from_table_header():
    # gpu-arch-specs.rst: column "L2 Cache (MiB)", cell "32 (4 per XCD)"
    unit = header_unit("L2 Cache (MiB)")
    assert unit == "MiB"
    values = [q.value for q in find_quantities("32 (4 per XCD)", unit)]
    assert values == [32 * MI, 4 * MI]


@pytest.mark.parametrize(("header", "unit"), [
    ("LDS (KiB)", "KiB"), ("VRAM (GiB)", "GiB"), ("L3 Cache (MiB)", "MiB"), ("Peak TFLOPS", "TFLOPS"),
    ("MI300X GPU  (Peak TFLOP/s)", "TFLOP/s"), ("Wavefront Size", None), ("FLOPS/CLOCK/CU", None),
    ("Compute Units", None),
])
def test_header_units(header, unit):
    assert header_unit(header) == unit


def test_conversion_to_profile_units():
    assert parse_quantity("1464 KiB").to("KiB") == 1464
    assert parse_quantity("4.8TB/s").to("GB/s") == pytest.approx(4800)
    assert parse_quantity("2.6 PFLOP/s").to("TFLOP/s") == pytest.approx(2600)
    assert parse_quantity("1 GHz").to("MHz") == pytest.approx(1000)
    assert parse_quantity("192 GB").to("GiB") == pytest.approx(192e9 / 2**30)  # GB != GiB
    assert parse_quantity("192 GiB").to("GiB") == 192
    with pytest.raises(ValueError, match="not"):
        parse_quantity("5.325 TFLOPS").to("GB/s")
    with pytest.raises(ValueError, match="unknown target unit"):
        parse_quantity("1 GHz").to("parsecs")
    assert set(TARGET_UNITS) >= {"KiB", "MiB", "GiB", "GB/s", "TFLOP/s", "MHz"}


def test_gigabytes_are_decimal_and_keep_their_binary_reading():
    """"64 GB" is 64e9 bytes (59.6 GiB), not 64 GiB; the same figure in GiB is kept for agreement; KB and MB of
    on-chip memories stay binary."""
    q = parse_quantity("64 GB of HBM3")
    assert q.value == 64e9 and q.binary_value == 64 * GI
    assert parse_quantity("1.5 TB").value == 1.5e12 and parse_quantity("1.5 TB").binary_value == 1.5 * 2**40
    assert parse_quantity("64 GiB").value == 64 * GI and parse_quantity("64 GiB").binary_value is None
    assert parse_quantity("128 KB").value == 128 * KI and parse_quantity("24 MB").value == 24 * MI
    assert parse_quantity("128 KB").binary_value is None
    assert parse_quantity("2.4 TB/s").value == 2.4e12 and parse_quantity("2.4 TB/s").binary_value is None


def test_parse_number_and_unknown_units():
    assert parse_number("1,307.4") == 1307.4 and parse_number("1½") == 1.5 and parse_number("½") == 0.5
    with pytest.raises(ValueError):
        parse_number("1.2.3")
    assert unit_info("furlongs") is None
    q = parse_quantity("12 furlongs")
    assert q.dimension == "count" and q.unit == ""


def test_bytes_and_bits_per_second_by_case():
    # "HBM2 capacity and bandwidth | 16 GB, 819 GBps" (a TPU spec table style) vs "operates at 5.2 Gbps" (white paper)
    assert parse_quantity("819 GBps").dimension == "bytes_per_s" and parse_quantity("819 GBps").value == 819e9
    assert parse_quantity("5.2 Gbps").dimension == "transfers_per_s"
    assert parse_quantity("100 Gb/s").dimension == "transfers_per_s"


def test_spelled_out_bit_rates_are_data_rates_and_iec_rates_are_binary():
    """"3,200 Gbit/s" is 400 GB/s of data (an eighth); "MiB/s" is binary like "MiB"; the abbreviations Gbps and
    Gb/s stay signalling rates, and "per pin" marks a pin's rate whatever the spelling."""
    assert [(q.value, q.dimension) for q in find_quantities("3,200 Gbit/s")] == [(400e9, "bytes_per_s")]
    assert [(q.value, q.dimension) for q in find_quantities("32,000 Gbit/s")] == [(4e12, "bytes_per_s")]
    assert [(q.value, q.dimension) for q in find_quantities("2,288,818 MiB/s")] == [(2_288_818 * 2**20,
                                                                                   "bytes_per_s")]
    assert find_quantities("18 Gbps")[0].dimension == "transfers_per_s"
    assert find_quantities("16 Gbit/s per pin")[0].per == "pin"
