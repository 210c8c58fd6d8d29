"""Test-wide setup: Triton runs under its interpreter when no GPU is present; `gpu` tests skip there."""

import os

import pytest
import torch

HAS_GPU = torch.cuda.is_available()
if not HAS_GPU:
    os.environ.setdefault("TRITON_INTERPRET", "1")


def pytest_collection_modifyitems(config, items):
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason="needs a CUDA/ROCm GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def device() -> str:
    """'cuda' when a GPU is present, else 'cpu' (Triton interpreter)."""
    return "cuda" if HAS_GPU else "cpu"


@pytest.fixture()
def chiplore_home(tmp_path, monkeypatch):
    """A private CHIPLORE_HOME for one test."""
    home = tmp_path / "chiplore_home"
    monkeypatch.setenv("CHIPLORE_HOME", str(home))
    return home
