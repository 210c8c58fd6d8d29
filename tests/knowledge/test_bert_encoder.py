"""`knowledge.bert_encoder` against sentence-transformers on the packaged all-MiniLM-L6-v2: the same vectors
(texts short, long past the 256-token limit, empty, non-ASCII, in one batch of mixed lengths), chosen only for the
folders it reproduces, and a cold embedding without transformers imported."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from knowledge.bert_encoder import BertEncoder, supports
from knowledge.embedder import Embedder, default_model_path

TEXTS = ["shared memory per block", "The H200 has 132 SMs and 4.8 TB/s of HBM3e memory bandwidth.", "",
         "Ünïcödé 東京 — ñ wavefront size 64", "tile " * 400, "LDS (KiB): 64 | L2 Cache (MiB): 32 (4 per XCD)"]


@pytest.fixture(scope="module")
def library_vectors():
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(default_model_path()), device="cpu", local_files_only=True)
    return model.encode(TEXTS, batch_size=4, normalize_embeddings=True, convert_to_numpy=True)


def test_same_vectors_as_sentence_transformers(library_vectors):
    ours = BertEncoder(default_model_path()).encode(TEXTS, batch_size=4)
    assert ours.shape == (len(TEXTS), 384) and ours.dtype == np.float32
    assert np.abs(ours - library_vectors).max() < 1e-5
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-6)
    one_by_one = np.stack([BertEncoder(default_model_path()).encode([t])[0] for t in TEXTS[:3]])
    assert np.abs(one_by_one - ours[:3]).max() < 1e-5  # padding in a batch changes nothing


def test_only_folders_it_reproduces(tmp_path, monkeypatch):
    assert supports(default_model_path())
    cls = tmp_path / "cls-pooling"
    shutil.copytree(default_model_path(), cls)
    pooling = cls / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    pooling.write_text(json.dumps({**config, "pooling_mode_mean_tokens": False, "pooling_mode_cls_token": True}))
    assert not supports(cls)
    assert not supports(tmp_path)  # no model at all
    monkeypatch.setenv("CHIPLORE_EMBED_MODEL", str(cls))
    assert type(Embedder(str(cls))._model).__name__ == "SentenceTransformer"
    monkeypatch.setenv("CHIPLORE_EMBED_BACKEND", "sentence-transformers")
    assert type(Embedder(str(default_model_path()))._model).__name__ == "SentenceTransformer"
    monkeypatch.setenv("CHIPLORE_EMBED_BACKEND", "onnx")
    from core.errors import StoreError

    with pytest.raises(StoreError, match="CHIPLORE_EMBED_BACKEND='onnx': expected auto or sentence-transformers"):
        Embedder(str(default_model_path()))


def test_cold_embedding_imports_no_transformers(library_vectors):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHIPLORE_EMBED")}
    code = ("import sys, json; from knowledge.embedder import get_embedder; v = get_embedder().embed(%r); "
            "print(json.dumps([sorted(m for m in ('transformers', 'sentence_transformers', 'sklearn') "
            "if m in sys.modules), v[0][:8]]))" % [TEXTS[1]])
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    imported, head = json.loads(out.stdout)
    assert imported == [] and np.allclose(head, library_vectors[1][:8], atol=1e-5)
