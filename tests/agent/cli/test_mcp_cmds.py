"""`chiplore mcp` and `optimize` refuse bad --verify-options with one line, before serving or starting a run."""

import pytest

from tests.agent.cli.cli_helpers import run_cli


@pytest.mark.parametrize("value, message", [
    ('{"random_cases": 0}', "error: --verify-options: random_cases: Input should be greater than or equal to 1"),
    ('{"bogus": 1}', "error: --verify-options: bogus: Extra inputs are not permitted"),
    ("[1]", "error: --verify-options: expected a JSON object"),
    ("{nope", "error: --verify-options: not JSON"),
])
@pytest.mark.parametrize("command", [["mcp"], ["optimize", "extend_attention", "--chip", "h200"]])
def test_bad_verify_options(capsys, monkeypatch, chiplore_home, command, value, message):
    code, out, err = run_cli(capsys, monkeypatch, *command, "--verify-options", value)
    assert code == 1 and out == "" and err.strip().startswith(message) and len(err.strip().splitlines()) == 1
    assert not (chiplore_home / "runs").exists()
