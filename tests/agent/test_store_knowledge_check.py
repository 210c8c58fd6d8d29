"""`StoreKnowledge.check` before a run, on a real chromadb store: a chip known only from its packaged profile gets
one up-front note naming the onboarding command (and no late warning); an onboarded chip gets none; an unknown
chip fails before any run folder exists, naming how to onboard or detect it."""

import pytest
from typer.testing import CliRunner

import agent.cli.optimize_cmds  # noqa: F401  registers the commands
from agent.adapters import StoreKnowledge, load_chip_profile
from agent.cli.app import app
from agent.demo import NOTES_DIR
from core.errors import BadInputError

NOTE = ("no documents onboarded for m890: retrieval uses patterns ranked on its profile and findings only "
        "(add documents with `chiplore onboard m890 DOCS...`)")


def test_chip_without_documents_gets_one_note_up_front(chiplore_home):
    knowledge = StoreKnowledge(load_chip_profile("m890"))
    assert knowledge.check() == [NOTE]
    assert knowledge.search_documents("shared memory per block", "m890", 3) == []
    assert knowledge.warnings == []  # said once, up front, not again at the end of the run


@pytest.mark.slow
def test_onboarded_chip_gets_no_note(chiplore_home):
    from ingest.onboard import onboard

    onboard("h200", [NOTES_DIR / "h200.md"], progress=False)
    knowledge = StoreKnowledge(load_chip_profile("h200"))
    assert knowledge.check() == []
    hits = knowledge.search_documents("shared memory per block", "h200", 2)
    assert hits and all(h.cite.startswith("h200.md") for h in hits)


def test_unknown_chip_fails_before_a_run_folder(chiplore_home):
    result = CliRunner().invoke(app, ["optimize", "extend_attention", "--chip", "nochip"])
    assert isinstance(result.exception, BadInputError)
    message = str(result.exception)
    assert "unknown chip 'nochip'" in message and "onboard" in message
    assert "chiplore profile detect --as nochip" in message
    assert not (chiplore_home / "runs").exists()


def test_a_chip_with_an_unknown_limit_fails_before_a_run_folder(chiplore_home):
    """m890's profile knows 36 units and 48 KB, not its warp width: no kernel may run on a borrowed number."""
    result = CliRunner().invoke(app, ["optimize", "extend_attention", "--chip", "m890", "--max-evals", "1"])
    assert isinstance(result.exception, BadInputError), result.output
    assert str(result.exception).startswith("chip 'm890': warp_size (warp width (threads)) is unknown")
    assert "chiplore profile probe m890" in str(result.exception)
    assert not (chiplore_home / "runs").exists()


@pytest.mark.slow
def test_optimize_on_a_chip_without_documents(chiplore_home):
    """The real loop (real verifier under the interpreter) on a packaged-profile chip nobody onboarded."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("the CPU path is what this test covers")
    result = CliRunner().invoke(app, ["optimize", "extend_attention", "--chip", "a100", "--max-evals", "1",
                                      "--run-id", "m", "--no-report"])
    assert result.exit_code == 0, (result.output, result.exception)
    text = " ".join(result.output.split())
    note = NOTE.replace("m890", "a100")
    assert note in text and text.index(note) < text.index("run m:")  # before the run starts
    assert "no documents retrieved" not in text and text.count("no documents onboarded") == 1
    assert "1 of 1 candidates passed the verifier" in text
