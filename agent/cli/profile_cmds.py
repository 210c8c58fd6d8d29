"""``chiplore profile show|diff|detect|probe|virtual``: read, compare, device-query and measure hardware profiles,
and declare virtual chips (partitions of a real device)."""

from __future__ import annotations

import json

import typer
from rich.console import Console
from rich.table import Table

from agent.cli.app import NegativeNumberArguments, app
from agent.cli.console import CliConsole
from hardware_profiles import HardwareProfile, known_chips, load_profile, profile_path, save_profile
from hardware_profiles.device_query import chip_name_from_device, merge_device_facts, query_device
from hardware_profiles.schema import Alternative, ProfileField, display_value
from hardware_profiles.virtual import describe_partition
from hardware_profiles.yaml_io import check_chip_name, profile_to_data

profile_app = typer.Typer(help="Show, compare, device-query and measure hardware profiles; declare virtual chips.",
                          no_args_is_help=True)
app.add_typer(profile_app, name="profile")


def _console() -> Console:
    """Tables follow the terminal width (rich's default, ``COLUMNS`` when piped); plain lines never wrap paths."""
    return CliConsole()


#: Below this terminal width the sources move under the table as numbered references (a source column of a few
#: characters wrapped every citation into many lines).
NARROW_COLUMNS = 110


def profile_table(profile: HardwareProfile, references: list[str] | None = None) -> Table:
    """Rich table of every field: value, unit, kind, citation (alternatives listed under conflicts). With
    `references` (a list, filled here) the source column holds ``[n]`` and citation n is ``references[n - 1]``."""
    virtual = f", VIRTUAL: a partition of {profile.partition.host_chip}" if profile.partition else ""
    table = Table(title=f"{profile.chip} — {profile.display_name or 'hardware profile'} (backend {profile.backend}"
                        f"{virtual})")
    # field names, values and units are never broken; kind and source share what is left of the terminal width
    table.add_column("field", no_wrap=True)
    table.add_column("value", overflow="fold")
    table.add_column("unit", overflow="fold")
    table.add_column("kind", overflow="fold", ratio=1)
    table.add_column("source", overflow="fold", ratio=2, no_wrap=references is not None)

    def cite(text: str) -> str:
        if references is None or not text:
            return text
        if text not in references:
            references.append(text)
        return f"[{references.index(text) + 1}]"

    unit_name = profile.compute_unit_name or "null"
    unit_cite = profile.compute_unit_name_source.cite() if profile.compute_unit_name_source else ""
    table.add_row("compute_unit_name", unit_name, "", "stated" if profile.compute_unit_name else "", cite(unit_cite))
    for name, field in profile.fields().items():
        kind, source = field.kind or "", field.source.cite() if field.source else ""
        if field.kind == "derived" and field.formula:
            if references is None:
                kind = f"derived: {field.formula}"
            else:  # narrow: the formula goes with the reference
                source = f"{source} -- {name} derived: {field.formula}" if source else f"derived: {field.formula}"
        table.add_row(name, display_value(field.value), field.unit, kind, cite(source))
        for alt in other_alternatives(field):
            table.add_row("", f"  alt {display_value(alt.value)}", field.unit, "", cite(alt.source.cite()))
    return table


def other_alternatives(field: ProfileField) -> list[Alternative]:
    """The alternatives of a conflict other than the value shown: a conflict records every value it has seen, the
    shown one included (`hardware_profiles.merge`), and the row above already shows that value with its source."""
    return [a for a in field.alternatives if a.value != field.value]


@profile_app.command("show")
def show(chip: str = typer.Argument(..., help="chip name, e.g. h200 or mi300x"),
         as_json: bool = typer.Option(False, "--json", help="print the profile as JSON")) -> None:
    """Print a chip's profile: every value with its unit, kind and source."""
    profile = load_profile(chip)
    if as_json:
        typer.echo(json.dumps(profile_to_data(profile), indent=1, ensure_ascii=False))
        return
    console = _console()
    references: list[str] | None = [] if console.width < NARROW_COLUMNS else None
    console.print(profile_table(profile, references))
    for n, text in enumerate(references or [], start=1):
        console.print(f"[{n}] {text}", markup=False)
    console.print(f"file: {profile_path(chip)}")
    if profile.is_virtual:
        console.print(virtual_line(profile), soft_wrap=False)
    if profile.notes:
        console.print(f"notes: {profile.notes}", soft_wrap=False)  # prose: wrapped at the terminal width


