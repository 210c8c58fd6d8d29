"""Each static rule fires on code written to break it and stays quiet on a clean candidate and on the honest ones."""

from __future__ import annotations

import pytest

from agent.verifier.static_rules import RULES, check_source, rule_names
from kernels.task import load_task
from tests.verifier.corpus import HONEST

TASK = load_task("extend_attention")

SIGNATURE = """def extend_attention_fwd(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr,
                         kv_indptr, kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale,
                         v_scale, sm_scale=None, logit_cap=0.0, skip_prefix_custom_mask=True,
                         sliding_window_size=-1, sinks=None, window_kv_offsets=None, xai_temperature_len=-1,
                         lse_extend=None, skip_prefix=False, skip_extend=False, page_size=1, score_mod=None,
                         aux_tensors=None, extend_seq_lens_cpu=None, identity_kv_indices=False):"""
#: SGLang 0.5.23's signature up to `sinks`: the optional tail the verifier never sets is left out.
UP_TO_SINKS = SIGNATURE.split(", window_kv_offsets")[0] + "):"
#: SGLang's releases of 2025: no k_scale / v_scale.
SIGNATURE_2025 = SIGNATURE.replace(" k_scale,\n                         v_scale,", "")

TEMPLATE = """import math

import torch
import triton
import triton.language as tl

BLOCK = 64
{top}


@triton.jit
def _fill(O, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.zeros([BLOCK], tl.float32)
    tl.store(O + offs, tl.exp(x).to(O.dtype.element_ty), mask=offs < n)


{signature}
    head_dim = q_extend.shape[-1]
    if head_dim == 576 and max_len_extend <= 64:
        head_dim = 512
    sms = getattr(torch.cuda.get_device_properties(0), "multi_processor_count", 0) if o_extend.is_cuda else 1
    scratch = torch.empty(max(1, sms), dtype=torch.float32, device=o_extend.device)
    n = o_extend.numel() + 0 * math.ceil(head_dim / BLOCK) + 0 * scratch.shape[0]
    {body}
    _fill[(triton.cdiv(n, BLOCK),)](o_extend, n, BLOCK=BLOCK)
    return o_extend
"""


def candidate(top: str = "", body: str = "pass", signature: str = SIGNATURE) -> str:
    return TEMPLATE.format(top=top, body=body, signature=signature)


def rules_hit(text: str) -> set[str]:
    report = check_source(text, "candidate.py", TASK)
    assert report.syntax_error is None, report.syntax_error
    return {v.rule for v in report.violations}


