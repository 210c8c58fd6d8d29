"""Family space: classes from shapes, the candidate's own dispatch agrees, feasibility by the family's formula,
and a rendered candidate computes the right answer under the Triton interpreter."""

import importlib.util
import inspect
import random

import pytest
import torch

from agent.family_space import FamilySpace, table_hash
from kernels.extend_attention import baseline
from kernels.extend_attention.dispatch import call_class
from kernels.extend_attention.family import FamilyConfig, tma_plan
from kernels.extend_attention.family_space import case_shape
from kernels.extend_attention.mla_gluon import GLUON_IMPLS, MLA_ROUTE
from kernels.extend_attention.spec import TASK, make_inputs, reference
from tests.agent.helpers import LATER_KNOBS, h200_profile

SIG = inspect.signature(baseline.extend_attention_fwd)
HEADER = {"id": "v1", "parent_id": "v0", "generation": 1, "patterns": ["split-kv"], "rationale": "test",
          "run_id": "run", "chip": "h200"}


@pytest.fixture(scope="module")
def space():
    return FamilySpace(TASK, h200_profile(), list(TASK.bench_cases))


def test_classes_of_bench_cases(space):
    # memory-bound iff G*E < ridge = 989e12/4.8e12 = 206 FLOP/B: decode (4*1) and spec-verify (4*4)
    assert space.classes == {
        "compute-d128": ["prefill", "chunked-prefill", "mixed-batch", "ragged"], "compute-d64": ["small-heads"],
        "memory-d128": ["spec-verify", "decode"], "compute-d256": ["large-heads"], "compute-wide": ["mla"]}


def test_candidate_dispatch_matches_agent_classes(space):
    """The candidate's `call_class` on tensor metadata (meta tensors: bench cases too) equals the agent's class;
    the ridge is the one written into the candidate file."""
    source = space.render({k: space.structure_config(k) for k in space.classes}, SIG, HEADER)
    assert f"RIDGE_FLOP_PER_BYTE = {space.ridge}" in source
    rng = random.Random(7)
    cases = list(TASK.bench_cases) + list(TASK.test_cases) + [TASK.random_case(rng, small=s) for s in [1, 0] * 10]
    for case in cases:
        s = case_shape(case)
        q = torch.empty(s.total_extend, s.num_q_heads, s.head_dim, device="meta")
        k = torch.empty(s.total_extend, s.num_kv_heads, s.head_dim, device="meta")
        indptr = torch.empty(s.batch + 1, device="meta")
        assert call_class(q, k, indptr, space.ridge) == space.class_of(case), case.id


def test_feasibility_uses_family_footprint(space):
    # MLA 576/512 with V a view of K, bf16: 2*(4*128*(512+64) + 128*576)/1024 = 720 KiB > 227 KiB
    big = {"block_m": 128, "block_n": 128, "num_warps": 8, "num_stages": 4, "num_splits": 1, "pack_gqa": True}
    assert space.smem_kb(big, "compute-wide") == pytest.approx(720.0)
    assert not space.feasible(big, "compute-wide")
    assert space.feasible(big, "compute-d128") is False  # 2*(4*128*256 + 128*128)/1024 = 288 KiB
    small = {**big, "num_stages": 2}  # 2*(2*128*256 + 128*128)/1024 = 160 KiB
    assert space.feasible(small, "compute-d128")
    wide, d128 = space.all_configs("compute-wide", LATER_KNOBS), space.all_configs("compute-d128", LATER_KNOBS)
    assert all(space.feasible(c, "compute-wide") for c in wide)
    generic = [c for c in wide if c["mla"] == "off"]
    assert 0 < len(generic) < len(d128) and len(wide) == 2 * len(generic)  # the MLA class: either path
    assert all(c["mla"] == "off" for c in d128)  # no MLA-shaped case: the knob would change nothing


def test_programs_follow_kernel_grids(space):
    decode = TASK.case("decode")  # B=64, E=1, H_q=32, H_kv=8
    assert space.programs(None, decode) == 64 * 32  # baseline: one q head per program, one row block each
    packed = {"block_m": 16, "block_n": 64, "num_warps": 4, "num_stages": 2, "num_splits": 4, "pack_gqa": True}
    assert space.programs(packed, decode) == 8 * 4 * 64  # 8 KV heads x 4 splits x 64 row blocks of 4 rows


