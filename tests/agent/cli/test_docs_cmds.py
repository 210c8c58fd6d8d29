"""`chiplore onboard / ask / chips`: human and --json output, exit codes, one-line errors, unchanged store."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.cli.app import main
from knowledge.store import KnowledgeStore
from tests.ingest.pdfgen import encrypt_pdf, make_pdf

REPO = Path(__file__).resolve().parents[3]


def run_cli(capsys, monkeypatch, *args: str) -> tuple[int, str, str]:
    """Run `chiplore ARGS` in this process (as the console script does); returns (exit code, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", ["chiplore", *map(str, args)])
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out, err = capsys.readouterr()
    return code, out, err


def records():
    return sorted((r.id, r.text) for r in KnowledgeStore.open().records())


@pytest.mark.slow
def test_onboard_ask_chips(chiplore_home, embedder, docs, capsys, monkeypatch):
    code, out, err = run_cli(capsys, monkeypatch, "onboard", "Z9", docs)
    assert code == 0
    assert "onboarded z9: 5 files (5 stored, 0 unchanged), 3 pages," in out and "1 skipped, 0 failed in" in out
    assert "skipped: diagram.svg (unsupported file type '.svg')" in err

    code, out, _ = run_cli(capsys, monkeypatch, "chips", "--json")
    chips = json.loads(out)
    assert code == 0 and chips["schema"] == 1
    assert [(c["chip"], c["documents"], c["findings"]) for c in chips["chips"]] == [("z9", 5, 0)]

    code, out, _ = run_cli(capsys, monkeypatch, "ask", "How many vector cores does the Z9 have?", "--chip", "z9",
                           "-k", "2", "--json")
    answer = json.loads(out)
    assert code == 0 and answer["k"] == 2 and answer["chip"] == "z9" and len(answer["hits"]) == 2
    top = answer["hits"][0]
    assert set(top) == {"rank", "id", "collection", "chip", "source", "page", "section", "kind", "score",
                        "dense_rank", "keyword_rank", "citation", "text"}
    assert top["rank"] == 1 and "96 vector cores" in top["text"] and top["citation"].startswith("overview.md")

    assert answer["patterns"] == []  # a bare fact: no optimization pattern is close to it

    code, out, _ = run_cli(capsys, monkeypatch, "ask", "memory bandwidth of the Z9", "-k", "3")
    assert code == 0 and "[1]" in out and "brief.pdf p.2" in out

    code, out, _ = run_cli(capsys, monkeypatch, "ask", "how do I hide memory latency in a kernel?", "-k", "1")
    assert code == 0 and "patterns closest to the question" in out and "software_pipelining" in out
    code, out, _ = run_cli(capsys, monkeypatch, "ask", "how do I hide memory latency in a kernel?", "-k", "1",
                           "--json", "--no-patterns")
    assert code == 0 and json.loads(out)["patterns"] == []

    code, out, _ = run_cli(capsys, monkeypatch, "onboard", "z9", docs, "--json")
    again = json.loads(out)
    assert code == 0 and again["counts"]["unchanged"] == 5 and again["counts"]["stored"] == 0
    code, out, _ = run_cli(capsys, monkeypatch, "chips", "--json")
    assert json.loads(out)["chips"] == chips["chips"]


@pytest.mark.slow
def test_ask_several_questions_and_stdin(chiplore_home, embedder, docs, capsys, monkeypatch):
    import io

    run_cli(capsys, monkeypatch, "onboard", "z9", docs, "--json")
    questions = ["How many vector cores does the Z9 have?", "memory bandwidth of the Z9"]
    code, out, _ = run_cli(capsys, monkeypatch, "ask", *questions, "--chip", "z9", "-k", "2", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["schema"] == 1 and [r["question"] for r in doc["results"]] == questions
    single = [json.loads(run_cli(capsys, monkeypatch, "ask", q, "--chip", "z9", "-k", "2", "--json")[1])
              for q in questions]
    assert [r["hits"] for r in doc["results"]] == [s["hits"] for s in single]  # the same as one call per question
    monkeypatch.setattr(sys, "stdin", io.StringIO(questions[0] + "\n\n" + questions[1] + "\n"))
    code, out, _ = run_cli(capsys, monkeypatch, "ask", "-", "--chip", "z9", "-k", "1")
    assert code == 0 and "Q1: How many vector cores" in out and "Q2: memory bandwidth of the Z9" in out
    assert "brief.pdf p.2" in out.split("Q2:")[1]
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n"))
    code, out, err = run_cli(capsys, monkeypatch, "ask", "-")
    assert code == 1 and err.strip().startswith("error: ask: no question given")


def test_ask_unknown_chip(chiplore_home, embedder, docs, capsys, monkeypatch):
    run_cli(capsys, monkeypatch, "onboard", "z9", docs, "--json")
    before = records()
    code, out, err = run_cli(capsys, monkeypatch, "ask", "cores?", "--chip", "h999")
    assert code == 1 and out == ""
    assert err.strip() == "error: unknown chip 'h999'; known chips: z9"
    assert records() == before


BAD_INPUTS = {"missing": "nope.pdf", "corrupt": "c.pdf", "encrypted": "e.pdf", "empty": "e.md", "binary": "b.md",
              "random": "x.md", "png": "y.png", "bin": "z.bin"}


@pytest.mark.parametrize("kind", list(BAD_INPUTS))
def test_bad_input_exits_1_with_one_line_and_store_unchanged(chiplore_home, embedder, docs, tmp_path, capsys,
                                                            monkeypatch, kind):
    """The whole output is one error line on stderr naming the file and the problem: no progress bar (stderr is
    not a terminal here), no summary of nothing stored."""
    run_cli(capsys, monkeypatch, "onboard", "z9", docs, "--json")
    before = records()
    path = tmp_path / BAD_INPUTS[kind]
    if kind == "corrupt":
        path.write_bytes(b"%PDF-1.5\n" + os.urandom(300))
    elif kind == "encrypted":
        encrypt_pdf(make_pdf(tmp_path / "plain.pdf", [["secret"]]), path)
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "binary":
        path.write_bytes(bytes(range(256)) * 8)
    elif kind == "png":
        path.write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(3000))
    elif kind in ("random", "bin"):
        path.write_bytes(os.urandom(4000))
    code, out, err = run_cli(capsys, monkeypatch, "onboard", "z9", path)
    assert code == 1 and out == ""
    line = err.splitlines()
    assert len(line) == 1 and line[0].startswith("error:") and str(path) in line[0], err
    expected = {"missing": "no such file or directory", "corrupt": "corrupt PDF",
                "encrypted": "PDF is encrypted (a password is required)", "empty": "file is empty",
                "binary": "binary content, not a Markdown text file",
                "random": "binary content, not a Markdown text file",
                "png": f"{path.name}: unsupported file type '.png'",
                "bin": f"{path.name}: unsupported file type '.bin'"}
    assert expected[kind] in line[0]
    assert records() == before


def test_a_document_turned_binary_keeps_its_stored_chunks(chiplore_home, embedder, docs, capsys, monkeypatch):
    """A folder where one stored document was overwritten with random bytes: that file is one error line, the
    store keeps its previous chunks, the other files are onboarded (unchanged) and the exit code says partial."""
    run_cli(capsys, monkeypatch, "onboard", "z9", docs, "--json")
    before = records()
    (docs / "overview.md").write_bytes(os.urandom(4000))
    code, out, err = run_cli(capsys, monkeypatch, "onboard", "z9", docs)
    assert code == 2
    assert err.splitlines() == [f"error: {docs / 'overview.md'}: binary content, not a Markdown text file",
                                "skipped: diagram.svg (unsupported file type '.svg')"]
    assert out.startswith("onboarded z9: 4 files (0 stored, 4 unchanged)") and "1 skipped, 1 failed in" in out
    assert records() == before


@pytest.mark.slow
def test_cold_cli_process(chiplore_home):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-m", "agent.cli", "chips", "--json"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["chips"] == []
    proc = subprocess.run([sys.executable, "-m", "agent.cli", "ask", "x", "--chip", "z9"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.strip() == ("error: unknown chip 'z9'; known chips: none yet "
                                   "(run `chiplore onboard CHIP PATH...`)")


def test_huge_junk_text_is_refused_before_anything_is_stored(chiplore_home, embedder, docs, tmp_path, capsys,
                                                             monkeypatch):
    run_cli(capsys, monkeypatch, "onboard", "z9", docs, "--json")
    before = records()
    huge = tmp_path / "huge.txt"
    huge.write_bytes(b"x" * 30_000_000)
    nowords = tmp_path / "nowords.txt"
    nowords.write_bytes(b"x" * 3_000_000)
    for path, problem in ((huge, "30.0 MB is above the 20 MB limit for plain text documents; split it into "
                                 "smaller files"),
                          (nowords, "does not look like a plain-text document: only 0% of its characters form "
                                    "words (at least 3% expected)")):
        code, out, err = run_cli(capsys, monkeypatch, "onboard", "hugechip", path)
        assert code == 1 and out == ""
        assert err.splitlines() == [f"error: {path}: {problem}"]
        assert records() == before
    code, out, _ = run_cli(capsys, monkeypatch, "chips", "--json")
    assert [c["chip"] for c in json.loads(out)["chips"]] == ["z9"]


@pytest.mark.slow  # ~11 s on a busy 2-core machine
def test_truncated_pdf_prints_only_the_error_line(chiplore_home, tmp_path):
    """pypdf logs 'EOF marker not found' on stderr for a truncated file; only chiplore's own line may appear."""
    whole = make_pdf(tmp_path / "whole.pdf", [["TITLE", "The Z9 has 96 vector cores.", "1"], ["TITLE", "More.", "2"]])
    truncated = tmp_path / "truncated.pdf"
    truncated.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    env = dict(os.environ, PYTHONPATH=str(REPO))
    cmd = [sys.executable, "-m", "agent.cli", "onboard", "testchip", str(truncated)]
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and proc.stdout == "", proc.stderr
    assert lines[0].startswith(f"error: {truncated}: corrupt PDF ("), proc.stderr
    proc = subprocess.run(cmd + ["--json"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and proc.stderr == ""
    assert json.loads(proc.stdout)["files"][0]["error"] == lines[0].removeprefix("error: ")


def test_partial_failure_exits_2_and_stores_the_good_files(chiplore_home, embedder, tmp_path, capsys, monkeypatch):
    empty = tmp_path / "empty.md"
    empty.write_bytes(b"")
    good = tmp_path / "good.rst"
    good.write_text("Zephyr Z9\n=========\n\nThe Zephyr Z9 has 96 vector cores and 48 GB of HBM3.\n")
    code, out, err = run_cli(capsys, monkeypatch, "onboard", "testchip", empty, good)
    assert code == 2
    assert f"error: {empty}: file is empty" in err.splitlines()
    assert "onboarded testchip: 1 files (1 stored, 0 unchanged)" in out and "0 skipped, 1 failed in" in out
    assert sorted({r.metadata["source"] for r in KnowledgeStore.open().records(chip="testchip")}) == ["good.rst"]
    code, out, _ = run_cli(capsys, monkeypatch, "onboard", "testchip", empty, good, "--json")
    report = json.loads(out)
    assert code == 2 and report["ok"] is True
    assert (report["counts"]["failed"], report["counts"]["unchanged"]) == (1, 1)
    code, _, _ = run_cli(capsys, monkeypatch, "onboard", "testchip", good)
    assert code == 0


def _store_files(store_dir: Path) -> dict[str, bytes]:
    """Every file of the store but chiplore's lock files (which name their last holder)."""
    return {p.relative_to(store_dir).as_posix(): p.read_bytes() for p in sorted(store_dir.rglob("*"))
            if p.is_file() and p.suffix != ".lock"}


def _cold(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "agent.cli", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)


FRESH = ("(damaged store); chiplore will not write over it; keep it for inspection, point CHIPLORE_HOME at a fresh "
         "folder and onboard the documents again")


@pytest.mark.parametrize("damage", ["sqlite-empty", pytest.param("sqlite-missing", marks=pytest.mark.slow),
                                    pytest.param("index-empty", marks=pytest.mark.slow)])  # ~7 s each
def test_damaged_store_is_reported_and_never_rebuilt_over(chiplore_home, embedder, docs, capsys, monkeypatch, damage):
    code, _, _ = run_cli(capsys, monkeypatch, "onboard", "z9", docs, "--json")
    assert code == 0
    store_dir = chiplore_home / "store"
    db = store_dir / "chroma.sqlite3"
    index = next(store_dir.glob("*/data_level0.bin"))
    if damage == "sqlite-empty":
        db.write_bytes(b"")
        line = f"error: knowledge store {store_dir}: {db} is empty {FRESH}"
    elif damage == "sqlite-missing":
        db.unlink()
        line = (f"error: knowledge store {store_dir}: {db} is missing but vector indexes remain in {index.parent} "
                f"{FRESH}")
    else:
        index.write_bytes(b"")
        line = (f"error: knowledge store {store_dir}: vector index file {index} is empty (damaged store); chiplore "
                "will not write over it; run `chiplore store repair` (or keep it for inspection and point "
                "CHIPLORE_HOME at a fresh folder)")
    damaged = _store_files(store_dir)
    commands = {"sqlite-empty": [["chips"], ["onboard", "z9", str(docs)]], "sqlite-missing": [["chips"]],
                "index-empty": [["ask", "How many vector cores does the Z9 have?", "--chip", "z9"]]}[damage]
    for args in commands:
        proc = _cold(*args)
        assert (proc.returncode, proc.stdout, proc.stderr.strip()) == (1, "", line), args
    assert _store_files(store_dir) == damaged


def test_ask_k_is_bounded(chiplore_home, embedder, docs, capsys, monkeypatch):
    run_cli(capsys, monkeypatch, "onboard", "z9", docs, "--json")
    for k in ("100000", "0", "101"):
        code, out, err = run_cli(capsys, monkeypatch, "ask", "vector cores", "-k", k)
        assert (code, out, err) == (1, "", f"error: ask: -k {k}: must be between 1 and 100 passages\n")
    code, out, _ = run_cli(capsys, monkeypatch, "ask", "vector cores", "-k", "100", "--json")
    hits = json.loads(out)["hits"]
    assert code == 0 and len(hits) == len({h["id"] for h in hits}) == records_count()


def records_count() -> int:
    return len(KnowledgeStore.open().records())


@pytest.mark.slow  # ~8 s on a busy 2-core machine
@pytest.mark.parametrize("model, line", [
    ("/nonexistent", "error: embedding model '/nonexistent' (CHIPLORE_EMBED_MODEL): no such folder; point it at a "
                     "folder saved by sentence-transformers, or unset CHIPLORE_EMBED_MODEL to use the packaged "
                     "all-MiniLM-L6-v2\n"),
    ("nosuch-model", "error: embedding model 'nosuch-model': cannot load model name (not in the local Hugging Face "
                     "cache; nothing is downloaded): OSError: "),
])
def test_ask_on_an_empty_store_reports_a_missing_embedding_model(chiplore_home, capsys, monkeypatch, model, line):
    monkeypatch.setenv("CHIPLORE_EMBED_MODEL", model)
    code, out, err = run_cli(capsys, monkeypatch, "ask", "what is the wavefront size?")
    assert (code, out) == (1, "")
    assert err.startswith(line) and err.count("\n") == 1


@pytest.mark.slow  # ~8 s on a busy 2-core machine
def test_ask_for_a_chip_with_a_profile_but_no_documents_says_what_it_needs(chiplore_home, embedder, docs, capsys,
                                                                          monkeypatch):
    run_cli(capsys, monkeypatch, "onboard", "z9", docs, "--json")
    code, out, err = run_cli(capsys, monkeypatch, "ask", "wavefront size?", "--chip", "MI300X")
    assert (code, out) == (1, "")
    assert err == ("error: no documents onboarded for chip 'mi300x' (it has a packaged profile); onboard its "
                   "documents with `chiplore onboard mi300x PATH...` (chips in the knowledge store: z9)\n")


def test_ask_on_an_empty_store_says_to_onboard_first(chiplore_home, embedder, capsys, monkeypatch):
    for extra in ((), ("--json",)):
        code, out, err = run_cli(capsys, monkeypatch, "ask", "what is the wavefront size?", *extra)
        assert (code, out) == (1, "")
        assert err.startswith("error: ask: knowledge store ") and err.endswith(
            " is empty; onboard a chip's documents first with `chiplore onboard CHIP PATH...`\n")
