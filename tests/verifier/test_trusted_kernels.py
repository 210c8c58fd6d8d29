"""The guards trust project code under `kernels/` (except the reference, spec, case-drawing, task and timing files): a
torch computation there would run unrefused on behalf of a candidate. This test keeps that trust earned: every
trusted kernels module passes the static rules that stand for computing or reading results outside Triton. A trusted
module may import another trusted module (``kernels.launch`` uses ``kernels.tensormap``): that one is held to the
same rules here; a candidate still may not import it (`agent.verifier.policy.ALLOWED_IMPORTS`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent.verifier.judge import FrameJudge
from agent.verifier.static_rules import check_source
from kernels.extend_attention.spec import TASK as EXTEND_ATTENTION
from kernels.splitk_gemm.spec import TASK as SPLITK_GEMM

ROOT = Path(__file__).resolve().parents[2]
COMPUTE_RULES = {"no-torch-compute", "no-tensor-compute-methods", "no-reference-import", "no-host-readout",
                 "no-io", "no-concurrency"}
JUDGE = FrameJudge(ROOT)
TRUSTED = sorted(p for p in (ROOT / "kernels").rglob("*.py") if JUDGE.kind(str(p)) == "trusted")
TRUSTED_MODULES = {".".join(p.relative_to(ROOT).with_suffix("").parts) for p in TRUSTED}
#: The task whose static rules a module is held to: the one of its folder (a task may import its own package).
TASKS = {"extend_attention": EXTEND_ATTENTION, "splitk_gemm": SPLITK_GEMM}


def test_the_trusted_set_is_the_kernel_code():
    names = {p.name for p in TRUSTED}
    assert {"baseline.py", "family.py", "family_kernels.py", "tuned.py"} <= names
    assert not names & {"reference.py", "spec.py", "cases.py", "long_trials.py", "covering.py", "task.py",
                           "timing.py"}


@pytest.mark.parametrize("path", TRUSTED, ids=[str(p.relative_to(ROOT)) for p in TRUSTED])
def test_trusted_kernel_modules_compute_only_in_triton(path):
    report = check_source(path.read_text(), path.name, TASKS.get(path.parent.name, EXTEND_ATTENTION))
    found = [v.reason(path.name) for v in report.violations if v.rule in COMPUTE_RULES and not _imports_trusted(v)]
    assert not found, found


def _imports_trusted(violation) -> bool:
    """A no-reference-import finding about a module that is itself trusted kernel code (checked by this test)."""
    named = re.search(r"imports '([\w.]+)'", violation.detail)
    if violation.rule != "no-reference-import" or named is None:
        return False
    module = named.group(1)  # "kernels.tensormap" or, for a from-import, "kernels.tensormap.prepare_launcher"
    return module in TRUSTED_MODULES or module.rsplit(".", 1)[0] in TRUSTED_MODULES


def test_a_candidate_still_may_not_import_the_tensor_map_cache():
    source = "from kernels.tensormap import prepare_launcher\n"
    report = check_source(source, "kernel_v1.py", EXTEND_ATTENTION)
    assert {v.rule for v in report.violations} & {"no-reference-import", "import-allowlist"}
