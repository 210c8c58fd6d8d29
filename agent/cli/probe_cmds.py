"""``chiplore profile probe`` (measure the chip through Triton) and ``chiplore profile virtual`` (declare a chip a
partition of a real device)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import typer
from rich.table import Table

from agent.cli.profile_cmds import _console, profile_app, virtual_line
from core.errors import BadInputError
from hardware_profiles import HardwareProfile, known_chips, load_profile, save_profile
from hardware_profiles.virtual import make_partition
from hardware_profiles.yaml_io import check_chip_name, profile_to_data


def _no_gpu_reason() -> str | None:
    import torch

    if not torch.cuda.is_available():
        return "no GPU is visible to torch"
    if os.environ.get("TRITON_INTERPRET") == "1":
        return "TRITON_INTERPRET=1 is set (interpreter times are not measurements)"
    return None


def readings_table(report) -> Table:
    """Rich table of the probe's readings: field, value, unit, spread, repeats, method."""
    table = Table(title=f"probe readings on {report.device} ({report.backend}, triton {report.triton_version})")
    for column in ("field", "measured", "unit", "spread", "repeats"):
        table.add_column(column, no_wrap=True)
    table.add_column("method", overflow="fold", ratio=1)
    for name, r in report.readings.items():
        table.add_row(name, f"{r.value:g}", r.unit, f"{100 * r.spread:.1f}%", str(r.repeats), r.method)
    return table


def roofline_table(profile: HardwareProfile) -> Table:
    """Spec (documents) and measured (probe) rooflines side by side."""
    from hardware_profiles.probe.record import roofline_rows

    table = Table(title=f"{profile.chip}: spec roofline (profile peaks) vs measured roofline (probe)")
    for column in ("quantity", "spec", "measured", "measured / spec"):
        table.add_column(column)
    for row in roofline_rows(profile):
        table.add_row(*row)
    return table


def comparison_lines(report) -> list[str]:
    """The probe's rates against torch's copy and matmul timed in the same run."""
    lines = []
    bw, torch_bw = report.readings.get("achievable_mem_bw_gbps"), report.comparisons.get("torch_copy_gbps")
    if bw and torch_bw:
        lines.append(f"copy: probe {bw.value:,.0f} GB/s, torch copy {torch_bw:,.0f} GB/s ({bw.value / torch_bw:.0%})")
    for key, blas in report.comparisons.items():
        if key.startswith("torch_matmul_"):
            dtype = key.split("_")[2]
            dot = report.readings.get(f"achievable_tflops.{dtype}")
            mine = f"{dot.value:,.0f} TFLOP/s" if dot else "not measured"
            share = f" ({dot.value / blas:.0%})" if dot and blas else ""
            lines.append(f"{dtype} matmul: probe tl.dot {mine}, torch.matmul {blas:,.0f} TFLOP/s{share}")
    return lines


@profile_app.command("probe")
def probe_cmd(
    chip: str = typer.Argument(..., help="chip name (the profile to update; created when new)"),
    device: int = typer.Option(0, "--device", help="device index"),
    device_query: bool = typer.Option(True, "--device-query/--no-device-query",
                                      help="also cross-check the device's own report (conflicts recorded)"),
    quick: bool = typer.Option(False, "--quick", help="fewer repeats and smaller products (a smoke run)"),
    dry_run: bool = typer.Option(False, "--dry-run", help="print, do not save"),
    out: Path = typer.Option(None, "--out", help="also write the readings, messages and profile as JSON here"),
    as_json: bool = typer.Option(False, "--json", help="print the JSON instead of tables"),
) -> None:
    """Measure the chip through Triton and record each result as a field of kind `measured`.

    Compute units (the knee of a fixed-work kernel against its number of programs), shared memory per program
    (a compile-and-launch ladder up to the first refusal), threads per program, achievable DRAM bandwidth (a copy
    over many times L2), achievable dense bf16/fp16 tl.dot throughput and launch overhead, each with its method,
    repeats and spread. A disagreement with the documents or the device query is recorded as a conflict. A virtual
    chip is measured inside its partition. Without a GPU it says so and exits 1.
    """
    name = check_chip_name(chip)
    reason = _no_gpu_reason()
    if reason:
        raise BadInputError(f"cannot measure {name}: {reason}; the probe times Triton kernels on the chip itself")
    import torch

    from hardware_profiles.device_query import query_device
    from hardware_profiles.probe.measure import CannotMeasure, run_probe
    from hardware_profiles.probe.record import apply_probe, report_to_json
    from hardware_profiles.virtual import enter_chip

    base = load_profile(name) if name in known_chips() else HardwareProfile(chip=name)
    torch.cuda.set_device(device)
    entered = enter_chip(base, device)  # before the first allocation: a virtual chip is measured in its partition
    try:
        report = run_probe(quick=quick)
    except CannotMeasure as exc:
        raise BadInputError(f"cannot measure {name}: {exc}") from None
    where = report.device + (f" (virtual chip {name}: {entered.requested_sms} SMs asked of the driver, "
                             f"{entered.driver_sms or 'an unreadable number'} given)" if entered else "")
    merged, messages = apply_probe(base, report, where, query_device(device) if device_query else None)
    doc = {"chip": name, "where": where, "report": report_to_json(report), "messages": messages,
           "partition": None if entered is None else {"requested_sms": entered.requested_sms,
                                                      "driver_sms": entered.driver_sms, "host_sms": entered.host_sms},
           "saved": None if dry_run else str(save_profile(merged)), "profile": profile_to_data(merged)}
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(doc, indent=1, ensure_ascii=False))
    if as_json:
        typer.echo(json.dumps(doc, ensure_ascii=False))
        return
    console = _console()
    console.print(readings_table(report))
    for line in comparison_lines(report) + report.notes:
        console.print(line, markup=False)
    if entered is not None:
        console.print(virtual_line(merged) + f"; the driver gave {entered.driver_sms} SMs for "
                      f"{entered.requested_sms} asked", markup=False)
    for message in messages:
        console.print(f"  {message}", markup=False)
    console.print(roofline_table(merged))
    console.print("dry run: nothing saved" if dry_run else f"saved {doc['saved']}")


@profile_app.command("virtual")
def virtual_cmd(
    chip: str = typer.Argument(..., help="name of the virtual chip"),
    host: str = typer.Option(..., "--host", help="profile of the real device it is carved from, e.g. h200"),
    compute_units: int = typer.Option(..., "--compute-units", min=1, help="SMs of the green context"),
    smem_cap_kb: float = typer.Option(None, "--smem-cap-kb", min=1,
                                      help="shared memory a program may use, KiB (default: the host's)"),
) -> None:
    """Declare CHIP a virtual chip: a partition of HOST's device (COMPUTE_UNITS SMs of a CUDA green context and an
    optional per-program shared-memory cap). Its facts come from its own documents (`chiplore onboard`) and
    `chiplore profile probe` run inside the partition, never from HOST's profile. Writes
    $CHIPLORE_HOME/profiles/CHIP.yaml, keeping what that profile already holds.
    """
    name = check_chip_name(chip)
    host_profile = load_profile(host)
    if name == host_profile.chip:
        raise BadInputError(f"virtual chip {name}: name it differently from its host {host_profile.chip}")
    partition = make_partition(name, host_profile, compute_units, smem_cap_kb)
    base = load_profile(name) if name in known_chips() else HardwareProfile(chip=name,
                                                                             display_name=f"virtual chip {name}")
    path = save_profile(base.model_copy(update={"partition": partition}))
    console = _console()
    console.print(virtual_line(load_profile(name)), markup=False)
    console.print(f"saved {path}")