def virtual_line(profile: HardwareProfile) -> str:
    """``VIRTUAL: virtual chip ...: a partition of h200 (NVIDIA H200 ...)...``, naming the host device."""
    host = profile.partition.host_chip if profile.partition else ""
    display = load_profile(host).display_name if host in known_chips() else ""
    return "VIRTUAL: " + describe_partition(profile, display)


def profile_differences(a: HardwareProfile, b: HardwareProfile) -> list[tuple[str, str, str, str]]:
    """(field, value in a, value in b, b/a) for every field whose value differs (kinds shown beside values)."""
    rows = []
    fa, fb = a.fields(), b.fields()
    for name in list(fa) + [n for n in fb if n not in fa]:
        x, y = fa.get(name), fb.get(name)
        vx, vy = (x.value if x else None), (y.value if y else None)
        if vx == vy:
            continue
        numbers = not isinstance(vx, bool) and not isinstance(vy, bool)
        ratio = f"{vy / vx:.3g}x" if numbers and vx and vy is not None else ""
        rows.append((name, display_value(vx) + (f" [{x.kind}]" if x and x.kind else ""),
                     display_value(vy) + (f" [{y.kind}]" if y and y.kind else ""), ratio))
    if a.compute_unit_name != b.compute_unit_name:
        rows.insert(0, ("compute_unit_name", str(a.compute_unit_name), str(b.compute_unit_name), ""))
    return rows


@profile_app.command("diff")
def diff(chip_a: str = typer.Argument(..., help="first chip"), chip_b: str = typer.Argument(..., help="second chip")
         ) -> None:
    """Fields whose values differ between two profiles, with the ratio B/A."""
    a, b = load_profile(chip_a), load_profile(chip_b)
    rows = profile_differences(a, b)
    console = _console()
    if not rows:
        console.print(f"{a.chip} and {b.chip}: no differences")
        return
    table = Table(title=f"{a.chip} vs {b.chip}")
    for column in ("field", a.chip, b.chip, f"{b.chip}/{a.chip}"):
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    console.print(table)
    same = len(a.fields()) - sum(1 for r in rows if r[0] != "compute_unit_name")
    console.print(f"{len(rows)} field(s) differ, {max(same, 0)} equal")


@profile_app.command("detect")
def detect(name: str = typer.Option(None, "--as", help="profile name to update (default: from the device name)"),
           device: int = typer.Option(0, "--device", help="device index"),
           dry_run: bool = typer.Option(False, "--dry-run", help="print, do not save")) -> None:
    """Query the present CUDA/ROCm device through torch and record its facts in the user's profile.

    Fills compute units, opt-in shared memory per block, shared memory per compute unit, L2, memory, warp size,
    registers and clock where torch (or Triton) reports them, naming the API of each value. A documented value
    that disagrees is kept as a conflict with both sources; the file written is
    ``$CHIPLORE_HOME/profiles/<name>.yaml`` (packaged profiles are never modified).
    """
    report = query_device(device)
    chip = check_chip_name(name) if name else chip_name_from_device(report.name)
    base = load_profile(chip) if chip in known_chips() else HardwareProfile(chip=chip)
    merged, messages = merge_device_facts(base, report)
    console = _console()
    console.print(f"device {device}: {report.name} ({report.arch}, {report.backend}, torch {report.torch_version})")
    for fact in report.facts:
        console.print(f"  {fact.field} = {display_value(fact.value)}  <- {fact.api} ({fact.raw})")
    for message in messages:
        console.print(f"  {message}")
    if dry_run:
        console.print("dry run: nothing saved")
        return
    path = save_profile(merged)
    console.print(f"saved {path}")


@profile_app.command("set", cls=NegativeNumberArguments)
def set_cmd(chip: str = typer.Argument(..., help="chip name, e.g. zx40"),
            field: str = typer.Argument(..., help="profile field, e.g. num_compute_units or peak_tflops.bf16"),
            value: str = typer.Argument(..., help="the value: 48, '64 KB', '2.4 TB/s', true/false for a feature"),
            source: str = typer.Option(..., "--source", help="where it comes from: document and page/section"),
            quote: str = typer.Option(None, "--quote", help="the phrase of the source that states it")) -> None:
    """Set one field of a chip's profile by hand, with its citation (required); writes the user's profile file
    atomically. A different value on record is kept as an alternative (the field becomes a conflict)."""
    from ingest.profile_set import set_field

    result = set_field(chip, field, value, source, quote)
    console = _console()
    console.print(result.message, markup=False)
    console.print(f"saved {result.path}", markup=False)


import agent.cli.probe_cmds  # noqa: E402, F401  profile probe, profile virtual (registered on profile_app)
