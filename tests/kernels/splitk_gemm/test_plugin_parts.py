"""The task's plug-in parts, ready for the task contract: the family as the agent searches it (`space`), the
candidate template (rendered and run), and the catalog file (every formula parsed, checked against the names it
may use, and evaluated for the bench cases on chip profiles)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import jinja2
import pytest
import torch
import yaml

from hardware_profiles import load_profile
from kernels.chip import ChipLimits, UnknownChipLimit
from kernels.splitk_gemm.config import FamilyConfig, smem_footprint_kb
from kernels.splitk_gemm.dispatch import call_class
from kernels.splitk_gemm.family import plan_launch
from kernels.splitk_gemm.space import FAMILY
from kernels.splitk_gemm.spec import KNOBS, TASK, make_inputs
from kernels.splitk_gemm.tuned import choose_config, dot_config, gemv_config
from kernels.splitk_gemm.variables import FUNCTIONS, VARIABLES, bind, case_values
from knowledge.formula import BUILTINS, SPECIAL_FUNCTIONS, parse
from knowledge.variables import DIAGNOSIS_VARIABLES, PROFILE_VARIABLES, profile_variables
from tests.kernels.splitk_gemm.helpers import SMALL_CHIP, check_impl

FOLDER = Path(__file__).resolve().parents[3] / "kernels" / "splitk_gemm"
H200 = load_profile("h200")
CHIPS = {"h200": H200, "a100": load_profile("a100")}


# --- family --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", TASK.bench_cases + TASK.test_cases, ids=lambda c: c.id)
def test_candidates_compute_the_agents_dispatch_class(case):
    args = make_inputs(case) if case in TASK.test_cases else None
    features = FAMILY.features(case)
    key = FAMILY.dispatch_class(features, None)
    if args is not None:
        assert call_class(args["a"], args["b"]) == key
    assert key.split("-")[1] == ("deep" if case.params["k"] >= case.params["n"] else "wide")


@pytest.mark.parametrize("chip", CHIPS, ids=list(CHIPS))
def test_family_budgets_what_the_kernel_launches(chip):
    profile = CHIPS[chip]
    limits = ChipLimits.from_profile(profile)
    for case in TASK.bench_cases:
        features = FAMILY.features(case)
        p = case.params
        tuned = choose_config(limits, p["m"], p["n"], p["k"], torch.bfloat16)
        config = tuned.to_dict()
        assert FAMILY.smem_kb(config, features) == smem_footprint_kb(tuned, torch.bfloat16)
        assert FAMILY.fits(config, features, profile)
        plan = plan_launch(tuned, features.problem(), limits)
        assert FAMILY.programs(config, features, profile) == plan.programs


def test_gemv_footprint_is_the_launched_rows_and_the_tuned_gemv_plan_is_in_the_space():
    """M = 1, bf16, GEMV at BLOCK_M 16 launches one row: 6 stages x (1 + 128) x 64 x 2 B = 96.75 KiB (not the
    108 KiB of 16 rows); the one-row class's tuned rule is that plan at the space's BLOCK_M 16, split_k 0."""
    features = FAMILY.features(TASK.case("m1-n4096-k14336"))
    gemv = dict(block_m=16, block_n=128, block_k=64, num_warps=8, num_stages=6, gemv=True)
    assert FAMILY.smem_kb(gemv, features) == pytest.approx(96.75)
    assert FAMILY.smem_kb(dict(gemv, gemv=False), features) == pytest.approx(108.0)
    assert FAMILY.fits(gemv, features, {"smem_per_block_kb": 100.0, "warp_size": 32, "max_threads_per_block": 1024})
    rule = FAMILY.tuned_config([features], H200)
    assert {k: rule[k] for k in (*gemv, "split_k", "fused_reduce")} == {**gemv, "split_k": 0, "fused_reduce": True}
    assert all(rule[k] in KNOBS[k] for k in KNOBS)


def test_programs_of_the_baseline_are_its_tiles():
    # M = 1: BLOCK_M 16, BLOCK_N 64: 4096 / 64 = 64 programs
    assert FAMILY.programs(None, FAMILY.features(TASK.case("m1-n4096-k4096")), H200) == 64


def test_fits_rejects_tiles_beyond_the_chips_shared_memory():
    small = {"smem_per_block_kb": 48.0, "warp_size": 32, "max_threads_per_block": 1024}
    features = FAMILY.features(TASK.case("m1-n4096-k4096"))
    big = dict(block_m=16, block_n=128, block_k=128, num_stages=4)  # 144 KiB
    assert not FAMILY.fits(big, features, small)
    assert FAMILY.fits(dict(big, num_stages=1), features, small)
    assert not FAMILY.fits(dict(num_warps=8), features, {**small, "max_threads_per_block": 128})


def test_structure_config_is_the_baselines_structure_and_fits():
    features = [FAMILY.features(c) for c in TASK.bench_cases]
    config = FAMILY.structure_config(features, H200)
    assert set(config) == set(KNOBS) and all(config[k] in KNOBS[k] for k in KNOBS)
    assert (config["split_k"], config["stream_k"], config["fused_reduce"], config["atomic"]) == (1, False, False, False)
    assert (config["block_m"], config["block_n"], config["block_k"], config["num_stages"]) == (64, 64, 64, 3)
    small = {"smem_per_block_kb": 32.0, "warp_size": 32, "max_threads_per_block": 1024}
    fitted = FAMILY.structure_config(features, small)
    assert all(FAMILY.fits(fitted, f, small) for f in features) and fitted["num_stages"] == 2
    assert FAMILY.defaults() == FamilyConfig().to_dict()


# --- candidate template --------------------------------------------------------------------------------------------

def _render(table: dict, limits: ChipLimits) -> str:
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    template = env.from_string((FOLDER / "candidate.py.j2").read_text())
    header = dict(id="c1", parent_id="c0", generation=1, patterns=["split_kv"], rationale="", run_id="r", chip="x")
    configs = [(k, ", ".join(f"{n}={v!r}" for n, v in cfg.items())) for k, cfg in table.items()]
    return template.render(header=header, configs=configs, family_module=FAMILY.module, ridge=None,
                           signature="a, b, c", call_args="a=a, b=b, c=c", entry_point=TASK.entry_point,
                           limits={k: v for k, v in limits.to_dict().items() if k != "chip"})


def _load(source: str, tmp_path: Path):
    path = tmp_path / "candidate.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("splitk_candidate", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, TASK.entry_point)


def test_rendered_candidate_runs_its_table(tmp_path, device):
    table = {"m16-deep": dict(block_m=16, block_n=16, block_k=16, split_k=0, fused_reduce=True),
             "m16-wide": dict(block_m=16, block_n=32, block_k=16, stream_k=True),
             "m64-deep": dict(block_m=32, block_n=16, block_k=32, split_k=3, atomic=True)}
    fn = _load(_render(table, SMALL_CHIP), tmp_path)
    for case_id in ("decode-1x80x257", "odd-3x13x37", "long-k-33x96x300", "n96-k64", "fp32-7x96x100"):
        check_impl(fn, TASK.case(case_id), device)


def test_candidate_limits_are_the_profiles_and_an_unknown_one_is_named():
    assert FAMILY.candidate_limits(H200) == dict(num_compute_units=132, smem_per_block_kb=227.0, warp_size=32,
                                                 max_threads_per_block=1024)
    known = {"num_compute_units": 36, "smem_per_block_kb": 64.0, "warp_size": 32, "max_threads_per_block": 1024}
    for missing in known:
        with pytest.raises(UnknownChipLimit, match=missing):
            FAMILY.candidate_limits({**known, missing: None})


# --- catalog --------------------------------------------------------------------------------------------------------

CATALOG = yaml.safe_load((FOLDER / "catalog.yaml").read_text())
GENERIC = {"flops", "bytes", "intensity"}


def _rule_outputs() -> list[str]:
    return [o["name"] for rule in CATALOG["parameter_rules"] for o in rule["outputs"]]


def _formulas():
    for rule in CATALOG["parameter_rules"]:
        for o in rule["outputs"]:
            yield f"rule {rule['id']}.{o['name']}", o["formula"]
    for p in CATALOG["patterns"]:
        for pc in p.get("preconditions", []):
            yield f"pattern {p['id']} precondition", pc["formula"]
        for knob, formula in p.get("knobs", {}).items():
            yield f"pattern {p['id']} knob {knob}", formula
        if p.get("prior_gain"):
            yield f"pattern {p['id']} prior", p["prior_gain"]
    for bottleneck, formula in CATALOG["signals"].items():
        yield f"signal {bottleneck}", formula


def test_catalog_formulas_use_only_known_names_and_knobs():
    known = set(VARIABLES) | set(PROFILE_VARIABLES) | set(DIAGNOSIS_VARIABLES) | GENERIC | set(_rule_outputs())
    for where, text in _formulas():
        formula = parse(text)
        assert formula.names <= known, (where, sorted(formula.names - known))
        assert formula.functions <= set(BUILTINS) | set(SPECIAL_FUNCTIONS) | set(FUNCTIONS), (where, formula.functions)
    for p in CATALOG["patterns"]:
        assert set(p.get("knobs", {})) <= set(KNOBS), p["id"]
    assert CATALOG["task"] == TASK.name and len(set(_rule_outputs())) == len(_rule_outputs())


def _evaluate(case, profile) -> dict:
    env = {**profile_variables(profile, "bfloat16"), **case_values(case), **{n: None for n in DIAGNOSIS_VARIABLES},
           "flops": TASK.flops(case), "bytes": TASK.bytes(case)}
    env["intensity"] = env["flops"] / env["bytes"]
    functions = bind(case)
    for rule in CATALOG["parameter_rules"]:
        for o in rule["outputs"]:
            env[o["name"]] = parse(o["formula"]).evaluate(env, functions)
    return env


@pytest.mark.parametrize("chip", CHIPS, ids=list(CHIPS))
@pytest.mark.parametrize("case", TASK.bench_cases, ids=lambda c: c.id)
def test_catalog_rules_give_the_tuned_configuration(case, chip):
    """The tile rules give the tuned entry point's tensor-core tiles (what it runs at M > gemv_offer_rows); at
    fewer rows it runs the GEMV mode, which the catalog offers exactly there."""
    profile = CHIPS[chip]
    env = _evaluate(case, profile)
    p = case.params
    limits = ChipLimits.from_profile(profile)
    tiles = dot_config(limits, p["m"], p["n"], p["k"], torch.bfloat16)
    assert (env["block_m"], env["block_k"], env["num_stages"], env["num_warps"]) == (
        tiles.block_m, tiles.block_k, tiles.num_stages, tiles.num_warps)
    assert env["split_k_tuned"] == tiles.split_k and env["stream_k"] == tiles.stream_k and env["tiles_fit"]
    tuned = choose_config(limits, p["m"], p["n"], p["k"], torch.bfloat16)
    assert tuned.gemv == env["gemv_rows_fit"] == (p["m"] <= 1)
    assert tuned == (gemv_config if tuned.gemv else dot_config)(limits, p["m"], p["n"], p["k"], torch.bfloat16)
    functions = bind(case)
    for pattern in CATALOG["patterns"]:
        for knob, formula in pattern.get("knobs", {}).items():
            assert parse(formula).evaluate(env, functions) in KNOBS[knob], (pattern["id"], knob)


def test_split_pattern_applies_to_skinny_deep_calls_only():
    skinny = _evaluate(TASK.case("m1-n4096-k14336"), H200)
    assert skinny["split_gain"] > 2 and skinny["programs_base"] < 132
    wide = _evaluate(TASK.case("m1-n14336-k4096"), H200)  # 112 tiles already fill the chip: no split
    assert wide["split_k_tuned"] == 1 and wide["split_gain"] == 1.0


def test_input_scales_are_drawn_and_applied():
    """Random and hidden cases draw a_scale / b_scale in cases.SCALE_RANGE; make_inputs gives a that standard
    deviation and b * sqrt(K) b_scale's (measured on 64 x 4096 draws: within 5%)."""
    import random

    from kernels.splitk_gemm.cases import SCALE_RANGE, full_params, hidden_cases, random_case
    from kernels.task import Case

    rng = random.Random(4)
    drawn = [random_case(rng).params for _ in range(20)] + [c.params for _, c in hidden_cases(rng)]
    scales = [p[key] for p in drawn for key in ("a_scale", "b_scale")]
    assert all(SCALE_RANGE[0] <= s <= SCALE_RANGE[1] for s in scales) and max(scales) / min(scales) > 2
    case = Case("scaled", full_params(dict(m=64, n=64, k=4096, dtype="float32", a_scale=0.6, b_scale=1.7)), 3)
    inputs = make_inputs(case)
    assert abs(inputs["a"].std().item() / 0.6 - 1) < 0.05
    assert abs(inputs["b"].std().item() * 4096 ** 0.5 / 1.7 - 1) < 0.05
    with pytest.raises(ValueError, match="a_scale and b_scale must be > 0"):
        full_params(dict(m=1, n=1, k=1, a_scale=0.0))
