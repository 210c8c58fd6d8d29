"""Transfer to chips chiplore was not tuned on: two virtual chips carved out of the H200 (GPU).

Chips (`CHIPS`): ``tessera-s``, the public run's setting (36 compute units asked of the driver, 48 KiB of shared
memory per program), and ``tessera-m``, a mid-size chip (66 units) with a generous 160 KiB cap. For each:

1. ``setup``: the partition is asked of the driver and the SMs it really gives are counted inside it
   (`hardware_profiles.smid`: the distinct %smid of a large grid, and the driver's split for the request); a
   partition that is not the chip asked for (not applied, smaller than asked, a whole SM group larger, the two
   counts disagreeing) stops the call with a FAIL line before anything else runs. A datasheet in another
   vocabulary (tiles, scratchpad, work-groups, wavefronts; `benchmarks/data/tessera_datasheet.md.j2`) is written
   for the array the driver gave, with the H200's published figures scaled to the share of its SMs where that is
   honest (matrix peaks) and marked as the parent's where it is not (memory bandwidth); two fresh CHIPLORE_HOMEs
   get only that datasheet (``chiplore onboard``) and the probe run inside the partition (``chiplore profile
   probe``), which must find the counted size and honour the cap, and the profile must give kernels those limits
   (else FAIL, no arm runs); one home also gets the H200's findings (``--h200-findings``: a findings export,
   ``chiplore findings --chip h200 --json``, or an H200 optimize run folder).
2. arms, each ``chiplore optimize extend_attention --chip CHIP`` with the baseline timed on the same partition:
   (a) retrieval with the H200 findings, (b) retrieval with no findings, (c) ``--no-retrieval``; and (d) the
   H200's best configuration carried over unchanged (its dispatch table rendered for the chip, verified and timed
   on the partition against the baseline of an arm's run, or a baseline timed here).
3. ``report`` (no GPU): results JSON and the Markdown tables for BENCHMARKS.md (`benchmarks/transfer_report.py`).

Resumable over several GPU calls: everything lives under ``--out``; ``--state-in`` unpacks a previous call's
``--state-out`` tarball first; interrupted runs are resumed, finished ones skipped unless this call raises the
limit that ended them (``--max-evals``, ``--patience``, ``--budget-min``: the run continues from its history);
``--reset-arms`` removes the named arms' results first (their code changed); no arm starts when less than a
minute of ``--deadline-s`` is left.

    python benchmarks/transfer_virtual_chips.py run --chips s --arms setup,a,d,c --out $OUT/transfer \\
        --state-out $OUT/transfer_state.tgz --max-evals 6 --budget-min 2.5 --deadline-s 520
    python benchmarks/transfer_virtual_chips.py report --out DIR

Data: `benchmarks/data/h200_findings.json` is the findings export of the H200 optimize run ``retrieval`` (commit
a9cf28b, 2026-11-30, BENCHMARKS.md "Agent loop: `chiplore optimize` on the H200"; 69 findings, 3 accepted).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DATA = ROOT / "benchmarks" / "data"
H200_EXPORT = DATA / "h200_findings.json"


@dataclass(frozen=True)
class Chip:
    """A virtual chip of the experiment: name, display name, SMs asked of the driver, shared-memory cap."""

    name: str
    display: str
    requested: int
    cap_kb: float
    cap_note: str


CHIPS = {
    "s": Chip("tessera-s", "Tessera-S", 36, 48, "a per-work-group budget of the array, as in the public run"),
    "m": Chip("tessera-m", "Tessera-M", 66, 160, "a per-work-group budget of the array"),
}
DEFAULT_CASES = "decode,chunked-prefill,small-heads"

def _env(home: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if home is not None:
        env["CHIPLORE_HOME"] = str(home)
    return env


def cli(home: Path, *args: str, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess:
    """``chiplore ARGS`` in a fresh process with CHIPLORE_HOME=`home`; output echoed."""
    print(f"$ CHIPLORE_HOME={home.name} chiplore {' '.join(args)}", flush=True)
    try:
        done = subprocess.run([sys.executable, "-m", "agent.cli", *args], env=_env(home), cwd=ROOT, text=True,
                              capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        print("  (stopped at this call's deadline; resumable)", flush=True)
        return subprocess.CompletedProcess(args, 124, "", "timeout")
    print((done.stdout or "")[-4000:] + (done.stderr or "")[-2000:], flush=True)
    if check and done.returncode not in (0,):
        raise SystemExit(f"chiplore {args[0]} failed ({done.returncode})")
    return done


def given_sms(requested: int) -> dict:
    """`hardware_profiles.smid`'s report of a partition of `requested` SMs, counted inside it (fresh process).

    Raises:
        SystemExit: the count failed (its error's last lines).
    """
    done = subprocess.run([sys.executable, "-m", "hardware_profiles.smid", str(requested)], env=_env(None), cwd=ROOT,
                          text=True, capture_output=True, timeout=300)
    if done.returncode != 0:
        print(f"FAIL partition of {requested} SMs: the count failed: {done.stderr[-1500:].strip()}", flush=True)
        raise SystemExit(f"no partition of {requested} SMs; no arm runs")
    return json.loads(done.stdout.strip().splitlines()[-1])


def preflight_problem() -> str | None:
    """Why this machine cannot onboard and retrieve (one line), or None: chromadb and the embedding model."""
    try:
        import chromadb  # noqa: F401
    except ImportError:
        return "chromadb is not installed (the wheels of .whl: scripts/gpu.sh installs them when .whl was carried)"
    from core.errors import ChiploreError
    from knowledge.embedder import ENV_MODEL, default_model_path

    model = os.environ.get(ENV_MODEL, "")
    if os.sep in model and not Path(model).exists():
        return f"{ENV_MODEL}={model} does not exist (carry .model)"
    if not model:
        try:
            default_model_path()
        except ChiploreError as exc:
            return f"{exc} (or carry .model: scripts/gpu.sh sets {ENV_MODEL})"
    return None


def setup_problems(chip: Chip, given: dict, probe: dict, limits) -> list[str]:
    """What makes the chip set up for `chip` not the chip asked for, one line each (empty: it is): the partition
    (`hardware_profiles.smid.partition_problem`), the probe inside it (its compute units within 2 % of the SMs the
    grid ran on; a program over the cap must not have run), the profile's limits (the counted units, the cap).

    `given`: the partition's count; `probe`: the probe's readings (``report.readings`` of its JSON; {} before it
    ran); `limits`: the profile's `kernels.chip.ChipLimits` (None before onboarding)."""
    from hardware_profiles.smid import partition_problem

    problem = partition_problem(chip.requested, given)
    if problem:
        return [f"partition: {problem}"]
    tiles, out = given["smid_count"], []
    units = probe.get("num_compute_units", {}).get("value")
    if probe and (units is None or abs(units - tiles) > 0.02 * tiles):
        out.append(f"probe: {units} compute units measured inside the partition, whose grid ran on {tiles} SMs")
    smem = probe.get("smem_per_block_kb", {}).get("value")
    if smem is not None and smem > chip.cap_kb + 0.5:
        out.append(f"probe: a program of {smem:g} KiB ran, over the cap of {chip.cap_kb:g} KiB (the cap is not "
                   "applied)")
    if limits is not None:
        if limits.num_compute_units != tiles:
            out.append(f"profile: kernels get {limits.num_compute_units:g} compute units, the partition has {tiles}")
        if abs(limits.smem_per_block_kb - chip.cap_kb) > 0.5:
            out.append(f"profile: kernels get {limits.smem_per_block_kb:g} KiB per block, the chip's cap is "
                       f"{chip.cap_kb:g} KiB")
    return out


def _stop_if(chip: Chip, problems: list[str], passed: str) -> None:
    """Print FAIL lines and stop the call (no arm runs on a wrong chip), or one PASS line."""
    if problems:
        for problem in problems:
            print(f"FAIL {chip.name} setup: {problem}", flush=True)
        raise SystemExit(f"{chip.name}: the chip set up is not the one asked for; no arm runs")
    print(f"PASS {chip.name} setup: {passed}", flush=True)


def render_datasheet(chip: Chip, tiles: int, path: Path) -> None:
    """The chip's datasheet for `tiles` tiles, from the H200's profile (see the module docstring)."""
    import jinja2

    from hardware_profiles import load_profile

    h200 = load_profile("h200")
    share = tiles / h200.get("num_compute_units")
    text = jinja2.Template((DATA / "tessera_datasheet.md.j2").read_text()).render(
        name=chip.display, tiles=tiles, requested=chip.requested, parent_tiles=int(h200.get("num_compute_units")),
        share=share, parent_display=h200.display_name, clock_mhz=int(h200.get("clock_mhz")),
        scratchpad_kb=int(chip.cap_kb), scratchpad_note=chip.cap_note,
        bf16_tflops=h200.peak_flops("bf16") / 1e12 * share, fp16_tflops=h200.peak_flops("fp16") / 1e12 * share,
        mem_gb=int(h200.get("mem_capacity_gb")), mem_bw_gbps=h200.get("mem_bw_gbps"))
    path.write_text(text)


def setup(chip: Chip, out: Path, findings: Path) -> None:
    """Partition, datasheet, two homes onboarded with it, the probe inside the partition, H200 findings seeded;
    stopped with FAIL lines as soon as the chip is not the one asked for (`setup_problems`).

    Raises:
        SystemExit: the machine cannot onboard, the partition or the probe is wrong, or a step failed.
    """
    from hardware_profiles import load_profile_file
    from hardware_profiles.limits import chip_limits_of

    chip_dir = out / chip.name
    if (chip_dir / "setup.json").is_file():
        print(f"{chip.name}: set up already", flush=True)
        return
    problem = preflight_problem()
    if problem:
        print(f"FAIL {chip.name} setup: {problem}", flush=True)
        raise SystemExit(f"{chip.name}: cannot onboard on this machine")
    chip_dir.mkdir(parents=True, exist_ok=True)
    given = given_sms(chip.requested)
    tiles = given["smid_count"]
    _stop_if(chip, setup_problems(chip, given, {}, None),
             f"{chip.requested} SMs asked, the grid ran on {tiles}, the driver's split gives "
             f"{given['driver_sms']}, the context reports {given.get('context_sms')} (SM groups "
             f"{given['granularity'] or 'unreadable'})")
    sheet = chip_dir / f"{chip.name}.md"
    render_datasheet(chip, tiles, sheet)
    homes = [chip_dir / "home-empty", chip_dir / "home-seeded"]
    for home in homes:
        shutil.rmtree(home, ignore_errors=True)
    cli(homes[0], "profile", "virtual", chip.name, "--host", "h200", "--compute-units", str(chip.requested),
        "--smem-cap-kb", f"{chip.cap_kb:g}")
    cli(homes[0], "onboard", chip.name, str(sheet))
    cli(homes[0], "profile", "probe", chip.name, "--out", str(chip_dir / "probe.json"))
    probe = json.loads((chip_dir / "probe.json").read_text())["report"]["readings"]
    limits = chip_limits_of(load_profile_file(homes[0] / "profiles" / f"{chip.name}.yaml"))
    _stop_if(chip, setup_problems(chip, given, probe, limits),
             f"the probe measured {probe['num_compute_units']['value']:g} compute units and "
             f"{probe.get('smem_per_block_kb', {}).get('value', 'no')} KiB per program; kernels get "
             f"{limits.num_compute_units} compute units and {limits.smem_per_block_kb:g} KiB per block")
    shutil.copytree(homes[0], homes[1])  # the same datasheet and probe; then the H200's findings on top
    seed = subprocess.run([sys.executable, __file__, "_seed", str(homes[1]), str(findings)], env=_env(homes[1]),
                          cwd=ROOT, text=True, capture_output=True, timeout=600)
    print(seed.stdout[-2000:] + seed.stderr[-2000:], flush=True)
    if seed.returncode != 0:
        raise SystemExit("seeding the H200 findings failed")
    record = {"chip": chip.name, "requested": chip.requested, "driver_sms": given["driver_sms"],
              "context_sms": given.get("context_sms"), "smid_count": tiles, "host_sms": given["host_sms"],
              "granularity": given["granularity"],
              "cap_kb": chip.cap_kb, "probe_units": probe.get("num_compute_units", {}).get("value"),
              "probe_smem_kb": probe.get("smem_per_block_kb", {}).get("value"), "datasheet": sheet.name,
              "limits": limits.to_dict(),
              "seeded": seed.stdout.strip().splitlines()[-1] if seed.stdout.strip() else ""}
    (chip_dir / "setup.json").write_text(json.dumps(record, indent=1))


def h200_findings(src: Path) -> list[dict]:
    """Finding records of the H200 from a findings export (``{"findings": [...]}``) or an optimize run folder."""
    if src.is_dir():
        from agent.family_space import FamilySpace
        from agent.outcomes import findings_for
        from agent.runstate import RunDir
        from hardware_profiles import load_profile
        from kernels.extend_attention.spec import TASK

        state = RunDir.open(src).load_state()
        cases = [TASK.case(c) for c in (state.config.cases or [c.id for c in TASK.bench_cases])]
        space = FamilySpace(TASK, load_profile("h200"), cases)
        dispatch = {c.id: space.class_of(c) for c in cases}
        return [vars(f) if not hasattr(f, "model_dump") else f.model_dump() for r in state.evaluations
                for f in findings_for(state, r, {c.id: c.case_class for c in cases}, dispatch)]
    records = json.loads(src.read_text())["findings"]
    return [{k: v for k, v in r.items() if k != "status"} for r in records]


def h200_best_table(src: Path) -> dict[str, dict]:
    """The H200's best dispatch table: the best record's table of a run folder, or from an export, per dispatch
    class the knobs of the last accepted finding of that class (the loop accepts improvements in order)."""
    if src.is_dir():
        from agent.runstate import RunDir

        best = RunDir.open(src).load_state().best_record()
        return dict(best.parameters.get("table") or {}) if best else {}
    table: dict[str, dict] = {}
    for record in json.loads(src.read_text())["findings"]:
        params = record.get("parameters") or {}
        if record.get("accepted") and params.get("dispatch_class"):
            table[params["dispatch_class"]] = {k: v for k, v in params.items() if k not in ("dispatch_class",
                                                                                            "candidate")}
    return table


def seed(home: Path, src: Path) -> None:
    """Record the H200's findings into the store of `home` (CHIPLORE_HOME of this process)."""
    from hardware_profiles import load_profile
    from knowledge.findings import record_finding

    profile = load_profile("h200")
    found = h200_findings(src)
    for record in found:
        record_finding(record, profile)
    print(f"seeded {len(found)} H200 findings from {src.name}")


def run_arm(chip: Chip, arm: str, out: Path, args: argparse.Namespace, deadline: float) -> None:
    """One optimize arm (a, b, c), started or resumed, stopped at the call's deadline."""
    chip_dir = out / chip.name
    home = chip_dir / ("home-seeded" if arm == "a" else "home-empty")
    run_id = f"{chip.name}-{arm}"
    state = home / "runs" / run_id / "state.json"
    if state.is_file() and not extends(json.loads(state.read_text()), args):
        print(f"{run_id}: finished already", flush=True)
        return
    left = deadline - time.monotonic()
    if left < 60:
        print(f"{run_id}: left for the next call ({left:.0f} s of this call left)", flush=True)
        return
    patience = args.patience or args.max_evals
    limits = ["--max-evals", str(args.max_evals), "--budget-min", f"{args.budget_min:g}", "--patience", str(patience)]
    if state.is_file():
        command = ["optimize", "--resume", run_id, *limits]
    else:
        command = ["optimize", "extend_attention", "--chip", chip.name, "--run-id", run_id, "--cases", args.cases,
                   "--no-record-findings", "--no-report", *limits]
        if arm == "c":
            command.append("--no-retrieval")
    cli(home, *command, timeout=left - 20, check=False)


def extends(saved: dict, args: argparse.Namespace) -> bool:
    """Whether a saved run state (its JSON) is to be continued under this call's limits: it is not finished, or it
    finished on a limit (evaluations, patience, budget) that this call raises."""
    if saved.get("status") != "finished":
        return True
    stop, kind = saved.get("config", {}).get("stop", {}), saved.get("stop_kind")
    return ((kind == "max_evals" and args.max_evals > stop.get("max_evals", 0))
            or (kind == "no_improvement" and (args.patience or args.max_evals) > stop.get("patience", 0))
            or (kind == "budget" and args.budget_min > (stop.get("budget_min") or 0)))


def reset_arm(chip: Chip, arm: str, out: Path) -> None:
    """Remove one arm's results on `chip` (its run folder; arm d's JSON and file), so it runs afresh: for an arm
    whose code changed since its state was saved."""
    chip_dir = out / chip.name
    if arm == "d":
        for name in ("arm-d.json", "arm-d.py"):
            (chip_dir / name).unlink(missing_ok=True)
    else:
        home = chip_dir / ("home-seeded" if arm == "a" else "home-empty")
        shutil.rmtree(home / "runs" / f"{chip.name}-{arm}", ignore_errors=True)
    print(f"{chip.name}-{arm}: reset (runs afresh)", flush=True)


def carry_table(table: dict[str, dict], source, target, cases: list) -> dict[str, dict]:
    """The dispatch table of `target` (a FamilySpace) that runs every case with the configuration `table` gives
    its class in `source` (the classes differ when the chips' ridge points do); the first case of a target class
    decides when two disagree. Configurations are completed with the family's defaults, never changed."""
    carried: dict[str, dict] = {}
    for case in cases:
        config = table.get(source.class_of(case))
        if config is not None:
            carried.setdefault(target.class_of(case), source.complete(config))
    return carried


def carried_candidate(chip: Chip, out: Path, table: dict[str, dict], cases: list) -> Path:
    """The H200's table rendered for the chip (its limits and classes): every case gets the configuration the
    H200 ran it with (its H200 dispatch class), unchanged."""
    import inspect

    from agent.family_space import FamilySpace
    from hardware_profiles import load_profile, load_profile_file
    from kernels.extend_attention import baseline
    from kernels.extend_attention.spec import TASK

    profile = load_profile_file(out / chip.name / "home-empty" / "profiles" / f"{chip.name}.yaml")
    target, h200 = FamilySpace(TASK, profile, cases), FamilySpace(TASK, load_profile("h200"), cases)
    carried = carry_table(table, h200, target, cases)
    path = out / chip.name / "arm-d.py"
    header = {"id": "h200-best", "parent_id": None, "generation": 0, "patterns": [], "run_id": "transfer",
              "chip": chip.name, "rationale": "the H200's best configuration, carried over unchanged"}
    path.write_text(target.render(carried, inspect.signature(baseline.extend_attention_fwd), header))
    return path


def arm_d(chip: Chip, out: Path, args: argparse.Namespace, table: dict[str, dict]) -> None:
    """Verify and time the carried-over configuration on the partition against a baseline timed there."""
    from agent.verifier import Verifier, VerifyOptions
    from benchmarks.transfer_report import safe_geomean
    from hardware_profiles import load_profile_file
    from kernels.extend_attention.spec import TASK

    chip_dir = out / chip.name
    if (chip_dir / "arm-d.json").is_file():
        print(f"{chip.name}-d: done already", flush=True)
        return
    cases = [TASK.case(c) for c in args.cases.split(",")]
    candidate = carried_candidate(chip, out, table, cases)
    profile = load_profile_file(chip_dir / "home-empty" / "profiles" / f"{chip.name}.yaml")
    base_times = None
    for arm, home in (("c", "home-empty"), ("b", "home-empty"), ("a", "home-seeded")):
        state = chip_dir / home / "runs" / f"{chip.name}-{arm}" / "state.json"
        if state.is_file():
            base = json.loads(state.read_text()).get("baseline") or {}
            if base.get("timed"):
                base_times, source = base["time_us"], f"baseline of run {chip.name}-{arm}"
                break
    options = VerifyOptions(device="cuda", case_ids=tuple(c.id for c in cases))
    with Verifier(TASK, profile, options) as verifier:
        if base_times is None:
            base = verifier.verify(ROOT / "kernels" / "extend_attention" / "baseline.py")
            base_times, source = base.time_us, "baseline timed for arm d"
        verdict = verifier.verify(candidate)
    speedups = {c: base_times[c] / t for c, t in verdict.time_us.items() if c in base_times}
    record = {"stage": verdict.stage, "reasons": verdict.reasons[:5], "time_us": verdict.time_us,
              "baseline_time_us": base_times, "baseline_source": source, "speedup": speedups,
              "geomean": safe_geomean(list(speedups.values())) if verdict.passed else None,
              "table": table, "device": verdict.device}
    (chip_dir / "arm-d.json").write_text(json.dumps(record, indent=1))
    print(f"{chip.name}-d: {verdict.stage}, speedups {speedups}", flush=True)


def run(args: argparse.Namespace) -> None:
    out = Path(args.out)
    if args.state_in and Path(args.state_in).is_file() and not out.exists():
        with tarfile.open(args.state_in) as tar:
            tar.extractall(out.parent, filter="data")
    out.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + args.deadline_s
    findings = Path(args.h200_findings)
    table = h200_best_table(findings)
    (out / "h200_table.json").write_text(json.dumps({"source": str(findings), "table": table}, indent=1))
    try:
        for key in args.chips.split(","):
            chip = CHIPS[key]
            for arm in filter(None, args.reset_arms.split(",")):
                reset_arm(chip, arm, out)
            for arm in args.arms.split(","):
                if time.monotonic() > deadline - 60:
                    print(f"deadline: {chip.name} {arm} and later left for the next call", flush=True)
                    break
                if arm == "setup":
                    setup(chip, out, findings)
                elif arm == "d":
                    arm_d(chip, out, args, table)
                else:
                    run_arm(chip, arm, out, args, deadline)
    finally:
        if args.state_out:
            with tarfile.open(args.state_out, "w:gz") as tar:
                tar.add(out, arcname=out.name)
        report(argparse.Namespace(out=str(out)), [a for a in args.arms.split(",") if a in ("a", "b", "c", "d")])


def report(args: argparse.Namespace, asked: list[str] | None = None) -> None:
    """results.json and results.md under ``args.out``, the tables printed, then PASS/FAIL lines: one per arm of
    `asked` (this call's arms) and the issue's two claims."""
    from benchmarks.transfer_report import arm_checks, chip_results, markdown, summary_checks

    out = Path(args.out)
    saved = out / "h200_table.json"  # the table the run carried over (from its --h200-findings)
    table = json.loads(saved.read_text())["table"] if saved.is_file() else h200_best_table(H200_EXPORT)
    results = [chip_results(out / c.name, c.name, table) for c in CHIPS.values() if (out / c.name).is_dir()]
    (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    text = markdown(results)
    (out / "results.md").write_text(text + "\n")
    print(text)
    for line in arm_checks(results, asked or []) + summary_checks(results, CHIPS["s"].name):
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    go = sub.add_parser("run", help="set up chips and run arms (GPU)")
    go.add_argument("--out", required=True)
    go.add_argument("--chips", default="s,m", help="s (36 units, 48 KiB), m (66 units, 160 KiB)")
    go.add_argument("--arms", default="setup,a,b,c,d")
    go.add_argument("--cases", default=DEFAULT_CASES)
    go.add_argument("--max-evals", type=int, default=6)
    go.add_argument("--budget-min", type=float, default=2.5, help="per arm, over all calls")
    go.add_argument("--patience", type=int, default=0, help="evaluations without gain that end an arm (0: --max-evals)")
    go.add_argument("--reset-arms", default="", help="arms (a,b,c,d) of --chips to run afresh, their saved results "
                                                    "removed first (the code they ran has changed)")
    go.add_argument("--deadline-s", type=float, default=520, help="this call's wall-clock limit")
    go.add_argument("--h200-findings", default=str(H200_EXPORT), help="findings export JSON or H200 run folder")
    go.add_argument("--state-in", default="", help="tarball of an earlier call's --out")
    go.add_argument("--state-out", default="", help="write --out as a tarball here at the end")
    rep = sub.add_parser("report", help="results JSON and Markdown tables (no GPU)")
    rep.add_argument("--out", required=True)
    seed_cmd = sub.add_parser("_seed", help=argparse.SUPPRESS)
    seed_cmd.add_argument("home")
    seed_cmd.add_argument("src")
    args = parser.parse_args()
    if args.command == "run":
        run(args)
    elif args.command == "report":
        report(args)
    else:
        seed(Path(args.home), Path(args.src))


if __name__ == "__main__":
    main()
