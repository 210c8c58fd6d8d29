"""`chiplore verify` and `chiplore optimize` with a hand-edited profile whose limit no kernel runs with
(``warp_size: 0``, ``num_compute_units: 0.5``): one error line naming the chip, field and value, exit 1, no
traceback and no run folder."""

from __future__ import annotations

import re

import pytest

from tests.agent.cli.cli_helpers import run_cli


def _hand_edited(home, field: str, value: str) -> None:
    """The user's profile zx40: h200's, saved by `chiplore profile set`, with `field`'s value edited in the YAML."""
    from hardware_profiles import load_profile, save_profile

    data = load_profile("h200").model_dump()
    data["chip"] = "zx40"
    path = save_profile(type(load_profile("h200")).model_validate(data))
    text = path.read_text(encoding="utf-8")
    edited, n = re.subn(rf"(?m)^({field}:\n  value: )\S+$", rf"\g<1>{value}", text)
    assert n == 1 and path.parent == home / "profiles"
    path.write_text(edited, encoding="utf-8")


@pytest.mark.parametrize(("field", "value", "meaning"), [
    ("warp_size", "0", "warp width (threads)"),
    ("num_compute_units", "0.5", "compute units (count)"),
])
@pytest.mark.parametrize("command", [
    ["verify", "extend_attention", "kernels/extend_attention/baseline.py", "--chip", "zx40"],
    ["optimize", "extend_attention", "--chip", "zx40", "--no-retrieval", "--max-evals", "1"],
])
def test_a_profile_limit_no_kernel_runs_with_is_one_line(chiplore_home, capsys, monkeypatch, field, value, meaning,
                                                        command):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    _hand_edited(chiplore_home, field, value)
    code, out, err = run_cli(capsys, monkeypatch, *command)
    assert code == 1 and "Traceback" not in err, err
    assert err.strip() == (
        f"error: chip 'zx40': {field} = {value} in its profile is not a positive whole number ({meaning}); "
        f"correct it with `chiplore profile set zx40 {field} VALUE --source \"DOCUMENT, page or section\"`")
    assert sorted(p.name for p in chiplore_home.iterdir()) == ["profiles"]  # no run folder, no store
