"""Sentence embeddings, fully offline: the packaged all-MiniLM-L6-v2 in torch fp32 or bf16, int8
ONNX, or OpenVINO (fp32 or bf16).

The int8 ONNX model is exported once from the packaged weights (``torch.onnx.export`` then
onnxruntime's dynamic quantisation) into a cache folder next to the indices; the OpenVINO model
is converted once from the same weights into the same folder. Which backend is fastest depends
on the CPU, not on its flags: ``embedding_backend: auto`` measures them on the corpus' own chunks
(:mod:`indexing.auto_backend`; ``python -m app bench ingest`` shows the rates). Vectors are
L2-normalised, so inner product = cosine similarity.
"""

from __future__ import annotations

import hashlib
import importlib
import math
import os
import shutil
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from langchain_core.embeddings import Embeddings

from settings.errors import ModelLoadError
from settings.threads import threads_set

if TYPE_CHECKING:
    from settings.config import Config

# The tokenizer's arrays by name (input_ids, attention_mask, token_type_ids), as one model call
# takes them.
Batch = dict[str, np.ndarray]
# A backend runs several batches at once (OpenVINO overlaps them on its streams; the others run
# them one after another) and returns each batch's last hidden state.
RunMany = Callable[[list[Batch]], list[np.ndarray]]

OPENVINO_PRECISION = {"openvino": "f32", "openvino-bf16": "bf16"}
PIPELINE_BATCHES = 4  # batches handed to the backend together (progress is reported per batch)

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
        cache = cache_dir or self.model_dir / ".onnx"
        if backend == "onnx-int8":
            self._run_many = _one_by_one(self._load_onnx(cache))
        elif backend in ("torch", "torch-bf16"):
            self._run_many = _one_by_one(self._load_torch(bf16=backend == "torch-bf16"))
        elif backend in OPENVINO_PRECISION:
            self._run_many = self._load_openvino(cache, OPENVINO_PRECISION[backend])
        else:
            raise ModelLoadError(f"index.embedding_backend: unknown backend {backend!r}")
        self.dimension = int(self._encode_batch(["dimension probe"]).shape[1])

    # -- backends -------------------------------------------------------------------------------
    def _load_torch(self, bf16: bool) -> Callable[[Batch], np.ndarray]:
        import torch
        from transformers import AutoModel
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # no bar in the log
        model = AutoModel.from_pretrained(str(self.model_dir)).eval()
        if bf16:  # fast where the CPU has AVX512-BF16/AMX; cosine to fp32 stays above 0.9999
            model = model.to(torch.bfloat16)

        def run(enc: Batch) -> np.ndarray:
            # torch's thread count is the process's (a build and a query embedder, or the
            # transformers LLM, may share one): this embedder's own while it runs, then restored
            with (threads_set(self.threads, torch.get_num_threads, torch.set_num_threads),
                  torch.inference_mode()):
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

    def _load_openvino(self, cache_dir: Path, precision: str) -> RunMany:
        """OpenVINO in throughput mode: its streams split the cores and run several batches at
        once (1.25x to 1.4x torch-bf16 on a 2-core AMX Xeon, docs/measurements-indexing.md)."""
        ov = import_openvino()
        core = ov.Core()
        compiled = core.compile_model(
            core.read_model(str(ensure_openvino_ir(self.model_dir, cache_dir))),
            "CPU",
            {
                "INFERENCE_PRECISION_HINT": precision,
                "PERFORMANCE_HINT": "THROUGHPUT",
                "INFERENCE_NUM_THREADS": self.threads,
            },
        )
        queue = ov.AsyncInferQueue(compiled)

        def run_many(batches: list[Batch]) -> list[np.ndarray]:
            hidden: list[np.ndarray] = [np.empty(0)] * len(batches)

            def done(request: Any, i: int) -> None:  # an openvino InferRequest
                hidden[i] = request.get_output_tensor(0).data.copy()

            queue.set_callback(done)
            for i, batch in enumerate(batches):
                queue.start_async(batch, i)
            queue.wait_all()
            return hidden

        return run_many

    # -- encoding -------------------------------------------------------------------------------
    def _encode_batches(self, batches: Sequence[Sequence[str]]) -> list[np.ndarray]:
        encoded: list[Batch] = []
        for texts in batches:
            enc = self.tokenizer(
                list(texts),
                padding=True,
                truncation=True,
                max_length=MAX_SEQ_LENGTH,
                return_tensors="np",
            )
            encoded.append({k: v.astype(np.int64) for k, v in enc.items()})
        with self._lock:  # every backend already uses every core
            hidden = self._run_many(encoded)
        return [
            _mean_pool_normalise(h, batch["attention_mask"])
            for h, batch in zip(hidden, encoded, strict=True)
        ]

    def _encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode_batches([texts])[0]

    def encode(
        self, texts: Sequence[str], progress: Callable[[int], None] | None = None
    ) -> np.ndarray:
        """Embed texts; similar lengths are batched together so padding costs little."""
        if not texts:
            return np.zeros((0, getattr(self, "dimension", 0)), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        # batches of equal size (at most batch_size): OpenVINO runs them side by side on its
        # streams, where a short last batch would leave a stream idle (auto's 96-chunk sample
        # was 64 + 32 and hid OpenVINO's 1.3x)
        count = math.ceil(len(order) / self.batch_size)
        groups = [part.tolist() for part in np.array_split(np.asarray(order), count)]
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(groups), PIPELINE_BATCHES):
            part = groups[start : start + PIPELINE_BATCHES]
            vectors = self._encode_batches([[texts[i] for i in group] for group in part])
            for group, rows in zip(part, vectors, strict=True):
                out[group] = rows
                if progress:
                    progress(len(group))
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


