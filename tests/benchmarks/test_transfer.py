"""The transfer experiment's CPU parts: the datasheet reads back as the chip it describes, the H200's table carried
over by case, H200 findings and best table from an export, and the metrics of the report."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from agent.family_space import FamilySpace  # noqa: E402
from benchmarks import transfer_virtual_chips as transfer  # noqa: E402
from benchmarks.transfer_report import arm_checks, best_so_far, config_text, evals_to_fraction, markdown  # noqa: E402
from hardware_profiles import load_profile  # noqa: E402
from ingest.chunker import chunk_sections  # noqa: E402
from ingest.loaders import load_document  # noqa: E402
from ingest.profile_extract import extract_profile  # noqa: E402
from kernels.chip import ChipLimits  # noqa: E402
from kernels.extend_attention.spec import TASK  # noqa: E402


@pytest.mark.parametrize("key, tiles", [("s", 40), ("m", 72)])
@pytest.mark.slow
def test_the_datasheet_reads_back_as_the_chip_it_describes(tmp_path, key, tiles):
    """Extraction by the rules (no LLM) from the rendered datasheet: the array's own numbers, the matrix peaks
    scaled by its share of the H200's 132 SMs, the bandwidth bounded by the parent's (not scaled)."""
    chip = transfer.CHIPS[key]
    path = tmp_path / f"{chip.name}.md"
    transfer.render_datasheet(chip, tiles, path)
    doc = load_document(path)
    profile = extract_profile(chip.name, chunk_sections(doc.sections, chip.name))
    h200 = load_profile("h200")
    assert profile.get("num_compute_units") == tiles and profile.get("smem_per_block_kb") == chip.cap_kb
    assert profile.get("warp_size") == 32 and profile.get("max_threads_per_block") == 1024
    assert profile.get("mem_bw_gbps") == h200.get("mem_bw_gbps")
    assert profile.peak_flops("bf16") == pytest.approx(h200.peak_flops("bf16") * tiles / 132, rel=1e-3)
    text = path.read_text()
    assert "SM" not in text.replace("SMs", "") and "shared memory" not in text and "warp" not in text


def _space(profile):
    return FamilySpace(TASK, profile, list(TASK.bench_cases))


def test_the_carried_table_follows_each_case_to_its_class_on_the_new_chip():
    """A chip whose ridge point is a third of the H200's moves cases between classes; each case keeps the
    configuration the H200 ran it with."""
    h200 = load_profile("h200")
    low = h200.model_copy(update={"peak_tflops": {k: v.model_copy(update={"value": v.value / 3})
                                                  for k, v in h200.peak_tflops.items()}})
    source, target = _space(h200), _space(low)
    table = {k: {**source.structure_config(k), "num_stages": 2 + i} for i, k in enumerate(sorted(source.classes))}
    cases = list(TASK.bench_cases)
    carried = transfer.carry_table(table, source, target, cases)
    for case in cases:
        first = next(c for c in cases if target.class_of(c) == target.class_of(case))
        assert carried[target.class_of(case)] == source.complete(table[source.class_of(first)])


def test_h200_findings_and_best_table_from_an_export(tmp_path):
    export = {"findings": [
        {"id": "x1", "chip": "h200", "task": "extend_attention", "case_id": "decode", "verdict_stage": "pass",
         "verdict_id": "v1", "run_id": "r", "date": "2026-11-30", "accepted": True, "speedup": 2.0,
         "parameters": {"dispatch_class": "memory-d128", "candidate": "abc", "block_m": 16, "num_splits": 2},
         "status": "accepted"},
        {"id": "x2", "chip": "h200", "task": "extend_attention", "case_id": "decode", "verdict_stage": "pass",
         "verdict_id": "v2", "run_id": "r", "date": "2026-11-30", "accepted": False, "speedup": 2.5,
         "parameters": {"dispatch_class": "memory-d128", "block_m": 64}, "status": "rejected"}]}
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export))
    assert transfer.h200_best_table(path) == {"memory-d128": {"block_m": 16, "num_splits": 2}}
    records = transfer.h200_findings(path)
    assert len(records) == 2 and all("status" not in r for r in records)


def _state(points):
    evals = [SimpleNamespace(n=n, accepted=acc, geomean_speedup=g) for n, acc, g in points]
    return SimpleNamespace(evaluations=evals)


def test_best_so_far_and_evaluations_to_95_percent():
    curve = best_so_far(_state([(1, False, None), (2, True, 1.5), (3, False, 3.0), (4, True, 1.9), (5, True, 2.0)]))
    assert curve == [(1, 1.0), (2, 1.5), (3, 1.5), (4, 1.9), (5, 2.0)]
    assert evals_to_fraction(curve, 2.0) == 4 and evals_to_fraction(curve, 3.0) is None


def test_markdown_lists_every_arm_and_configuration():
    arms = [{"arm": "a", "geomean": 2.0, "evaluations": 6, "evals_to_95": 2, "measured_fraction_geomean": 0.4,
             "status": "finished", "table": {"memory-d128": {"block_m": 16, "block_n": 128, "num_warps": 4,
                                                             "num_stages": 3, "num_splits": 0, "pack_gqa": True}}},
            {"arm": "b", "missing": True}, {"arm": "c", "missing": True},
            {"arm": "d", "geomean": None, "evaluations": 1, "evals_to_95": None, "measured_fraction_geomean": None,
             "stage": "compile_error", "table": {}}]
    text = markdown([{"chip": "tessera-s", "arms": arms, "setup": {}, "classes": ["memory-d128"],
                      "h200_table": {"memory-d128": {"block_m": 32, "block_n": 128, "num_warps": 4, "num_stages": 3,
                                                     "num_splits": 2}}}])
    assert "| tessera-s | (a) retrieval, H200 findings | 2 of 6 | x2.00 | 40.0 % | finished |" in text
    assert "| tessera-s | (b) retrieval, empty findings | - | not run | - | - |" in text
    assert "compile_error" in text
    assert config_text({"block_m": 16, "block_n": 128, "num_warps": 4, "num_stages": 3, "num_splits": 0,
                        "pack_gqa": True}) == "16x128 w4 s3 split auto pack"


def _given(count, driver=None):
    return {"smid_count": count, "driver_sms": driver, "granularity": [8, 8], "host_sms": 132}


def _probe(units, smem):
    return {"num_compute_units": {"value": units}, "smem_per_block_kb": {"value": smem}}


def test_setup_stops_on_a_chip_that_is_not_the_one_asked_for():
    """Tessera-S asks 36 SMs and 48 KiB: 40 given is the driver's rounding (fine); a partition not applied, a probe
    that sees another size or runs a program over the cap, or a profile that hands kernels other limits is not."""
    chip = transfer.CHIPS["s"]
    right = ChipLimits(40, 48.0, 32, 1024, "tessera-s")
    assert transfer.setup_problems(chip, _given(40, 40), {}, None) == []
    assert transfer.setup_problems(chip, _given(40, 40), _probe(40, 48), right) == []
    assert transfer.setup_problems(chip, _given(132, 132), _probe(132, 227), right) == [
        "partition: the grid ran on all 132 SMs of the device: the partition of 36 was not applied"]
    assert transfer.setup_problems(chip, _given(40, 40), _probe(36, 227), ChipLimits(132, 227.0, 32, 1024)) == [
        "probe: 36 compute units measured inside the partition, whose grid ran on 40 SMs",
        "probe: a program of 227 KiB ran, over the cap of 48 KiB (the cap is not applied)",
        "profile: kernels get 132 compute units, the partition has 40",
        "profile: kernels get 227 KiB per block, the chip's cap is 48 KiB"]


def test_the_h200_findings_the_experiment_seeds_are_a_named_data_file():
    assert transfer.H200_EXPORT == ROOT / "benchmarks" / "data" / "h200_findings.json"
    records = transfer.h200_findings(transfer.H200_EXPORT)
    assert len(records) == 69 and {r["chip"] for r in records} == {"h200"}
    table = transfer.h200_best_table(transfer.H200_EXPORT)
    assert table and all(set(config) & {"block_m", "block_n", "num_warps"} for config in table.values())


def test_each_asked_arm_gets_a_pass_or_fail_line():
    arms = [{"arm": "a", "geomean": 2.0, "evaluations": 6, "status": "finished", "stop": "budget: used"},
            {"arm": "c", "geomean": 1.0, "evaluations": 2, "status": "running", "stop": None},
            {"arm": "d", "geomean": None, "stage": "compile_error"}]
    lines = arm_checks([{"chip": "tessera-s", "arms": arms}], ["a", "b", "c", "d"])
    assert lines == [
        "PASS tessera-s arm (a) retrieval, H200 findings: finished after 6 evaluations (budget: used), geomean x2.00",
        "FAIL tessera-s arm (b) retrieval, empty findings: not run",
        "FAIL tessera-s arm (c) --no-retrieval: running after 2 evaluations (None), geomean x1.00",
        "FAIL tessera-s arm (d) H200 best configuration carried over: verdict compile_error, geomean -"]


def _arm(arm, points, stop="6 evaluations made (max 6)"):
    from benchmarks.transfer_report import best_so_far as curve_of

    state = _state([(n, True, g) for n, g in enumerate(points, 1)])
    return {"arm": arm, "geomean": max(points), "curve": curve_of(state), "evaluations": len(points), "stop": stop}


def test_the_third_claim_reads_the_chips_best_and_each_arms_own():
    from benchmarks.transfer_report import add_metrics, summary_checks

    # best-so-far curves of the tessera-s run (BENCHMARKS.md): (a) 2.72 ... 4.46, (c) 1.60 ... 3.00
    a = _arm("a", [2.72, 3.47, 4.18, 4.18, 4.46, 4.46])
    c = _arm("c", [1.60, 1.60, 1.60, 3.00, 3.00, 3.00])
    rows = [a, c]
    assert add_metrics(rows) == 4.46
    assert (a["evals_to_95"], a["evals_to_95_own"]) == (5, 5)  # 0.95 x 4.46 = 4.237: eval 5
    assert (c["evals_to_95"], c["evals_to_95_own"]) == (None, 4)  # never 4.237; its own 3.00 at eval 4
    lines = summary_checks([{"chip": "tessera-s", "arms": rows}], "none")
    assert lines[0].startswith("FAIL tessera-s: 95 % of the chip's best (any arm): arm (a) in 5 of 6, arm (c) in "
                               "more than 6")
    assert lines[1].startswith("FAIL tessera-s: 95 % of each arm's own best: arm (a) in 5 of 6, arm (c) in 4")
    # arm (a) there at once, arm (c) not within 15: 1 <= 16 / 3 on the strict reading
    a, c = _arm("a", [4.40] * 15), _arm("c", [1.6] * 3 + [3.0] * 12, stop="15 evaluations made (max 15)")
    add_metrics([a, c])
    lines = summary_checks([{"chip": "tessera-s", "arms": [a, c]}], "none")
    assert lines[0].startswith("PASS tessera-s: 95 % of the chip's best (any arm): arm (a) in 1 of 15")
    assert lines[1].startswith("PASS tessera-s: 95 % of each arm's own best: arm (a) in 1 of 15, arm (c) in 4")


@pytest.mark.parametrize(("saved", "continued"), [
    ({"status": "running"}, True),
    ({"status": "finished", "stop_kind": "max_evals", "config": {"stop": {"max_evals": 6}}}, True),
    ({"status": "finished", "stop_kind": "max_evals", "config": {"stop": {"max_evals": 15}}}, False),
    ({"status": "finished", "stop_kind": "no_improvement", "config": {"stop": {"patience": 6}}}, True),
    ({"status": "finished", "stop_kind": "budget", "config": {"stop": {"budget_min": 5.0}}}, False),
    ({"status": "finished", "stop_kind": "exhausted", "config": {"stop": {"max_evals": 6}}}, False),
])
def test_a_finished_arm_continues_only_when_this_call_raises_the_limit_that_ended_it(saved, continued):
    args = SimpleNamespace(max_evals=15, patience=0, budget_min=5.0)
    assert transfer.extends(saved, args) is continued


def test_reset_removes_only_the_named_arm(tmp_path):
    chip = transfer.CHIPS["s"]
    for home, arm in (("home-seeded", "a"), ("home-empty", "c")):
        (tmp_path / chip.name / home / "runs" / f"{chip.name}-{arm}").mkdir(parents=True)
    (tmp_path / chip.name / "arm-d.json").write_text("{}")
    transfer.reset_arm(chip, "a", tmp_path)
    assert not (tmp_path / chip.name / "home-seeded" / "runs" / "tessera-s-a").exists()
    assert (tmp_path / chip.name / "home-empty" / "runs" / "tessera-s-c").is_dir()
    assert (tmp_path / chip.name / "arm-d.json").is_file()
