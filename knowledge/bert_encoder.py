"""A sentence-transformers BERT folder (all-MiniLM-L6-v2 and its kind) run with torch, `tokenizers` and
`safetensors` alone, without importing transformers or sentence-transformers.

Why: importing sentence-transformers pulls in transformers' model-loading stack (torch._dynamo, torch.distributed,
scikit-learn), about 2-3 s on a 2-core machine before the first query, for a 6-layer encoder that needs none of it.
The math is the BERT encoder (Devlin et al., "BERT", NAACL 2019: embeddings + LayerNorm, then per layer multi-head
self-attention and a GELU feed-forward block, each with a residual connection and post-LayerNorm) followed by the
folder's pooling (Reimers & Gurevych, "Sentence-BERT", EMNLP 2019: mean of the token vectors under the attention
mask) and L2 normalization. Tokenization is the folder's own ``tokenizer.json`` (the same Rust tokenizer the
Hugging Face fast tokenizer wraps), truncated to the folder's ``max_seq_length``. Only folders that are exactly
that (``model_type`` bert, absolute positions, exact GELU, Transformer -> mean Pooling -> Normalize) are run here
(`supports`); tests/knowledge/test_bert_encoder.py checks the vectors against sentence-transformers.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

MODULES = ["sentence_transformers.models.Transformer", "sentence_transformers.models.Pooling",
           "sentence_transformers.models.Normalize"]


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def supports(folder: Path) -> bool:
    """Whether `folder` is a sentence-transformers BERT model this encoder reproduces exactly."""
    try:
        modules = [m.get("type") for m in _read_json(folder / "modules.json")]
        config = _read_json(folder / "config.json")
        pooling_path = next(m["path"] for m in _read_json(folder / "modules.json")
                            if m.get("type") == MODULES[1])
        pooling = _read_json(folder / pooling_path / "config.json")
        st_config = _read_json(folder / "sentence_bert_config.json")
    except (OSError, ValueError, StopIteration, KeyError, TypeError):
        return False
    mean_only = pooling.get("pooling_mode_mean_tokens") is True and not any(
        v for k, v in pooling.items() if k.startswith("pooling_mode_") and k != "pooling_mode_mean_tokens")
    return (modules == MODULES and config.get("model_type") == "bert" and config.get("hidden_act") == "gelu"
            and config.get("position_embedding_type", "absolute") == "absolute" and mean_only
            and not st_config.get("do_lower_case") and (folder / "model.safetensors").is_file()
            and (folder / "tokenizer.json").is_file())


class BertEncoder:
    """Encodes texts into L2-normalized sentence vectors with the weights of a supported folder (`supports`).

    Offers the part of ``SentenceTransformer``'s interface `knowledge.embedder.Embedder` uses: `encode`,
    `get_sentence_embedding_dimension` and `device`.
    """

    def __init__(self, folder: Path) -> None:
        import torch
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        folder = Path(folder)
        self.config = _read_json(folder / "config.json")
        max_len = int(_read_json(folder / "sentence_bert_config.json").get("max_seq_length") or 512)
        self.max_len = min(max_len, int(self.config["max_position_embeddings"]))
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=self.max_len)
        weights = load_file(str(folder / "model.safetensors"))
        self.w = {k.removeprefix("bert."): v.to(torch.float32) for k, v in weights.items()}
        self.heads = int(self.config["num_attention_heads"])
        self.layers = int(self.config["num_hidden_layers"])
        self.eps = float(self.config.get("layer_norm_eps", 1e-12))
        self.device = torch.device("cpu")

    def get_sentence_embedding_dimension(self) -> int:
        return int(self.config["hidden_size"])

    def encode(self, texts: Sequence[str], batch_size: int = 64, normalize_embeddings: bool = True,
               show_progress_bar: bool = False, convert_to_numpy: bool = True) -> Any:
        """[n] texts -> [n, hidden_size] float32 numpy array, L2-normalized when `normalize_embeddings`.

        Batches are sorted by length (as sentence-transformers does) so padding stays short; the output is in the
        order of `texts`.
        """
        import numpy as np
        import torch

        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out = np.zeros((len(texts), self.get_sentence_embedding_dimension()), dtype=np.float32)
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                idx = order[start:start + batch_size]
                vectors = self._encode_batch([texts[i] for i in idx])
                if normalize_embeddings:
                    vectors = torch.nn.functional.normalize(vectors, p=2, dim=1)
                out[idx] = vectors.numpy()
        return out

    def _encode_batch(self, texts: list[str]) -> Any:
        """Mean-pooled last hidden states: [batch, hidden]."""
        import torch

        encodings = self.tokenizer.encode_batch(texts)
        length = max(len(e.ids) for e in encodings)
        ids = torch.zeros((len(texts), length), dtype=torch.long)
        mask = torch.zeros((len(texts), length), dtype=torch.long)
        for row, e in enumerate(encodings):
            ids[row, :len(e.ids)] = torch.tensor(e.ids, dtype=torch.long)
            mask[row, :len(e.ids)] = 1
        hidden = self._forward(ids, mask)
        weights = mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)

    def _forward(self, ids: Any, mask: Any) -> Any:
        """BERT encoder: ids, mask [batch, seq] -> hidden states [batch, seq, hidden] (token type 0 everywhere)."""
        import torch
        import torch.nn.functional as F  # noqa: N812

        w, eps = self.w, self.eps
        seq = ids.shape[1]
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:seq]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = F.layer_norm(x, x.shape[-1:], w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
        batch, hidden = x.shape[0], x.shape[-1]
        head_dim = hidden // self.heads
        blocked = (mask == 0)[:, None, None, :]  # [batch, 1, 1, seq]: keys that are padding
        for i in range(self.layers):
            p = f"encoder.layer.{i}."

            q, k, v = (F.linear(x, w[p + f"attention.self.{name}.weight"], w[p + f"attention.self.{name}.bias"])
                       .view(batch, seq, self.heads, head_dim).transpose(1, 2) for name in ("query", "key", "value"))
            scores = (q @ k.transpose(-1, -2)) / math.sqrt(head_dim)
            scores = scores.masked_fill(blocked, torch.finfo(scores.dtype).min)
            context = (scores.softmax(-1) @ v).transpose(1, 2).reshape(batch, seq, hidden)
            attn = F.linear(context, w[p + "attention.output.dense.weight"], w[p + "attention.output.dense.bias"])
            x = F.layer_norm(attn + x, (hidden,), w[p + "attention.output.LayerNorm.weight"],
                             w[p + "attention.output.LayerNorm.bias"], eps)
            inner = F.gelu(F.linear(x, w[p + "intermediate.dense.weight"], w[p + "intermediate.dense.bias"]))
            out = F.linear(inner, w[p + "output.dense.weight"], w[p + "output.dense.bias"])
            x = F.layer_norm(out + x, (hidden,), w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], eps)
        return x
