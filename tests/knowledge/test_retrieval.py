"""Hybrid retrieval over real onboarded documents: dense + BM25 with reciprocal-rank fusion, chip filter, findings,
citations, and the on-disk BM25 cache keyed by store revision."""

import os
from pathlib import Path

import pytest

from core.errors import BadInputError
from ingest.onboard import onboard
from knowledge import retrieval
from knowledge.retrieval import RRF_K, KeywordIndex, search, tokenize
from knowledge.store import KnowledgeStore
from knowledge.types import Chunk
from tests.store_fixtures import write_docs


def _onboard_z9_and_q1(docs: Path, tmp: Path) -> None:
    onboard("z9", [docs], progress=False)
    other = tmp / "other"
    other.mkdir()
    (other / "q1.md").write_text("# Quasar Q1\n\nThe Quasar Q1 has 24 vector cores and 8 GB of memory.\n")
    onboard("q1", [other], progress=False)


@pytest.fixture
def onboarded(chiplore_home, embedder, docs, tmp_path):
    """A fresh home with chips z9 and q1 onboarded, for a test that changes the store."""
    _onboard_z9_and_q1(docs, tmp_path)
    return chiplore_home


@pytest.fixture(scope="module")
def onboarded_once(embedder, tmp_path_factory):
    """The same two chips onboarded once for this module's tests that only read the store (one onboarding instead
    of one per test); CHIPLORE_HOME points there while they run."""
    tmp = tmp_path_factory.mktemp("retrieval")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CHIPLORE_HOME", str(tmp / "chiplore-home"))
        patch.delenv("CHIPLORE_CHROMA_URL", raising=False)
        _onboard_z9_and_q1(write_docs(tmp / "docs"), tmp)
        yield tmp / "chiplore-home"


def test_tokenize():
    assert tokenize("The L2 cache is 4MB; 1,216 cores at 4.096 TFLOP/s on MI300X GPUs") == [
        "l2", "cache", "4mb", "4", "mb", "1216", "core", "4.096", "tflop", "mi300x", "gpu"]


@pytest.mark.slow
def test_question_finds_the_right_passage_with_citation(onboarded_once):
    hits = search("How many vector cores does the Zephyr Z9 have?", chip="z9", k=3)
    assert "96 vector cores" in hits[0].text
    assert hits[0].chip == "z9" and hits[0].collection == "chunks"
    assert hits[0].cite() == "overview.md > Zephyr Z9 overview"
    bw = search("What is the memory bandwidth of the Z9?", chip="Z9", k=3)
    top = next(h for h in bw if "3.2 TB/s" in h.text)
    assert top.source == "brief.pdf" and top.page == 2 and top.cite().startswith("brief.pdf p.2")


def test_table_row_answers_column_question(onboarded_once):
    hits = search("clock frequency in MHz of the Z9 Lite", chip="z9", k=3)
    assert any("Model: Z9 Lite" in h.text and "1600" in h.text for h in hits)


def test_scores_are_reciprocal_rank_fusion(onboarded_once):
    for hit in search("scratchpad memory per vector core", k=5):
        expected = sum(1.0 / (RRF_K + r) for r in (hit.dense_rank, hit.keyword_rank) if r is not None)
        assert hit.score == pytest.approx(expected)
        assert hit.dense_rank is not None or hit.keyword_rank is not None


def test_chip_filter(onboarded_once):
    assert {h.chip for h in search("vector cores", chip="q1", k=5)} == {"q1"}
    assert {h.chip for h in search("vector cores", k=10)} == {"q1", "z9"}


def test_unknown_chip_lists_known_chips_and_changes_nothing(onboarded_once):
    store = KnowledgeStore.open()
    before = store.count()
    with pytest.raises(BadInputError, match=r"^unknown chip 'h999'; known chips: q1, z9$"):
        search("vector cores", chip="H999")
    assert store.count() == before


def test_empty_store_and_bad_arguments(chiplore_home, embedder):
    with pytest.raises(BadInputError, match="known chips: none yet"):
        search("anything", chip="z9")
    assert search("anything") == []
    with pytest.raises(BadInputError, match="-k 0: must be between 1 and 100 passages"):
        search("anything", k=0)
    with pytest.raises(BadInputError, match="question is empty"):
        search("  ")


@pytest.mark.slow
def test_findings_are_searched_and_cited(onboarded):
    finding = Chunk(id="finding-1", text="Split-KV with 8 splits gave a 3.1x speedup on the Z9 decode case.",
                    chip="z9", source="run 20260101-abc", section="extend_attention > decode", kind="finding")
    KnowledgeStore.open().upsert_chunks([finding], collection="findings")
    hits = search("what speedup did split-KV give on the Z9?", chip="z9", k=3)
    assert hits[0].collection == "findings" and hits[0].id == "finding-1"
    assert search("split-KV speedup", chip="z9", k=3, collections=("chunks",))[0].collection == "chunks"