# (rule, top-of-file code, body code[, signature]) -- each must make `rule` fire.
CASES: list[tuple] = [
    ("entry-point", "", "pass", SIGNATURE.replace("extend_attention_fwd", "other_name")),
    ("entry-point", "", "pass", SIGNATURE.replace("sm_scale=None", "scale=None")),
    ("entry-point", "", "pass", SIGNATURE.replace("logit_cap=0.0", "logit_cap=1.0")),
    ("entry-point", "", "pass", "@triton.jit\n" + SIGNATURE),
    ("entry-point", "", "pass", SIGNATURE_2025),
    ("entry-point", "", "pass", UP_TO_SINKS.replace(", sinks=None):", "):")),  # a test case passes sinks
    ("entry-point", "", "pass", UP_TO_SINKS.replace("sinks=None):", "sinks=None, *, extra):")),
    ("entry-point", "", "pass", UP_TO_SINKS.replace("(q_extend,", "(q_extend, /,")),
    ("entry-point", "", "pass", UP_TO_SINKS.replace("k_scale,\n                         v_scale,",
                                                     "v_scale,\n                         k_scale,")),
    ("import-allowlist", "import string", "pass"),
    ("import-allowlist", "from collections import defaultdict", "pass"),
    ("no-reference-import", "from kernels.extend_attention.reference import reference_extend_attention", "pass"),
    ("no-reference-import", "from kernels.extend_attention import spec", "pass"),
    ("no-reference-import", "import agent.verifier", "pass"),
    ("no-concurrency", "import threading", "pass"),
    ("no-concurrency", "from concurrent.futures import ThreadPoolExecutor", "pass"),
    ("no-concurrency", "async def _later():\n    return None", "pass"),
    ("no-introspection", "import gc", "pass"),
    ("no-introspection", "import inspect", "pass"),
    ("no-introspection", "import ctypes", "pass"),
    ("no-introspection", "", "caller = o_extend.f_back"),
    ("no-io", "import os", "pass"),
    ("no-io", "import socket", "pass"),
    ("no-io", "import time", "pass"),
    ("no-io", "", "fh = open('torch.py', 'w')"),
    ("no-dynamic-code", "", "eval('1')"),
    ("no-dynamic-code", "", "exec('x = 1')"),
    ("no-dynamic-code", "", "fn = getattr(torch, 'mat' + 'mul')"),
    ("no-dynamic-code", "", "fn = getattr(torch, 'matmul')"),
    ("no-dynamic-code", "", "base = getattr(o_extend, '_base', None)"),
    ("no-dynamic-code", "", "mod = __import__('os')"),
    ("no-dynamic-code", "", "g = globals()"),
    ("no-torch-compute", "", "x = torch.matmul(q_extend, k_extend)"),
    ("no-torch-compute", "", "x = torch.nn.functional.softmax(q_extend, -1)"),
    ("no-torch-compute", "", "x = torch.ops.aten.mm(q_extend, k_extend)"),
    ("no-torch-compute", "from torch import einsum", "x = einsum('i,i->', q_extend, q_extend)"),
    ("no-torch-compute", "", "f = torch.compile(extend_attention_fwd)"),
    ("no-tensor-compute-methods", "", "x = q_extend.softmax(-1)"),
    ("no-tensor-compute-methods", "", "o_extend.copy_(q_extend)"),
    ("no-tensor-compute-methods", "", "rows = qo_indptr.tolist()"),
    ("no-tensor-compute-methods", "", "o_extend[0] = 1.0"),
    ("no-tensor-compute-methods", "", "o_extend.set_(v_extend)"),
    ("no-try-except", "", "try:\n        n = n + 0\n    except Exception:\n        n = 0"),
    ("no-attribute-assignment", "", "torch.cuda.synchronize = None"),
    ("no-attribute-assignment", "", "o_extend.data = q_extend"),
    ("no-attribute-assignment", "", "triton.knobs.runtime.launch_enter_hook = None"),
    ("no-module-state", "_CACHE = {}", "pass"),
    ("no-module-state", "_SEEN = []", "pass"),
    ("no-module-state", "_BUF = torch.empty(1024)", "pass"),
    ("no-module-state", "_CALLS = 0\n\n\ndef _count():\n    global _CALLS\n    _CALLS += 1", "pass"),
    ("no-module-state", "def _helper(x, memo={}):\n    return x", "pass"),
    ("no-module-state", "@lru_cache\ndef _helper(x):\n    return x", "pass"),
    ("no-module-state", "_setup()", "pass"),
    ("no-stateful-helpers", "from kernels.extend_attention.workspace import pooled", "pass"),
    ("no-stateful-helpers", "from kernels.extend_attention import workspace", "pass"),
    ("no-stateful-helpers", "from kernels.extend_attention.common import DTYPES", "DTYPES.setdefault('k', scratch)"),
    ("no-stateful-helpers", "import kernels.extend_attention.variables", "kernels.extend_attention.variables.VARIABLES"
     ".clear()"),
    ("no-module-state", "_CALLS = _fill.cache", "_CALLS.append(1)"),
    ("no-module-state", "from kernels.extend_attention.common import head_dim_blocks", "_fill.cache.update(a=1)"),
    ("no-module-state", "_SEEN = _fill.cache", "_SEEN[len(_SEEN)] = o_extend"),
    ("no-stateful-helpers", "from kernels.chip import set_chip_limits", "pass"),
    ("no-stateful-helpers", "import kernels.chip as kc", "kc.set_chip_limits(None)"),
    ("no-provenance-checks", "", "half = q_extend.is_inference()"),
    ("no-provenance-checks", "", "half = k_extend.storage_offset() > 0"),
    ("no-provenance-checks", "", "half = q_extend.requires_grad"),
    ("no-identity-keys", "", "key = id(q_extend)"),
    ("no-identity-keys", "", "key = q_extend.data_ptr()"),
    ("no-identity-keys", "", "key = hash(o_extend)"),
    ("no-literal-shape-branch", "", "if q_extend.shape[0] == 8192:\n        return None"),
    ("no-literal-shape-branch", "", "total = q_extend.shape[0]\n    if total in (2048, 4096):\n        return None"),
    ("no-literal-shape-branch", "", "if max_len_extend == 512:\n        return None"),
    ("no-literal-shape-branch", "", "if len(kv_indices) != 8192 * 64:\n        return None"),
    ("no-literal-shape-branch", "", "if tuple(q_extend.shape) == (8192, 32, 128):\n        return None"),
    ("no-literal-shape-branch", "", "b, h, d = q_extend.shape\n    skip = b == 64"),
    ("no-tensor-subclass", "class _T(torch.Tensor):\n    pass", "pass"),
    ("no-tensor-subclass", "class _M:\n    def __torch_function__(self, *args):\n        return 0", "pass"),
    ("no-tensor-subclass", "", "klass = type('T', (object,), {})"),
    ("no-streams-timers", "", "side = torch.cuda.Stream()"),
    ("no-streams-timers", "", "torch.cuda.synchronize()"),
    ("no-streams-timers", "", "start = torch.cuda.Event(enable_timing=True)"),
    ("no-streams-timers", "", "t = triton.testing.do_bench(lambda: None)"),
    ("no-private-access", "", "lib = torch._C"),
    ("no-private-access", "", "base = o_extend._base"),
    ("no-private-access", "", "names = __dict__"),
    ("no-private-access", "from torch import _C", "pass"),
    ("no-exit", "", "exit(0)"),
    ("no-exit", "", "raise SystemExit(1)"),
    ("no-exit", "", "quit()"),
    ("entry-returns-output", "", "return v_extend"),
    ("entry-returns-output", "", "return v_extend.view(-1)"),
    ("entry-returns-output", "", "return o_extend[0]"),
    ("no-module-escape", "", "env = torch.os.environ"),
    ("no-module-escape", "", "insp = triton.runtime.jit.inspect"),
    ("no-module-escape", "from torch import importlib as il", "pass"),
    ("no-module-escape", "T = torch", "payload = T.serialization.pickle.loads(b'')"),
    ("no-module-escape", "", "ser = torch.serialization.save"),
    ("no-module-escape", "from kernels.extend_attention.workspace import torch as T", "s = T.UntypedStorage"),
    ("no-module-escape", "", "jit = triton.runtime.jit.JITFunction"),
    ("no-module-value", "T = torch", "pass"),
    ("no-module-value", "", "mods = [torch, triton]"),
    ("no-module-value", "", "lang = tl"),
    ("no-module-value", "def _helper(t=torch):\n    return t", "pass"),
    ("no-torch-compute", "T = torch", "x = T.matmul(q_extend, k_extend)"),
    ("no-torch-compute", "", "(t := torch)\n    x = t.nn.functional.softmax(q_extend, -1)"),
    ("no-torch-compute", "", "a, b = torch, 1\n    x = a.einsum('i,i->', q_extend, q_extend)"),
    ("no-host-readout", "", "x = float(format(q_extend[0, 0, 0], '.9g'))"),
    ("no-host-readout", "_show = repr", "pass"),
    ("no-implicit-callbacks", "class _P:\n    def __index__(self):\n        return 1", "pass"),
    ("no-implicit-callbacks", "class _F:\n    def __del__(self):\n        pass", "pass"),
    ("no-implicit-callbacks", "class _L:\n    __len__ = len", "pass"),
]


