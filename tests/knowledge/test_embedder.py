import math
import os

import pytest

from core.errors import StoreError
from knowledge.embedder import Embedder, default_model_path, get_embedder


def _dot(a, b):
    return sum(x * y for x, y in zip(a, b))


def test_packaged_model_is_used_by_default(embedder, monkeypatch):
    monkeypatch.delenv("CHIPLORE_EMBED_MODEL", raising=False)
    assert (default_model_path() / "model.safetensors").is_file()
    assert embedder.model_name == "all-MiniLM-L6-v2"
    assert embedder.dim == 384


def test_vectors_are_unit_length_and_deterministic(embedder):
    a, b = embedder.embed(["shared memory per block", "shared memory per block"])
    assert len(a) == 384
    assert math.isclose(math.sqrt(_dot(a, a)), 1.0, rel_tol=1e-4)
    assert a == b
    assert embedder.embed([]) == []


def test_similar_texts_are_closer_than_unrelated_ones(embedder):
    q, near, far = embedder.embed(["How much L2 cache does the GPU have?",
                                   "The accelerator has a 50 MB level-2 cache.",
                                   "The recipe needs two eggs and a cup of flour."])
    assert _dot(q, near) > _dot(q, far) + 0.2


def test_missing_model_path_is_one_clear_error():
    with pytest.raises(StoreError, match=r"^embedding model '/nonexistent/model': no such folder; point it at a "
                                         r"folder saved by sentence-transformers"):
        Embedder("/nonexistent/model")


def test_model_name_not_in_cache_is_not_downloaded(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with pytest.raises(StoreError, match="nothing is downloaded"):
        Embedder("sentence-transformers/definitely-not-a-cached-model")
    assert "HF_HUB_OFFLINE" not in os.environ  # offline mode is forced only while loading, then restored
    assert not any((tmp_path / "hf").rglob("*.safetensors"))


def test_env_var_selects_model(monkeypatch):
    monkeypatch.setenv("CHIPLORE_EMBED_MODEL", str(default_model_path()))
    assert get_embedder().dim == 384
