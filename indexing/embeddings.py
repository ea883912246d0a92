"""Sentence embeddings, fully offline: the packaged all-MiniLM-L6-v2 in torch fp32 or bf16, or int8
ONNX.

The int8 ONNX model is exported once from the packaged weights (``torch.onnx.export`` then
onnxruntime's dynamic quantisation) into a cache folder next to the indices. Which backend is
fastest depends on the CPU, not on its flags: ``embedding_backend: auto`` measures them on the
corpus' own chunks (:mod:`indexing.auto_backend`; ``python -m app bench ingest`` shows the rates).
Vectors are L2-normalised, so inner product = cosine similarity.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from langchain_core.embeddings import Embeddings

from settings.errors import ModelLoadError

if TYPE_CHECKING:
    from settings.config import Config

# The tokenizer's arrays by name (input_ids, attention_mask, token_type_ids), as one model call
# takes them.
Batch = dict[str, np.ndarray]

MAX_SEQ_LENGTH = 256  # all-MiniLM-L6-v2 was trained with 256 word pieces


def resolve_model_dir(name: str) -> Path:
    """A folder, or a pip package shipping a model (its ``get_model_path()``)."""
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    module_name = name.replace("-", "_")
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        raise ModelLoadError(
            f"embedding model {name!r} (index.embedding_model) is neither a folder nor an "
            f"installed package; install it with `pip install {name}` or point "
            "index.embedding_model at a sentence-transformers model folder"
        ) from None
    getter = getattr(module, "get_model_path", None)
    if getter is None:
        raise ModelLoadError(
            f"package {module_name} has no get_model_path(); give a folder instead"
        )
    return Path(getter())


def _mean_pool_normalise(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    mask = mask[..., None].astype(np.float32)
    summed = (hidden * mask).sum(axis=1)
    pooled = summed / np.clip(mask.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    unit: np.ndarray = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
    return unit


class Embedder(Embeddings):
    """LangChain ``Embeddings`` over a BERT-style sentence model; batches are sorted by length."""

    def __init__(
        self,
        model_name: str,
        *,
        backend: str = "onnx-int8",
        cache_dir: Path | None = None,
        batch_size: int = 64,
        threads: int | None = None,
    ) -> None:
        self.model_name = model_name
        self.backend = backend
        self.batch_size = batch_size
        self.model_dir = resolve_model_dir(model_name)
        self.threads = threads or os.cpu_count() or 1
        self._lock = threading.Lock()
        from transformers import AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(str(self.model_dir))
        if backend == "onnx-int8":
            self._run = self._load_onnx(cache_dir or self.model_dir / ".onnx")
        elif backend in ("torch", "torch-bf16"):
            self._run = self._load_torch(bf16=backend == "torch-bf16")
        else:
            raise ModelLoadError(f"index.embedding_backend: unknown backend {backend!r}")
        self.dimension = int(self._encode_batch(["dimension probe"]).shape[1])

    # -- backends -------------------------------------------------------------------------------
    def _load_torch(self, bf16: bool) -> Callable[[Batch], np.ndarray]:
        import torch
        from transformers import AutoModel

        torch.set_num_threads(self.threads)
        model = AutoModel.from_pretrained(str(self.model_dir)).eval()
        if bf16:  # fast where the CPU has AVX512-BF16/AMX; cosine to fp32 stays above 0.9999
            model = model.to(torch.bfloat16)

        def run(enc: Batch) -> np.ndarray:
            with torch.inference_mode():
                out = model(**{k: torch.from_numpy(v) for k, v in enc.items()})
            hidden: np.ndarray = out.last_hidden_state.float().numpy()
            return hidden

        return run

    def _load_onnx(self, cache_dir: Path) -> Callable[[Batch], np.ndarray]:
        import onnxruntime as ort

        path = ensure_int8_onnx(self.model_dir, cache_dir)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = self.threads
        opts.inter_op_num_threads = 1
        session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        names = {i.name for i in session.get_inputs()}

        def run(enc: Batch) -> np.ndarray:
            hidden: np.ndarray = session.run(None, {k: v for k, v in enc.items() if k in names})[0]
            return hidden

        return run

    # -- encoding -------------------------------------------------------------------------------
    def _encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        enc = self.tokenizer(
            list(texts),
            padding=True,
            truncation=True,
            max_length=MAX_SEQ_LENGTH,
            return_tensors="np",
        )
        batch: Batch = {k: v.astype(np.int64) for k, v in enc.items()}
        with self._lock:  # onnxruntime/torch sessions already use every core
            hidden = self._run(batch)
        return _mean_pool_normalise(hidden, batch["attention_mask"])

    def encode(
        self, texts: Sequence[str], progress: Callable[[int], None] | None = None
    ) -> np.ndarray:
        """Embed texts; similar lengths are batched together so padding costs little."""
        if not texts:
            return np.zeros((0, getattr(self, "dimension", 0)), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        chunks: list[np.ndarray] = []
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            chunks.append(self._encode_batch([texts[i] for i in idx]))
            if progress:
                progress(len(idx))
        stacked = np.concatenate(chunks)
        out = np.empty_like(stacked)
        out[np.asarray(order)] = stacked
        return out

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        rows: list[list[float]] = self.encode(texts).tolist()
        return rows

    def embed_query(self, text: str) -> list[float]:
        row: list[float] = self._encode_batch([text])[0].tolist()
        return row

    def embed_query_array(self, text: str) -> np.ndarray:
        vector: np.ndarray = self._encode_batch([text])[0]
        return vector

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])


def _weights_digest(model_dir: Path) -> str:
    h = hashlib.sha256()
    for name in ("model.safetensors", "pytorch_model.bin", "config.json"):
        f = model_dir / name
        if f.exists():
            h.update(name.encode())
            h.update(str(f.stat().st_size).encode())
    return h.hexdigest()[:16]


def ensure_int8_onnx(model_dir: Path, cache_dir: Path) -> Path:
    """Export the packaged weights to ONNX and quantise them to int8, once (atomic; cached)."""
    target = cache_dir / f"model-{_weights_digest(model_dir)}-int8pc.onnx"
    if target.exists():
        return target
    import tempfile

    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModel, AutoTokenizer

    cache_dir.mkdir(parents=True, exist_ok=True)
    model = AutoModel.from_pretrained(str(model_dir)).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))

    class _Hidden(torch.nn.Module):
        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(
            self,
            input_ids: torch.Tensor,
            attention_mask: torch.Tensor,
            token_type_ids: torch.Tensor,
        ) -> torch.Tensor:
            hidden: torch.Tensor = self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            return hidden

    enc = tokenizer(["an example", "a second, longer example"], padding=True, return_tensors="pt")
    names = ["input_ids", "attention_mask", "token_type_ids"]
    with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
        fp32 = Path(tmp) / "model.onnx"
        int8 = Path(tmp) / "model-int8.onnx"
        torch.onnx.export(
            _Hidden(model),
            tuple(enc[n] for n in names),
            str(fp32),
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes={n: {0: "batch", 1: "seq"} for n in [*names, "last_hidden_state"]},
            opset_version=17,
            dynamo=False,
        )
        quantize_dynamic(
            str(fp32),
            str(int8),
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
        )
        os.replace(int8, target)
    return target


def build_embedder(cfg: Config, backend: str | None = None) -> Embedder:
    """The embedder an index config asks for (ONNX cache kept beside the indices).

    ``backend`` overrides the configured one (a query follows the index it searches). ``auto``
    with nothing to measure on (the grounding encoder) is this machine's cached measured choice,
    else fp32; builds resolve ``auto`` by measuring first (``indexing.auto_backend``).
    """
    backend = backend or cfg.index.embedding_backend
    if backend == "auto":
        from indexing.backend_cache import cached_backend

        backend = cached_backend(cfg) or "torch"
    return Embedder(
        cfg.index.embedding_model,
        backend=backend,
        cache_dir=cfg.resolve(cfg.index.dir) / ".models",
        batch_size=cfg.index.embed_batch_size,
        threads=cfg.index.threads,
    )