def import_openvino() -> Any:
    """OpenVINO without its usage reporting. Unless the user has opted out, ``import openvino``
    writes a client id under ``~/intel`` and sends a usage event over the network; with its
    telemetry package unimportable, OpenVINO falls back to its own inert stub
    (``openvino/tools/ovc/telemetry_stub.py``). This assistant stays offline and writes nothing
    outside its own folders."""
    if "openvino" not in sys.modules:
        # a None entry makes importing it fail (the import system's documented "blocked" entry)
        sys.modules.setdefault("openvino_telemetry", None)  # type: ignore[arg-type]
    import openvino

    return openvino


def _one_by_one(run: Callable[[Batch], np.ndarray]) -> RunMany:
    def run_many(batches: list[Batch]) -> list[np.ndarray]:
        return [run(batch) for batch in batches]

    return run_many


def _last_hidden_state(model: Any) -> Any:
    """The model as a module whose one output is the last hidden state (what export needs)."""
    import torch

    class LastHiddenState(torch.nn.Module):
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

    return LastHiddenState(model)


def _model_and_example(model_dir: Path) -> tuple[Any, dict[str, Any]]:
    """The packaged model as an exportable module (its last hidden state out) and an example
    input by name, what both converters trace it with."""
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(str(model_dir)).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    enc = tokenizer(["an example", "a second, longer example"], padding=True, return_tensors="pt")
    names = ("input_ids", "attention_mask", "token_type_ids")
    return _last_hidden_state(model), {n: enc[n] for n in names}


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

    cache_dir.mkdir(parents=True, exist_ok=True)
    model, example = _model_and_example(model_dir)
    names = list(example)
    with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
        fp32 = Path(tmp) / "model.onnx"
        int8 = Path(tmp) / "model-int8.onnx"
        torch.onnx.export(
            model,
            tuple(example.values()),
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


def ensure_openvino_ir(model_dir: Path, cache_dir: Path) -> Path:
    """Convert the packaged weights to an OpenVINO model (fp32 weights), once: written in a
    temporary folder and renamed into place, so a reader sees the whole model or none. Converted
    from the PyTorch model, not the ONNX export: OpenVINO ran the ONNX export's graph no faster
    than torch (docs/measurements-indexing.md)."""
    target = cache_dir / f"openvino-{_weights_digest(model_dir)}"
    xml = target / "model.xml"
    if xml.exists():
        return xml
    import tempfile

    import torch

    ov = import_openvino()
    cache_dir.mkdir(parents=True, exist_ok=True)
    model, example = _model_and_example(model_dir)
    with torch.inference_mode():
        converted = ov.convert_model(model, example_input=example)
    tmp = Path(tempfile.mkdtemp(dir=cache_dir, prefix=".openvino-"))
    try:
        # fp32 weights: the precision is the backend's choice at load, not the file's
        ov.save_model(converted, str(tmp / "model.xml"), compress_to_fp16=False)
        tmp.chmod(0o755)  # mkdtemp's 0700 would hide the model from another user of the index
        os.replace(tmp, target)
    except OSError:
        if not xml.exists():  # not another process converting at the same time
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return xml


def build_embedder(cfg: Config, backend: str | None = None, *, queries: bool = False) -> Embedder:
    """The embedder an index config asks for (ONNX cache kept beside the indices).

    ``backend`` overrides the configured one (a query follows the index it searches). ``auto``
    with nothing to measure on (the grounding encoder) is this machine's cached measured choice,
    else fp32; builds resolve ``auto`` by measuring first (``indexing.auto_backend``).
    ``queries``: for questions and a few sentences at a time (``index.query_threads``), not
    for a build (``index.threads``).
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
        threads=cfg.index.query_threads if queries else cfg.index.threads,
    )