@pytest.mark.slow
def test_bm25_index_cached_on_disk_by_revision(onboarded, monkeypatch, docs):
    search("vector cores", k=2)
    cache = onboarded / "cache" / "bm25" / "chunks"
    first = sorted(p.name for p in cache.iterdir())
    assert len(first) == 1 and (cache / first[0] / "records.json").is_file()
    retrieval._MEMO.clear()

    def no_build(records):
        raise AssertionError("index rebuilt although the store did not change")

    with monkeypatch.context() as patch:
        patch.setattr(KeywordIndex, "build", staticmethod(no_build))
        assert search("vector cores", k=2)
    (docs / "errata.txt").write_text("Errata\n======\n\nThe Z9 L2 cache now runs at full clock.\n")
    report = onboard("z9", [docs], progress=False)
    assert [f.source for f in report.files if f.status == "stored"] == ["errata.txt"]
    hits = search("does the L2 cache run at full clock", chip="z9", k=1)
    assert "full clock" in hits[0].text
    second = sorted(p.name for p in cache.iterdir())
    assert len(second) == 1 and second != first


def test_bm25s_import_keeps_jax_off_the_gpu(tmp_path):
    """bm25s calls jax.lax.top_k when it is imported; JAX must see JAX_PLATFORMS=cpu by then (a probe package named
    `jax` records what it sees; the real JAX with its CUDA plugin would preallocate 75% of the GPU)."""
    import subprocess
    import sys

    probe = tmp_path / "jax"
    probe.mkdir()
    (probe / "__init__.py").write_text("")
    (probe / "lax.py").write_text(
        "import os\n"
        "def top_k(x, k):\n"
        f"    open({str(tmp_path / 'seen.txt')!r}, 'w').write(os.environ.get('JAX_PLATFORMS', '-') + ' '"
        " + os.environ.get('XLA_PYTHON_CLIENT_PREALLOCATE', '-'))\n"
        "    return x[:k], list(range(k))\n")
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k not in ("JAX_PLATFORMS", "XLA_PYTHON_CLIENT_PREALLOCATE")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(root)])
    code = "from knowledge.retrieval import _import_bm25s; _import_bm25s()"
    subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=root)
    assert (tmp_path / "seen.txt").read_text() == "cpu false"
    env["JAX_PLATFORMS"] = "cuda"  # a user's explicit choice is kept
    subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=root)
    assert (tmp_path / "seen.txt").read_text() == "cuda false"


def test_a_list_of_sources_ranks_after_the_passage_that_states_the_fact(chiplore_home, embedder, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "w7.md").write_text(
        "# Wombat W7 notes\n\n## Compute units and threads\n\nWarp size: 32 threads. 64 compute units.\n\n"
        "## Sources\n\n- Wombat W7 warp size and warp scheduling whitepaper (warp size, warps, threads)\n"
        "- Wombat W7 programming guide: warp size\n")
    onboard("w7", [notes], progress=False)
    hits = search("warp size", chip="w7", k=2)
    assert "Warp size: 32" in hits[0].text
    assert len(hits) == 2 and hits[1].section.endswith("Sources")
    assert retrieval.is_reference_list({"section": "Wombat W7 notes > Sources"})
    assert not retrieval.is_reference_list({"section": "Wombat W7 notes > Compute units and threads"})


def test_count_question_ranks_the_stated_count_above_passages_that_define_the_term(chiplore_home, embedder,
                                                                                    tmp_path, monkeypatch):
    """Three passages about lattice cells that state no count of them, and one table row that does: "How many
    lattice cells" puts the row first; the same search without the count list (answer-type matching off) does not."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "o3.md").write_text(
        "# Orvel O3 architecture guide\n\n## Lattice cells\n\n"
        "The Orvel O3 is organised around lattice cells. A lattice cell is the O3's compute unit: each lattice "
        "cell holds 256 lanes, a scheduler and 96 KB of cell SRAM.\n\n"
        "## Programming the lattice cells\n\n"
        "Kernels run as work bundles on lattice cells; a bundle stays on one lattice cell until it ends, and "
        "the lattice cells of the Orvel O3 share one ring network.\n\n"
        "## Scheduling across lattice cells\n\n"
        "The Orvel O3 places bundles on lattice cells round-robin, so every lattice cell gets work.\n\n"
        "## Specifications\n\n"
        "| Resource | Orvel O3 |\n|---|---|\n| Lattice cells | 40 |\n| Cell SRAM | 96 KB |\n"
        "| Clock | 1.4 GHz |\n| Memory | 24 GB |\n")
    onboard("o3", [notes], progress=False)
    question = "How many lattice cells does the Orvel O3 have?"
    hits = search(question, chip="o3", k=3)
    assert "Lattice cells" in hits[0].text and "40" in hits[0].text and hits[0].kind == "table_row"
    expected = sum(1.0 / (RRF_K + r) for r in (hits[0].dense_rank, hits[0].keyword_rank) if r is not None)
    assert hits[0].score > expected  # the count list's share
    monkeypatch.setattr(retrieval, "asked_count_term", lambda query, tokenize: None)
    plain = search(question, chip="o3", k=3)
    assert not ("Lattice cells" in plain[0].text and "40" in plain[0].text)
