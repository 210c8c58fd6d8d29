"""The extend-attention bench's markdown table (pure function of the timing rows)."""

from __future__ import annotations

import math

from benchmarks.bench_extend_attention import markdown


def _row(case: str, provider: str, time_us: float) -> dict:
    return {"case": case, "provider": provider, "time_us": time_us, "fraction_of_floor": 0.5, "floor_us": 1.0}


def test_a_subset_of_cases_lists_only_those_and_averages_over_them():
    rows = [_row("prefill", "baseline", 300.0), _row("prefill", "optimized", 100.0),
            _row("mixed-batch", "baseline", 120.0), _row("mixed-batch", "optimized", 40.0 * 4 / 3)]
    table = markdown(rows)
    assert "| decode |" not in table and "| prefill |" in table and "| mixed-batch |" in table
    expected = math.sqrt(3.0 * 2.25)  # geomean of the two speedups
    assert f"{expected:.2f}x (2 cases)" in table
