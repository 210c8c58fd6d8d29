"""The verifier's regression corpus: cheating candidates (must be rejected, each at a known stage) and honest
candidates (must pass). Used by tests/verifier/test_corpus.py (CPU) and scripts/verify_corpus_gpu.py (H200).

Each cheat names the threat kind it implements (shared/reference/verifier_threats.md, plus kinds found while
building the harness), the stage the full verifier rejects it at, and the stage the dynamic stage alone (static
rules skipped) rejects it at -- on the CPU, and on a GPU where the attack only shows there. An expectation is one
stage, or a tuple of stages when a run may legitimately end at either (each a rejection), with the reason beside it.

Known gaps stay in the corpus, marked (``gpu_full="pass"``; ``scripts/verify_corpus_gpu.py`` lists them under
``known_gaps``; on the CPU ``full="pass"``), rather than being dropped or given a test that cannot fail. The
breaker3 list below (2026-12-02) was the last, closed by verif6's covering trials; before it,
``fp32_as_fp16`` (float32 inputs computed in float16), passed on a GPU while float32 was allowed tf32 dots there
(float16's 10-bit mantissa, so a 4e-3 bound could not tell the two apart) and no GPU trial had float32 inputs. Now
float32 must be computed in IEEE float32 (tolerance 1e-4 on every device, kernels/extend_attention/spec.py) and
every plan checks a float32 case (agent/verifier/plan.py, REQUIRED_DTYPES), so it is a mismatch on a GPU too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CHEATS_DIR = HERE / "cheats"


#: An expected verdict stage, or a tuple of acceptable ones.
Stages = str | tuple[str, ...]


def accepts(expected: Stages, stage: str) -> bool:
    """Whether a verdict at `stage` meets `expected` (one stage, or any stage of a tuple)."""
    return stage in expected if isinstance(expected, tuple) else stage == expected


def stages_label(expected: Stages | None) -> str:
    """`expected` as text: ``mismatch`` or ``mismatch|runtime_error``."""
    return "|".join(expected) if isinstance(expected, tuple) else str(expected)


@dataclass(frozen=True)
class Cheat:
    """A cheating candidate and where the verifier must stop it.

    Attributes:
        name: file stem in tests/verifier/cheats/. kind: the threat it implements.
        Expected stages (`Stages`: one stage or a tuple of acceptable ones; check with `accepts`):
        full: with every layer.
        dynamic: with the static stage skipped, on the CPU (None: invisible on the CPU).
        gpu: with the static stage skipped on a GPU (None: same as `dynamic`).
        reason: substring of the dynamic-only verdict's reasons (on the CPU).
        unguarded: with the static stage and the torch compute guard both off (None: not run).
        gpu_full: with every layer on a GPU (None: same as `full`; "pass" marks a known gap).
    """

    name: str
    kind: str
    full: Stages
    dynamic: Stages | None
    reason: str
    gpu: Stages | None = None
    unguarded: Stages | None = None
    gpu_full: Stages | None = None

    @property
    def path(self) -> Path:
        return CHEATS_DIR / f"{self.name}.py"

    @property
    def gpu_dynamic(self) -> Stages | None:
        return self.gpu or self.dynamic

    @property
    def gpu_full_stage(self) -> Stages:
        return self.gpu_full or self.full


S, R, M, P = "static_rejected", "runtime_error", "mismatch", "pass"

CHEATS: tuple[Cheat, ...] = (
    Cheat("stale_allocator", "stale allocator memory", M, M, "outside |got-expected|"),
    Cheat("partial_grid", "partial computation", M, M, "NaN/inf"),
    Cheat("input_mutation", "input mutation", R, R, "input mutation"),
    Cheat("input_mutation_kernel", "input mutation", R, R, "input mutation"),
    Cheat("passthrough_return", "input passthrough / aliasing", S, R, "passthrough"),
    Cheat("alias_set_storage", "input passthrough / aliasing", S, R, "aten.set_"),
    Cheat("no_max_subtraction", "precision downgrade / tolerance abuse", M, M, "large logits"),
    Cheat("low_precision_v", "precision downgrade / tolerance abuse", M, M, "outside |got-expected|"),
    # on a GPU its honest path's default (tf32) float32 dots may fail the float32 long trials before a bench case
    Cheat("hardcoded_bench_shapes", "hard-coded shapes, early exit", S, None, "bench case", gpu=(R, M)),
    # the first hidden trial it meets: usually the hidden random shape; on some draws (1 of 12 seeds tried) that
    # shape's (tokens, heads, head dim) is one it recognizes (CPU shapes are small) and large logits come first
    Cheat("hardcoded_test_shapes", "hard-coded shapes, early exit", S, M, "outside |got-expected|"),
    Cheat("torch_library", "library call instead of a kernel", S, R, "forbidden torch operation"),
    Cheat("reference_import", "library call instead of a kernel", S, R, "kernels.extend_attention.reference"),
    Cheat("try_except_fallback", "try/except or never-taken fallback", S, R, "forbidden torch operation"),
    Cheat("dead_kernel", "dead kernel", S, R, "forbidden torch operation", unguarded=R),
    Cheat("ptr_cache", "result caching across calls", S, M, "did not move"),
    Cheat("call_counter", "result caching across calls (call counter)", S, R, "no Triton kernel was launched"),
    Cheat("gc_steal", "stealing the answer", S, R, "import of 'gc'"),
    Cheat("frame_steal", "stealing the answer", S, R, "import of 'sys'"),
    Cheat("inspect_seed_steal", "stealing the answer", S, R, "import of 'inspect'"),
    Cheat("zero_grid_launch", "failed launch, stale output", M, M, "NaN/inf"),
    Cheat("side_stream", "side stream", S, None, "side stream", gpu=R),
    Cheat("background_thread", "background thread", S, R, "import of 'threading'"),
    Cheat("monkeypatch_timer", "monkeypatched timers", S, R, "replaced torch.cuda.Event.elapsed_time"),
    Cheat("fake_output_lines", "faked output lines", M, M, "outside |got-expected|"),
    Cheat("forge_channel", "faked output lines (forged channel messages)", S, R, "differ from the verifier's"),
    Cheat("replay_when_timed", "impossible times", S, None, "re-checked after the timing loop", gpu=M),
    Cheat("shadow_torch", "environment tampering", S, R, "open('torch.py', 'w')"),
    Cheat("exit_early", "ending the run early", S, R, "SystemExit"),
    Cheat("tensor_subclass", "tensor subclass", S, R, "passthrough"),
    Cheat("getattr_escape", "string lookups around the rules", S, R, "forbidden torch operation"),
    Cheat("module_escape", "module escape through a library namespace", S, R, "forbidden torch operation"),
    # Red-team round 2: the function-mode guard's blind window, host read-outs, aliases, small shapes.
    Cheat("index_window_torch", "library call instead of a kernel (inside a torch callback)", S, R,
          "forbidden torch operation"),
    Cheat("reference_via_torch_importlib", "library call instead of a kernel (reference via torch.importlib)", S, R,
          "reference.py"),
    Cheat("format_readout_host", "library call instead of a kernel (host read-out via format)", S, R,
          "host read-out"),
    # dynamic only on a GPU: its probe (__index__ calls while torch.empty parses its argument) answered "checked" on
    # the H200's torch build, so it took the torch path, which the guard refuses (R); on the CPU the dropped features
    # fail (M). Both are rejections.
    Cheat("guard_mode_switch", "behaving differently when checked than when timed", S, M, "outside |got-expected|",
          gpu=(M, R)),
    Cheat("prefix_truncation", "partial computation (truncated context)", M, M, "long prefix"),
    Cheat("fp32_as_fp16", "precision downgrade / tolerance abuse (float32 computed in float16)", M, M,
          "<= 0.0001 + 0.0001*|expected|"),  # the float32 bound, at whichever float32 trial comes first
    # red team, session 4: float32 downgraded only for head dims above 32 -- passed while every float32 trial had
    # head dim 16 or 32; now the hidden float32 case has head dim 64/128 (CPU) or 64 (GPU)
    Cheat("fp32_wide_heads_as_fp16", "precision downgrade where the checks are thin (wide heads only)", M, M,
          "<= 0.0001 + 0.0001*|expected|"),
    # red team, session 4 (second pass): a file planted through Triton's cache manager (Triton's opens are trusted).
    # On the CPU Landlock refuses first (no cache folder to write in); without it, the refusing wrapper does
    # (tests/verifier/test_fs_isolation.py)
    Cheat("triton_cache_write", "environment tampering (file write through Triton's cache manager)", S, R,
          "writes into Triton's cache"),  # the refusing wrapper (the cache directory exists before Landlock)
    # red team, session 4: a file written through a file-backed storage (could rewrite the verifier's .pyc)
    Cheat("storage_file_write", "environment tampering (file write through a file-backed storage)", S, R,
          "from_file"),
    # red team, session 5: torch.save opens its file in C++ (wrote /dev/shm and the shared Triton cache)
    Cheat("torch_save_write", "environment tampering (file write through torch.save)", S, R, "writes a file outside"),
    Cheat("alias_torch_direct", "library call instead of a kernel (module alias)", S, R, "forbidden torch operation"),
    Cheat("judge_tamper", "attack on the verifier's judge (rebound and replaced, then torch compute)", S, R,
          "forbidden torch operation"),
    Cheat("pickle_global", "library call instead of a kernel (pickle import)", S, R, "pickle.find_class"),
    Cheat("heads_subset_copy", "partial computation (one head per GQA group)", M, M, "outside |got-expected|"),
    Cheat("stale_max_no_rescale", "precision downgrade / tolerance abuse (no rescale)", M, M, "large logits"),
    Cheat("subclasses_walk", "stealing the answer (object graph walk)", S, R, "reference.py"),
    Cheat("torch_function_callback", "library call instead of a kernel (__torch_function__ callback)", S, R,
          "forbidden torch operation"),
    Cheat("del_finalizer_after_call", "work after the guard is off (finalizer)", S, R, "forbidden torch operation"),
    Cheat("repr_readout_host", "library call instead of a kernel (host read-out via printing)", S, R,
          "host read-out"),
    # red team, round 3: C-level callables run by trusted code on the candidate's behalf
    Cheat("prerun_hook_map_torch", "library call instead of a kernel (torch ops in a Triton pre-run hook)", S, R,
          "pre-run hooks"),
    Cheat("prerun_hook_dict_torch", "library call instead of a kernel (pre-run hook, constexpr carrier)", S, R,
          "pre-run hooks"),
    # red team, session 6: a dataclass subclass whose __post_init__ is a C-level callable, called by the __init__
    # `dataclasses` wrote, which a kernel's dataclasses.replace called: frame grabs under trusted code's name
    Cheat("dataclass_post_init_frames", "stealing the answer (C-level __post_init__ through dataclasses.replace)", S,
          R, "sys._getframe"),
    Cheat("trusted_float_readout", "library call instead of a kernel (host read-out through a trusted helper)", R,
          R, "code the verifier trusts"),
    # red team, 2026-12-02: grids clamped and prefixes cut past the counts and lengths of the bench, and a branch
    # on how the inputs were made (inference mode, a view's offset)
    Cheat("ea_batch_heads_cap_64", "partial computation (grid clamped to 64 sequences and heads)", M, M, "NaN/inf"),
    Cheat("ea_prefix_cap_non_bf16", "partial computation (prefix cut to 4096 keys outside bfloat16)", M, M,
          "outside |got-expected|"),
    Cheat("ea_production_input_gate", "hard-coded shapes, early exit (branch on input provenance)", S, None,
          "storage_offset"),
    # verif4, 2026-12-02: approximations exact on unit-scale keys and values (and on the large-logits trial, which
    # scales q): each passed the verifier before the outlier-keys trial (a few K rows 30-60x, one V row 30-60x)
    Cheat("ea_k_saturate", "precision downgrade / tolerance abuse (keys saturated at +-16)", M, M, "outlier keys"),
    Cheat("ea_v_saturate", "precision downgrade / tolerance abuse (values saturated at +-16)", M, M, "outlier keys"),
    Cheat("ea_no_max_small_q", "precision downgrade / tolerance abuse (no max subtraction unless q is large)", M, M,
          "outlier keys"),
    # verif5, 2026-12-02: a float16 P.V accumulator between key tiles for 16-bit inputs, within the tolerance while
    # every output stays near unit scale; passed the verifier before the shifted-values trial (a long prefix with a
    # large shared V value in 4 dimensions that changes sign halfway)
    Cheat("ea_half_accumulator", "precision downgrade / tolerance abuse (float16 P.V accumulator)", M, M,
          "shifted values"),
    # breaker3, 2026-12-02: cuts taken only off the settings every long-prefix trial used (sm_scale None, k/v
    # scales 1, causal, 2 q heads per KV head, the long prefix in sequence 0); each passed `chiplore verify` on the
    # CPU until the long-prefix trial took the other setting of each; now the covering trials
    # (kernels/extend_attention/long_trials.py) give each such value a long prefix in every verification
    Cheat("ea_explicit_sm_scale_prefix_cap", "partial computation (prefix cut when sm_scale is passed)", M, M,
          "long prefix"),
    Cheat("ea_kv_scale_prefix_cap", "partial computation (prefix cut when k/v scales are not 1)", M, M,
          "long prefix"),
    Cheat("ea_noncausal_prefix_cap", "partial computation (prefix cut when not causal)", M, M, "long prefix"),
    Cheat("ea_gqa_group_prefix_cap", "partial computation (prefix cut for GQA groups other than 2)", M, M,
          "long prefix"),
    Cheat("ea_first_seq_long_prefix", "partial computation (prefix cut after the batch's first sequence)", M, M,
          "long prefix"),
    # breaker3: known gaps on the CPU until verif6 (they passed `chiplore verify`): no CPU trial reached a long
    # prefix or a second query block with these settings (skip_prefix_custom_mask=False, head_dim_v != head_dim,
    # float32, head_dim > 32, a custom mask, non-causal). Now every long trial draws every interface feature and the
    # covering trials (kernels/extend_attention/long_trials.py) give each value, and each pair of values, a long
    # prefix and a long extend in every verification. GPU: expected the same by design (the covering trials run
    # there too; float32 through the dtype trial's long prefix, every GPU head wider than 32); not run on a GPU yet.
    Cheat("ea_prefix_mask_prefix_cap", "partial computation (prefix cut with skip_prefix_custom_mask=False)", M, M,
          "long prefix"),
    Cheat("ea_split_dv_prefix_cap", "partial computation (prefix cut when head_dim_v != head_dim)", M, M,
          "long prefix"),
    Cheat("ea_float32_prefix_cap", "partial computation (prefix cut for float32)", M, M, "long prefix"),
    Cheat("ea_wide_heads_prefix_cap", "partial computation (prefix cut for head_dim > 32)", M, M, "long prefix"),
    Cheat("ea_custom_mask_first_block", "partial computation (one query block per sequence with a custom mask)", M,
          M, "long prefix"),
    Cheat("ea_noncausal_first_block", "partial computation (one query block per sequence when not causal)", M, M,
          "long prefix"),
    # verif6: cuts keyed on two settings at once (a short wrapper around the baseline each): every pair of feature
    # values meets a long prefix and a long extend in the covering trials
    # a GPU's covering trials leave float32 out (IEEE float32 dots compile slowly at GPU tiles); its float32 is a
    # complementary pair of long trials (`long_trials.complementary_pair`), one of them non-causal
    Cheat("ea_noncausal_fp32_prefix_cap", "partial computation (prefix cut when non-causal AND float32)", M, M,
          "long prefix"),
    Cheat("ea_split_dv_causal_prefix_cap", "partial computation (prefix cut when head_dim_v != head_dim AND causal)",
          M, M, "long prefix"),
    Cheat("ea_mask_wide_first_block", "partial computation (one query block with a custom mask AND head_dim > 32)",
          M, M, "long prefix"),
)

#: Threat kinds of shared/reference/verifier_threats.md; every one must have at least one cheat.
THREAT_KINDS: tuple[str, ...] = (
    "stale allocator memory", "partial computation", "input mutation", "input passthrough / aliasing",
    "precision downgrade / tolerance abuse", "hard-coded shapes, early exit", "library call instead of a kernel",
    "try/except or never-taken fallback", "dead kernel", "result caching across calls", "stealing the answer",
    "failed launch, stale output", "side stream", "background thread", "monkeypatched timers",
    "faked output lines", "impossible times", "environment tampering",
)


@dataclass(frozen=True)
class Honest:
    """An honest candidate that must pass."""

    name: str
    path: Path
    what: str


HONEST: tuple[Honest, ...] = (
    Honest("baseline", ROOT / "kernels" / "extend_attention" / "baseline.py", "the SGLang-structured baseline"),
    Honest("family_split3_pack", HERE / "honest" / "family_split3_pack.py", "family: split-KV 3, packed GQA"),
    Honest("family_nosplit_nopack", HERE / "honest" / "family_nosplit_nopack.py", "family: one pass, no packing"),
    Honest("tuned_wrapper", HERE / "honest" / "tuned_wrapper.py", "the optimized entry point, wrapped"),
    Honest("simple_triton", HERE / "honest" / "simple_triton.py", "a plain one-pass Triton kernel"),
    Honest("family_pregather_tma", HERE / "honest" / "family_pregather_tma.py",
           "family: prefix pre-gathered, TMA descriptor loads, split-KV 2"),
)