def test_snap_neighbors_and_structure(space):
    assert space.snap("num_splits", 9) == 8 and space.snap("num_splits", 3) == 4
    assert space.snap("pack_gqa", True) is True and space.snap("block_m", "x") is None
    base = space.structure_config("compute-d128")
    assert base == {"block_m": 128, "block_n": 64, "num_warps": 8, "num_stages": 1, "num_splits": 1,
                    "pack_gqa": False, "pregather": False, "tma": False, "mla": "off", **LATER_KNOBS}
    assert LATER_KNOBS == {"heavy_first": False, "fold_scale": False, "gather_stages": 0, "gather_ahead": 0,
                           "ahead_heads": 1, "ahead_sync": False, "ragged_tiles": 0}  # the baseline's structure
    moves = space.neighbors(base, "compute-d128")
    assert ("block_m", -1, {**base, "block_m": 64}) in moves
    assert all(knob != "block_m" or direction == -1 for knob, direction, _ in moves)
    assert table_hash({"a": base}) == table_hash({"a": dict(reversed(list(base.items())))})


def test_the_mla_path_is_a_knob_of_exact_values(space):
    # the dedicated MLA kernel (the tuned entry point's choice for 576/512) is reachable: "off" (the generic kernel,
    # the baseline's structure) and the tuned entry point's Gluon kernel (MLA_ROUTE) are its values; a
    # string knob snaps only to its own values
    assert space.knobs["mla"] == ("off", MLA_ROUTE) and MLA_ROUTE in GLUON_IMPLS
    assert space.snap("mla", MLA_ROUTE) == MLA_ROUTE and space.snap("mla", "gluon_ws") is None
    assert space.snap("mla", 1) is None and space.snap("mla", True) is None
    base = space.structure_config("compute-wide")
    assert base["mla"] == "off"
    moves = {(knob, d): c for knob, d, c in space.neighbors(base, "compute-wide")}
    assert moves[("mla", 1)] == {**base, "mla": MLA_ROUTE}


def test_switch_knobs_pregather_and_tma(space):
    assert space.knobs["pregather"] == space.knobs["tma"] == (False, True)
    # a switch snaps bools and 0/1 (a formula's result) to the bool, nothing else
    assert space.snap("tma", True) is True and space.snap("tma", 1) is True and space.snap("pregather", 0) is False
    assert space.snap("tma", 2) is None and space.snap("tma", "yes") is None and space.snap("num_splits", True) is None
    assert space.snap("block_m", 64.0) == 64 and type(space.snap("block_m", 64.0)) is int
    # the neighbour of a switch is its flip, one per switch
    base = space.structure_config("compute-d128")
    moves = {(knob, d): c for knob, d, c in space.neighbors(base, "compute-d128")}
    assert moves[("pregather", 1)] == {**base, "pregather": True} and ("pregather", -1) not in moves
    flipped = {**base, "tma": True}
    back = [(d, c) for knob, d, c in space.neighbors(flipped, "compute-d128") if knob == "tma"]
    assert back == [(-1, base)]
    # 4 block_m x 3 block_n x 2 warps x 4 stages x 6 splits x 2 x 2 x 2 switches = 4608 before feasibility (and
    # mla "off": the class has no MLA-shaped case); the switches change no shared memory, so exactly a quarter of the
    # feasible set has both off
    configs = space.all_configs("compute-d128", LATER_KNOBS)
    plain = [c for c in configs if not c["pregather"] and not c["tma"]]
    assert len(configs) == 4 * len(plain) and 0 < len(configs) <= 4 * 3 * 2 * 4 * 6 * 2 * 2 * 2
    # a configuration recorded before the switches existed ran at the family's defaults (FamilyConfig: off)
    old = {k: v for k, v in base.items() if k not in ("pregather", "tma", *LATER_KNOBS)}
    # (heavy_first and fold_scale: on in FamilyConfig, so such a configuration ran with them)
    ran = {**base, **{k: getattr(FamilyConfig(), k) for k in LATER_KNOBS}}
    assert ran["heavy_first"] is ran["fold_scale"] is True
    assert space.complete(old) == ran and space.full_table({"compute-d128": old})["compute-d128"] == ran


