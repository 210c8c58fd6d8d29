"""`chiplore bench TASK`: the task's baseline and optimized kernels timed on its bench cases (GPU only).

Timing is `kernels.timing.bench` (warm-up, cold L2, device-wide sync, fixed repetitions, median) on two rotated
input sets per case; each time stands beside its fraction of the roofline floor: the spec floor (the profile's
peaks) and, once ``chiplore profile probe`` has measured the chip, the measured floor. The kernels run with the
chip's limits from its profile (`kernels.chip.chip_limits`), and a virtual chip's kernels inside its partition.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table

from agent.diagnosis import floor_or_none
from agent.roofline import measured_floor_or_none
from agent.session import load_task_checked, select_cases


def bench_task(task_name: str, chip: str, case_ids: list[str] | None, reps: int) -> list[dict[str, Any]]:
    """Rows ``{"case", "kernel", "time_us", "p25_us", "p75_us", "floor_us", "fraction_of_floor",
    "measured_floor_us", "fraction_of_measured_floor"}`` (floors None when unknown).

    Raises:
        BadInputError: unknown task, case or chip; a chip limit unknown in the profile; a virtual chip this
            machine cannot realise. RuntimeError: no GPU (from `kernels.timing.bench`).
    """
    from agent.adapters import load_chip_profile
    from hardware_profiles.limits import chip_limits_of
    from hardware_profiles.virtual import enter_chip
    from kernels.chip import chip_limits
    from kernels.timing import bench

    task = load_task_checked(task_name)
    profile = load_chip_profile(chip)
    limits = chip_limits_of(profile)
    enter_chip(profile)  # before the first allocation: a virtual chip's kernels run in its partition
    kernels = {"baseline": task.load_entry_point("baseline"), "optimized": task.load_entry_point("optimized")}
    rows = []
    with chip_limits(limits):
        for case in select_cases(task, case_ids):
            arg_sets = [task.make_inputs(case, case.seed + i, "cuda") for i in range(2)]
            floor, measured = floor_or_none(task, case, profile), measured_floor_or_none(task, case, profile)
            for name, fn in kernels.items():
                timing = bench(fn, arg_sets, reps=reps)
                t = timing.median_us
                rows.append({"case": case.id, "kernel": name, "time_us": t, "p25_us": timing.p25_us,
                             "p75_us": timing.p75_us, "floor_us": floor,
                             "fraction_of_floor": floor / t if floor else None, "measured_floor_us": measured,
                             "fraction_of_measured_floor": measured / t if measured else None})
            del arg_sets
    return rows


def rows_table(rows: list[dict[str, Any]]) -> Table:
    """Rich table of `bench_task` rows with the optimized kernel's speedup over the baseline."""
    table = Table(title="bench (median of timed calls, cold L2)")
    for col in ("case", "baseline us", "optimized us", "speedup", "% of spec floor (baseline -> optimized)",
                "% of measured floor"):
        table.add_column(col, justify="left" if col == "case" else "right")
    by_case: dict[str, dict[str, dict[str, Any]]] = {}
    for r in rows:
        by_case.setdefault(r["case"], {})[r["kernel"]] = r
    for case, k in by_case.items():
        b, o = k["baseline"], k["optimized"]
        frac = (f"{100 * b['fraction_of_floor']:.1f} -> {100 * o['fraction_of_floor']:.1f}"
                if b["fraction_of_floor"] else "-")
        measured = (f"{100 * b['fraction_of_measured_floor']:.1f} -> {100 * o['fraction_of_measured_floor']:.1f}"
                    if b.get("fraction_of_measured_floor") else "-")
        table.add_row(case, f"{b['time_us']:.1f}", f"{o['time_us']:.1f}", f"x{b['time_us'] / o['time_us']:.2f}", frac,
                      measured)
    return table
