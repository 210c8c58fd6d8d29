"""Onboarding: walks folders, stores every format, is idempotent, replaces only edited files, and leaves the store
untouched on bad input."""

import pytest

from core.errors import BadInputError
from ingest.onboard import normalize_chip, onboard
from knowledge.store import KnowledgeStore
from tests.ingest.pdfgen import encrypt_pdf, make_pdf


def snapshot():
    store = KnowledgeStore.open()
    return sorted((r.id, r.text, tuple(sorted(r.metadata.items()))) for r in store.records())


@pytest.mark.slow  # ~17 s on 2 cores
def test_onboard_folder_all_formats(chiplore_home, embedder, docs):
    report = onboard("Z9", [docs], progress=False)
    assert report.chip == "z9"
    assert sorted(f.source for f in report.documents) == [
        "brief.pdf", "errata.txt", "overview.md", "sub/notes.html", "sub/specs.rst"]
    assert [(f.source, f.error) for f in report.skipped] == [("diagram.svg", "unsupported file type '.svg'")]
    assert report.pages == 3 and report.ok and not report.failed
    store = KnowledgeStore.open()
    assert report.chunks == store.count()
    pdf = [r for r in store.records(source="brief.pdf")]
    assert sorted(r.metadata["page"] for r in pdf) == [1, 2, 3]
    assert not any("PRODUCT BRIEF" in r.text for r in pdf)
    rows = [r.text for r in store.records(source="sub/specs.rst") if r.metadata["kind"] == "table_row"]
    assert set(rows) == {"Z9 family | Model: Z9 | Cores: 96 | Clock (MHz): 1850",
                         "Z9 family | Model: Z9 Lite | Cores: 64 | Clock (MHz): 1600"}


@pytest.mark.slow
def test_reonboard_is_idempotent_and_edit_replaces_only_that_file(chiplore_home, embedder, docs):
    onboard("z9", [docs], progress=False)
    before = snapshot()
    again = onboard("z9", [docs], progress=False)
    assert {f.status for f in again.documents} == {"unchanged"}
    assert snapshot() == before
    md = docs / "overview.md"
    md.write_text(md.read_text().replace("96 vector cores", "128 vector cores"))
    report = onboard("z9", [docs], progress=False)
    status = {f.source: f.status for f in report.documents}
    assert status.pop("overview.md") == "stored" and set(status.values()) == {"unchanged"}
    after = snapshot()
    changed = set(before) ^ set(after)
    assert changed and all(dict(r[2])["source"] == "overview.md" for r in changed)
    assert any("128 vector cores" in r[1] for r in after) and not any("96 vector cores" in r[1] for r in after)


def _bad_files(tmp_path):
    good = make_pdf(tmp_path / "good.pdf", [["some text"]])
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "corrupt.pdf").write_bytes(b"%PDF-1.7\n" + b"\x00garbage" * 20)
    encrypt_pdf(good, bad / "encrypted.pdf")
    (bad / "empty.md").write_bytes(b"")
    (bad / "photo.md").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    return bad


@pytest.mark.parametrize(("name", "message"), [
    ("corrupt.pdf", "corrupt PDF"), ("encrypted.pdf", "PDF is encrypted (a password is required)"),
    ("empty.md", "file is empty"), ("photo.md", "binary content, not a Markdown text file")])
def test_bad_file_fails_alone_and_store_is_unchanged(chiplore_home, embedder, docs, tmp_path, name, message):
    onboard("z9", [docs], progress=False)
    before = snapshot()
    bad = _bad_files(tmp_path) / name
    report = onboard("z9", [bad], progress=False)
    assert not report.ok and [f.source for f in report.failed] == [name]
    error = report.failed[0].error
    assert error.startswith(str(bad)) and message in error and "\n" not in error
    assert snapshot() == before


def test_mixed_folder_stores_good_files_and_lists_bad_ones(chiplore_home, embedder, tmp_path):
    bad = _bad_files(tmp_path)
    (bad / "fine.txt").write_text("A fine note about the Z9 clock.")
    report = onboard("z9", [bad], progress=False)
    assert report.ok and [f.source for f in report.documents] == ["fine.txt"]
    assert sorted(f.source for f in report.failed) == ["corrupt.pdf", "empty.md", "encrypted.pdf", "photo.md"]


def test_nonexistent_path_fails_before_anything_is_written(chiplore_home, docs, tmp_path):
    missing = tmp_path / "nope.pdf"
    with pytest.raises(BadInputError, match=f"{missing}: no such file or directory"):
        onboard("z9", [docs, missing], progress=False)
    assert not (chiplore_home / "store").exists()


def test_folder_without_supported_files(chiplore_home, tmp_path):
    (tmp_path / "only.svg").write_text("<svg/>")
    with pytest.raises(BadInputError, match=r"no supported documents .*\(skipped: only.svg: unsupported file type "
                                            r"'.svg'\); onboard reads .*\.md, .*\.pdf"):
        onboard("z9", [tmp_path], progress=False)


@pytest.mark.parametrize("bad", ["", "my chip", "a/b", "x" * 65])
def test_bad_chip_names(bad):
    with pytest.raises(BadInputError, match="chip name"):
        normalize_chip(bad)
