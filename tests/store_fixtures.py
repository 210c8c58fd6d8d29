"""Fixtures shared by the knowledge, ingest and CLI tests: a temporary CHIPLORE_HOME, the real embedder, a real
Chroma server started with ``chroma run``, and small documents in every supported format."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.ingest.pdfgen import make_pdf


@pytest.fixture(scope="session", autouse=True)
def _session_chiplore_home(tmp_path_factory: pytest.TempPathFactory):
    """Point CHIPLORE_HOME at a temporary folder for the whole session, so no test can write to ~/.chiplore even
    when it undoes its own environment patches."""
    saved = os.environ.get("CHIPLORE_HOME")
    os.environ["CHIPLORE_HOME"] = str(tmp_path_factory.mktemp("session-home"))
    yield
    if saved is None:
        os.environ.pop("CHIPLORE_HOME", None)
    else:
        os.environ["CHIPLORE_HOME"] = saved


@pytest.fixture
def chiplore_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh CHIPLORE_HOME (embedded store); server mode switched off."""
    home = tmp_path / "chiplore-home"
    monkeypatch.setenv("CHIPLORE_HOME", str(home))
    monkeypatch.delenv("CHIPLORE_CHROMA_URL", raising=False)
    return home


@pytest.fixture(scope="session")
def embedder():
    """The real packaged all-MiniLM-L6-v2 embedder, loaded once per test session."""
    from knowledge.embedder import get_embedder

    return get_embedder()


def chroma_binary() -> str | None:
    """The ``chroma`` console script installed with chromadb (next to this Python, else on PATH)."""
    beside = Path(sys.executable).parent / "chroma"
    if beside.exists():
        return str(beside)
    return shutil.which("chroma")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory):
    """A real Chroma server: ``chroma run --path DIR --host 127.0.0.1 --port N``; yields its URL."""
    binary = chroma_binary()
    if binary is None:
        pytest.skip("the `chroma` CLI of chromadb is not installed in this environment")
    import chromadb

    path = tmp_path_factory.mktemp("chroma-server")
    port = free_port()
    log = open(path / "server.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([binary, "run", "--path", str(path / "data"), "--host", "127.0.0.1", "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, ANONYMIZED_TELEMETRY="False"))
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                chromadb.HttpClient(host="127.0.0.1", port=port).heartbeat()
                break
            except Exception:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log_tail = (path / "server.log").read_text()[-2000:]
                    raise RuntimeError(f"chroma run did not start: {log_tail}") from None
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    """A folder with one small document per supported format plus an unsupported file, about an invented chip."""
    return write_docs(tmp_path / "docs")


def write_docs(root: Path) -> Path:
    """Write the `docs` fixture's documents into the new folder ``root``; returns ``root``."""
    (root / "sub").mkdir(parents=True)
    (root / "overview.md").write_text(
        "# Zephyr Z9 overview\n\nThe Zephyr Z9 accelerator has 96 vector cores arranged in 12 clusters.\n\n"
        "## Memory\n\nEach vector core owns 192 KiB of scratchpad memory. The device carries 48 GB of HBM3.\n\n"
        "| Level | Size | Latency |\n|---|---|---|\n| Scratchpad | 192 KiB | 4 cycles |\n| L2 | 32 MiB | 90 cycles |\n")
    (root / "sub" / "specs.rst").write_text(
        "Zephyr Z9 specifications\n========================\n\n.. list-table:: Z9 family\n   :header-rows: 1\n\n"
        "   * - Model\n     - Cores\n     - Clock (MHz)\n   * - Z9\n     - 96\n     - 1850\n"
        "   * - Z9 Lite\n     - 64\n     - 1600\n")
    (root / "sub" / "notes.html").write_text(
        "<html><head><title>Z9 notes</title></head><body><h1>Z9 notes</h1><h2>Warps</h2>"
        "<p>A Z9 wavefront has 32 lanes and a block holds at most 1024 threads.</p></body></html>")
    (root / "errata.txt").write_text("Errata\n======\n\nThe Z9 L2 cache runs at half clock in low-power mode.\n")
    make_pdf(root / "brief.pdf", [["ZEPHYR Z9 PRODUCT BRIEF", "The Z9 reaches 410 TFLOP/s in bf16.", "1"],
                                  ["ZEPHYR Z9 PRODUCT BRIEF", "Memory bandwidth is 3.2 TB/s.", "2"],
                                  ["ZEPHYR Z9 PRODUCT BRIEF", "Thermal design power is 600 W.", "3"]])
    (root / "diagram.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'/>")
    return root
