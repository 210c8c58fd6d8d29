"""Hostile and huge inputs: links out of the folder, hidden and special files, files over their limits, ligatures,
and text that made profile extraction superlinear."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ingest.files import collect
from ingest.onboard import onboard
from tests.ingest.pdfgen import make_pdf

REPO = Path(__file__).resolve().parents[2]


def _cli(home: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO), CHIPLORE_HOME=str(home))
    env.pop("CHIPLORE_CHROMA_URL", None)
    return subprocess.run([sys.executable, "-m", "agent.cli", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_links_out_of_the_folder_hidden_and_special_files_are_listed_not_read(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("The root password is hunter2.")
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "good.md").write_text("# Z9\n\nThe Z9 has 96 vector cores.\n")
    (docs / "passwd.txt").symlink_to(outside / "secret.txt")
    (docs / "sub" / "again.md").symlink_to(docs / "good.md")  # a link that stays inside is read
    (docs / "elsewhere").symlink_to(outside, target_is_directory=True)
    (docs / "dangling.md").symlink_to(tmp_path / "nothing.md")
    (docs / "..evil..md").write_text("# hidden\n")
    (docs / ".git").mkdir()
    (docs / ".git" / "config").write_text("[core]\n")
    os.mkfifo(docs / "pipe.txt")
    listed = {item.source: item.reason for item in collect([docs])}
    assert listed == {
        "..evil..md": "hidden file (name starts with '.'), not read",
        ".git/": "hidden folder (name starts with '.'), not read",
        "elsewhere/": "symbolic link to a folder, not followed",
        "dangling.md": "broken symbolic link",
        "good.md": "",
        "passwd.txt": f"symbolic link to {outside / 'secret.txt'}, outside {docs}; not followed",
        "pipe.txt": "not a regular file",
        "sub/again.md": "",
    }


@pytest.mark.slow  # ~6 s on the 2-core machine
def test_onboard_lists_every_skipped_file_and_never_stores_a_linked_secret(chiplore_home, embedder, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("The root password is hunter2.")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("# Z9\n\nThe Z9 has 96 vector cores.\n")
    (docs / "passwd.txt").symlink_to(outside / "secret.txt")
    (docs / "..evil..md").write_text("# hidden\n")
    report = onboard("z9", [docs], progress=False)
    assert [f.source for f in report.documents] == ["good.md"]
    assert {(f.source, f.error.split(" ")[0]) for f in report.skipped} == {("..evil..md", "hidden"),
                                                                            ("passwd.txt", "symbolic")}
    proc = _cli(chiplore_home, "ask", "root password", "-k", "5", "--json")
    assert proc.returncode == 0, proc.stderr
    assert all("hunter2" not in h["text"] and h["source"] == "good.md" for h in json.loads(proc.stdout)["hits"])


def test_a_huge_file_is_refused_before_it_is_read(tmp_path):
    """A 1.5 GB (sparse) text file: refused from its size alone; the whole `chiplore onboard` process stays under
    100 MB (peak resident memory, measured by a parent that runs nothing else)."""
    huge = tmp_path / "docs" / "huge.txt"
    huge.parent.mkdir()
    with open(huge, "wb") as fh:
        fh.truncate(1_500_000_000)
    measure = ("import resource, subprocess, sys\n"
               "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
               "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
               "sys.stderr.write(p.stderr)\n")
    env = dict(os.environ, PYTHONPATH=str(REPO), CHIPLORE_HOME=str(tmp_path / "home"))
    proc = subprocess.run([sys.executable, "-c", measure, sys.executable, "-m", "agent.cli", "onboard", "h1",
                           str(huge)], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    code, peak_kb = map(int, proc.stdout.split())
    assert peak_kb * (1 if sys.platform != "darwin" else 1 / 1024) < 100 * 1024, peak_kb
    assert code == 1 and proc.stderr.strip() == (f"error: {huge}: 1500.0 MB is above the 20 MB limit for plain text "
                                                 "documents; split it into smaller files")


def test_a_pdf_over_its_limits_is_refused(tmp_path, monkeypatch):
    from core.errors import BadInputError
    from ingest.loaders import common, load_document

    pdf = make_pdf(tmp_path / "three.pdf", [["page one"], ["page two"], ["page three"]])
    monkeypatch.setattr(common, "MAX_PDF_PAGES", 2)
    with pytest.raises(BadInputError, match=r"three\.pdf: 3 pages is above the 2-page limit for PDF files"):
        load_document(pdf)
    big = tmp_path / "big.pdf"
    with open(big, "wb") as fh:
        fh.truncate(common.MAX_PDF_FILE_MB * 10**6 + 1)
    [item] = collect([big])
    assert item.failed and item.reason == f"{big}: 200.0 MB is above the 200 MB limit for PDF files; split it into " \
                                          "smaller files"


def _one_line_html(path: Path, megabytes: float) -> Path:
    """A one-line HTML page of `megabytes` MB of varied prose: sentences about several products, no line breaks."""
    rng = random.Random(7)
    words = ("the accelerator memory bandwidth cache shared local register wavefront warp tensor matrix vector unit "
             "core cluster scheduler issue latency throughput pipeline buffer queue instruction kernel").split()
    parts, size = ["<html><head><title>Big page</title></head><body>"], 0
    while size < megabytes * 1e6:
        sentence = " ".join(rng.choice(words) for _ in range(rng.randint(8, 20)))
        if rng.random() < 0.5:
            sentence += f", and the ZX{rng.randint(10, 99)} has {rng.randint(2, 512)} compute units"
        part = f"<p>{sentence.capitalize()}.</p>"
        parts.append(part)
        size += len(part)
    path.write_text("".join(parts) + "</body></html>")
    return path


@pytest.mark.slow
def test_a_10_mb_one_line_html_is_refused_within_two_minutes(tmp_path):
    (tmp_path / "docs").mkdir()
    page = _one_line_html(tmp_path / "docs" / "page.html", 10)
    started = time.monotonic()
    proc = _cli(tmp_path / "home", "onboard", "zx50", str(page), "--json", timeout=300)
    assert time.monotonic() - started < 120
    assert proc.returncode == 1, proc.stderr
    [report] = json.loads(proc.stdout)["files"]
    assert report["status"] == "failed" and "\n" not in report["error"]
    assert report["error"].startswith(f"{page}: ") and "chunks is above the limit of 20,000 chunks per file" in \
        report["error"]


def _comma_text(kilobytes: float) -> str:
    """Text without a sentence end: clauses about products, compute units and LDS, joined by commas."""
    rng = random.Random(3)
    words = "the memory bandwidth cache shared local register wavefront tensor vector unit core cluster".split()
    clauses, size = [], 0
    while size < kilobytes * 1000:
        clause = " ".join(rng.choice(words) for _ in range(rng.randint(3, 9)))
        if rng.random() < 0.3:
            clause += f" on the zx{rng.randint(10, 60)} has {rng.randint(2, 512)} compute units"
        elif rng.random() < 0.3:
            clause += f" holds {rng.randint(16, 256)} kb of lds per cu"
        clauses.append(clause)
        size += len(clause) + 2
    return ", ".join(clauses)


@pytest.mark.slow  # ~20 s of CPU time on the 2-core machine
def test_profile_extraction_is_linear_in_text_without_sentence_ends():
    """200 KB of one endless comma-joined "sentence" takes seconds of CPU time (about 8 s per 100 KB, linear),
    not the minutes of a rule that rescans the whole sentence per clause. Measured in this process's CPU time, so
    that other processes on the machine do not count."""
    from ingest.chunker import chunk_sections
    from ingest.profile_extract import extract_profile_with_report
    from knowledge.types import Section

    chunks = chunk_sections([Section(text=_comma_text(200), source="page.html")], "zx50")
    started = time.process_time()
    _, report = extract_profile_with_report("zx50", chunks)
    assert time.process_time() - started < 45
    assert "num_compute_units" in report.found


@pytest.mark.slow
def test_profile_extraction_of_10_mb_is_bounded(chiplore_home):
    """10 MB of chunks (35,000 windows): extraction reads at most MAX_PROFILE_TEXT_CHARS characters and says so."""
    from ingest.chunker import chunk_sections
    from ingest.onboard import MAX_PROFILE_TEXT_CHARS, profile_from_chunks
    from knowledge.types import Section

    rng = random.Random(5)
    sections = []
    for doc in range(4):
        text = " ".join(f"The ZX50 block {i} holds {rng.randint(1, 999)} KB." for i in range(62_000))
        sections.append(Section(text=text, source=f"manual{doc}.txt"))
    chunks = [c for s in sections for c in chunk_sections([s], "zx50")]
    assert sum(len(c.text) for c in chunks) > 2 * MAX_PROFILE_TEXT_CHARS
    started = time.monotonic()
    update = profile_from_chunks("zx50", chunks)
    assert time.monotonic() - started < 300
    assert not update.error and "not read for the profile" in update.summary, update.summary


@pytest.mark.slow  # ~5 s on the 2-core machine
def test_ligatures_are_normalized_before_search(chiplore_home, embedder, tmp_path):
    """A PDF typeset with ligature glyphs (pypdf returns U+FB01 "ﬁ", U+FB02 "ﬂ"): `ask "configurable flush"` finds
    its passage first, ahead of plain-text passages that each hold only one of the two words."""
    docs = tmp_path / "docs"
    docs.mkdir()
    make_pdf(docs / "guide.pdf", [["L2 CACHE", "The L2 is con\ufb01gurable per partition, and a \ufb02ush writes "
                                               "its dirty lines back e\ufb03ciently."]])
    (docs / "boot.md").write_text("# Boot\n\nThe clock is configurable at boot time.\n")
    (docs / "queue.md").write_text("# Queue\n\nA flush of the command queue waits for the copy engines.\n")
    report = onboard("z9", [docs], progress=False)
    assert len(report.documents) == 3
    proc = _cli(chiplore_home, "ask", "configurable flush", "--chip", "z9", "-k", "3", "--json")
    assert proc.returncode == 0, proc.stderr
    top = json.loads(proc.stdout)["hits"][0]
    assert top["source"] == "guide.pdf" and "configurable per partition, and a flush" in top["text"]
    assert top["keyword_rank"] == 1
