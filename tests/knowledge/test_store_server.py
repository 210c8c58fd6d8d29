"""Server mode against a real `chroma run` on 127.0.0.1, and an unreachable server."""

import chromadb
import pytest

from agent.cli.app import main
from core.errors import StoreError
from ingest.onboard import onboard
from knowledge.retrieval import search
from knowledge.store import KnowledgeStore
from tests.store_fixtures import free_port

pytestmark = pytest.mark.server


@pytest.fixture
def server_env(chroma_server, chiplore_home, monkeypatch):
    host, port = chroma_server.rsplit("//", 1)[1].split(":")
    client = chromadb.HttpClient(host=host, port=int(port))
    for col in client.list_collections():
        client.delete_collection(col.name if hasattr(col, "name") else col)
    monkeypatch.setenv("CHIPLORE_CHROMA_URL", chroma_server)
    return client


@pytest.mark.slow
def test_onboard_and_search_through_server(server_env, embedder, docs, chiplore_home):
    store = KnowledgeStore.open()
    assert store.location.startswith("Chroma server http://127.0.0.1:")
    report = onboard("z9", [docs], progress=False, store=store)
    assert server_env.get_collection("chunks").count() == report.chunks > 0
    assert not (chiplore_home / "store").exists()  # nothing written to the embedded store
    hits = search("How many vector cores does the Z9 have?", chip="z9", k=3, store=store)
    assert "96 vector cores" in hits[0].text
    again = onboard("z9", [docs], progress=False, store=store)
    assert {f.status for f in again.documents} == {"unchanged"}
    assert server_env.get_collection("chunks").count() == report.chunks


def test_unreachable_server_is_one_clear_line(chiplore_home, monkeypatch, capsys):
    url = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("CHIPLORE_CHROMA_URL", url)
    with pytest.raises(StoreError) as info:
        KnowledgeStore.open()
    assert str(info.value).startswith(f"Chroma server {url}: unreachable") and "\n" not in str(info.value)
    monkeypatch.setattr("sys.argv", ["chiplore", "chips"])
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: Chroma server {url}: unreachable") and len(err.splitlines()) == 1
    assert not (chiplore_home / "store").exists()