def _load_candidate(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rendered_candidate_is_correct_under_interpreter(space, tmp_path):
    table = {"memory-d64": {"block_m": 16, "block_n": 32, "num_warps": 4, "num_stages": 2, "num_splits": 2,
                            "pack_gqa": True}}
    path = tmp_path / "kernel_v1.py"
    path.write_text(space.render(table, SIG, HEADER))
    module = _load_candidate(path)
    # gqa-4 (D = 32) has its own entry (memory-d64); mla-576-512 (memory-wide) is no bench class: the family default
    for case_id in ("gqa-4", "mla-576-512"):
        inputs = make_inputs(TASK.case(case_id), seed=3)
        module.extend_attention_fwd(**inputs)
        expected = reference(inputs)["o_extend"]
        torch.testing.assert_close(inputs["o_extend"].float(), expected, atol=4e-3, rtol=4e-3)


@pytest.mark.parametrize("case_id", ["gqa-4", "zero-lengths", "fp32-inputs"])
@pytest.mark.slow
def test_rendered_candidate_with_pregather_and_tma_is_correct(space, tmp_path, case_id):
    config = {"block_m": 16, "block_n": 32, "num_warps": 4, "num_stages": 2, "num_splits": 2, "pack_gqa": False,
              "pregather": True, "tma": True}
    source = space.render({"memory-d64": config}, SIG, HEADER)
    assert ("FamilyConfig(block_m=16, block_n=32, num_warps=4, num_stages=2, num_splits=2, pack_gqa=False, "
            "pregather=True, tma=True, mla='off', heavy_first=True, fold_scale=True, gather_stages=0, "
            "gather_ahead=0, ahead_heads=1, ahead_sync=False, ragged_tiles=0)") in source
    path = tmp_path / "kernel_v2.py"
    path.write_text(source)
    module = _load_candidate(path)
    case = TASK.case(case_id)
    assert space.class_of(case) == "memory-d64"  # D = 32 (16 for fp32-inputs)
    inputs = make_inputs(case, seed=5)
    # gqa-4 (fp16, D = 32, contiguous heads): extend and pre-gathered prefix tiles both through descriptors under
    # the interpreter; zero-lengths has empty sequences; fp32-inputs keeps the pointer path (FamilyConfig.tma)
    plan = tma_plan(FamilyConfig(**config), **inputs)
    assert plan == {"gqa-4": (True, True), "zero-lengths": (True, True), "fp32-inputs": (False, False)}[case_id]
    module.extend_attention_fwd(**inputs)
    tol = TASK.tolerances[str(case.params["dtype"])]
    torch.testing.assert_close(inputs["o_extend"].float(), reference(inputs)["o_extend"], atol=tol.atol,
                               rtol=tol.rtol)


def _with(profile, **values):
    """`profile` with scalar fields replaced (None = unknown)."""
    fields = {k: profile.num_compute_units.model_copy(update={"value": v, "unit": getattr(profile, k).unit})
              for k, v in values.items()}
    return profile.model_copy(update=fields)


@pytest.mark.slow  # ~10 s on a busy 2-core machine
def test_the_profile_units_set_the_split_factor_the_candidate_runs_with(tmp_path, monkeypatch):
    """Same table, profiles of 36 and 132 compute units: the rendered candidates carry those limits and split-KV
    (num_splits=0: `auto_splits`) follows them. One sequence, 8 heads, 16 rows (one 64-row block): 8 programs;
    4 waves want ceil(4 x 36 / 8) = 18 splits on 36 units, ceil(4 x 132 / 8) = 66 on 132, capped at
    8192 / 256 = 32 (256 keys per split at least). No chip limits are set in this process: the candidate's own."""
    from kernels.chip import chip_limits_if_set
    from kernels.extend_attention import family
    from kernels.task import Case

    assert chip_limits_if_set() is None
    seen: list[int] = []
    real = family.get_workspace

    def recording(device, splits, *rest):  # records the split count run_family launched with, then the real call
        seen.append(splits)
        return real(device, splits, *rest)

    monkeypatch.setattr(family, "get_workspace", recording)
    table = {"memory-d64": {"block_m": 64, "block_n": 128, "num_warps": 4, "num_stages": 2, "num_splits": 0,
                            "pack_gqa": True}}
    case = Case("one-long-prefix", {"extend_lens": [16], "prefix_lens": [8192], "num_q_heads": 8,
                                    "num_kv_heads": 8, "head_dim": 16, "dtype": "float16"})
    splits = {}
    for units in (36, 132):
        space = FamilySpace(TASK, _with(h200_profile(), num_compute_units=units), list(TASK.bench_cases))
        assert space.class_of(case) == "memory-d64"
        path = tmp_path / f"kernel_{units}.py"
        path.write_text(space.render(table, SIG, {**HEADER, "chip": f"chip{units}"}))
        module = _load_candidate(path)
        assert module.CHIP_LIMITS.num_compute_units == units and module.CHIP_LIMITS.smem_per_block_kb == 227
        inputs = make_inputs(case, seed=2)
        seen.clear()
        module.extend_attention_fwd(**inputs)
        splits[units] = seen[-1]
        tol = TASK.tolerances["float16"]
        torch.testing.assert_close(inputs["o_extend"].float(), reference(inputs)["o_extend"], atol=tol.atol,
                                   rtol=tol.rtol)
    assert splits == {36: 18, 132: 32}


@pytest.mark.parametrize("field", ["num_compute_units", "smem_per_block_kb", "warp_size", "max_threads_per_block"])
def test_an_unknown_limit_is_an_error_naming_the_field(field):
    from core.errors import BadInputError

    profile = _with(h200_profile(), **{field: None})
    with pytest.raises(BadInputError) as info:
        FamilySpace(TASK, profile, list(TASK.bench_cases))
    message = str(info.value)
    assert f"{field} (" in message and "unknown" in message
    assert "chiplore profile probe h200" in message and f"chiplore profile set h200 {field}" in message