def test_clean_template_passes_every_rule():
    assert rules_hit(candidate()) == set()


@pytest.mark.parametrize("signature", [
    UP_TO_SINKS,
    UP_TO_SINKS.replace("sinks=None):", "sinks=None, **kwargs):"),
    UP_TO_SINKS.replace(", skip_prefix_custom_mask=True, sliding_window_size=-1, sinks=None):", ", **kwargs):"),
    UP_TO_SINKS.replace("sinks=None):", "sinks=None, *, block_m=64):"),
], ids=["up-to-sinks", "up-to-sinks-kwargs", "kwargs-for-the-optional-ones", "extra-keyword-with-default"])
def test_signatures_every_verifier_call_binds_to_pass(signature):
    assert "entry-point" not in rules_hit(candidate(signature=signature))


def test_the_rule_names_what_does_not_bind():
    report = check_source(candidate(signature=SIGNATURE_2025), "c.py", TASK)
    detail = " ".join(v.detail for v in report.violations if v.rule == "entry-point")
    assert "not the task's required ones" in detail and "lacks parameter(s) k_scale, v_scale" in detail
    report = check_source(candidate(signature=UP_TO_SINKS.replace(", sinks=None):", "):")), "c.py", TASK)
    assert any("lacks parameter(s) sinks" in v.detail for v in report.violations)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}:{(c[2] if c[2] != 'pass' else c[1])[:30]}")
def test_rule_fires(case):
    rule, top, body, *sig = case
    text = candidate(top, body, *sig)
    assert rule in rules_hit(text)


def test_every_rule_has_a_name_a_rationale_and_a_test():
    assert len(RULES) >= 13
    for r in RULES:
        assert r.name and " " not in r.name
        assert 20 < len(r.rationale) < 160 and "\n" not in r.rationale
    assert set(rule_names()) == {c[0] for c in CASES}


@pytest.mark.parametrize("honest", HONEST, ids=lambda h: h.name)
def test_honest_candidates_pass_the_static_rules(honest):
    report = check_source(honest.path.read_text(), honest.path.name, TASK)
    assert report.ok, [v.reason(honest.path.name) for v in report.violations]


def test_reasons_name_rule_line_and_rationale():
    report = check_source(candidate(body="x = torch.matmul(q_extend, k_extend)"), "cand.py", TASK)
    (violation,) = [v for v in report.violations if v.rule == "no-torch-compute"]
    reason = violation.reason("cand.py")
    assert reason.startswith("static rule no-torch-compute (cand.py:")
    assert "torch.matmul" in reason and "Triton kernels" in reason
    line = candidate(body="x = torch.matmul(q_extend, k_extend)").splitlines()[violation.line - 1]
    assert "torch.matmul" in line


def test_syntax_error_is_reported_not_raised():
    report = check_source("def extend_attention_fwd(:\n", "bad.py", TASK)
    assert report.syntax_error and "bad.py:1" in report.syntax_error and not report.ok


def test_local_aliases_of_modules_are_resolved():
    src = candidate(top="T = torch\nP = T.serialization", body="x = P.pickle")
    hits = {v.rule: v.detail for v in check_source(src, "candidate.py", TASK).violations}
    assert "torch.serialization" in hits["no-module-escape"] and "torch.serialization" in hits["no-torch-compute"]


def test_family_imports_and_plain_classes_are_allowed():
    top = ("from kernels.extend_attention.family import FamilyConfig, run_family\n"
           "from kernels.extend_attention import family as fam\n\n\n"
           "class _Plan:\n    def __init__(self, config):\n        self.config = config")
    body = "plan = _Plan(FamilyConfig())\n    run = fam.run_family"
    assert not {"no-module-escape", "no-module-value", "no-implicit-callbacks"} & rules_hit(candidate(top, body))


def test_literal_comparisons_on_head_dims_and_thresholds_are_allowed():
    body = ("if q_extend.shape[2] == 128 or v_extend.shape[-1] in (64, 512):\n        n = n + 0\n"
            "    if max_len_extend > 4096 and q_extend.shape[0] >= 16:\n        n = n + 0")
    assert "no-literal-shape-branch" not in rules_hit(candidate(body=body))


def test_a_module_imported_by_name_is_judged_by_the_import_rules_only():
    top = "from kernels.extend_attention.reference import reference_extend_attention"
    hits = rules_hit(candidate(top=top, body="out = reference_extend_attention"))
    assert "no-reference-import" in hits and "no-module-escape" not in hits  # one reason, the one that applies
    escape = candidate(top="from torch import serialization", body="p = serialization.pickle")
    assert "no-module-escape" in rules_hit(escape)  # a module reached beyond the imported one is still an escape


def test_capped_reasons_show_every_violated_rule():
    from pathlib import Path

    from agent.verifier.engine import MAX_STATIC_REASONS
    from agent.verifier.static_report import StaticReport, Violation

    path = Path(__file__).parent / "cheats" / "try_except_fallback.py"
    report = check_source(path.read_text(), path.name, TASK)
    rules = {v.rule for v in report.violations}
    assert "no-try-except" in rules and len(report.violations) > MAX_STATIC_REASONS
    reasons = report.reasons(path.name, MAX_STATIC_REASONS)
    assert len(reasons) == MAX_STATIC_REASONS + 1 and reasons[-1].startswith("... and ")
    assert reasons[0].startswith("static rule no-try-except (try_except_fallback.py:")  # the rarest rule first
    shown = {r.split()[2] for r in reasons[:-1]}
    assert shown == rules

    many = StaticReport(tuple(Violation(f"rule-{i % 3}", i, "x", "y") for i in range(1, 8)))
    capped = many.reasons("k.py", 4)
    assert [r.split()[2] for r in capped[:3]] == ["rule-2", "rule-0", "rule-1"]  # fewest violations first
    assert capped[3] == "static rule rule-1 (k.py:4): x -- y"  # then the rest in line order
    assert capped[4] == "... and 3 more violations of ['rule-0', 'rule-1', 'rule-2']"
    assert len(many.reasons("k.py", 20)) == 7 and len(StaticReport(many.violations[:5]).reasons("k.py", 1)) == 4
