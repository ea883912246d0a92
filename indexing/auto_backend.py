"""``index.embedding_backend: auto``: time the candidate backends on real chunks, keep the fastest.

CPU flags do not predict embedding speed (bf16 MiniLM ran 2.4x faster than fp32 on one
AVX512-BF16 CPU and 0.68x on another), so ``auto`` measures. At the start of a build it embeds the
same sample of the corpus' own chunks (``SAMPLE_CHUNKS``) with each candidate (torch fp32,
torch-bf16, and onnx-int8, openvino and openvino-bf16 where they can be built offline), in
interleaved rounds for a few seconds each, keeping each candidate's best pass (other jobs on the
machine slow single passes, not the best of several). The winner is the fastest whose MIN cosine
to fp32 over the sample is at least ``MIN_COSINE``: the minimum, not the mean, because one badly
embedded chunk is one chunk retrieval misses. fp32 is the reference, so it always qualifies.

The decision is cached per CPU model, torch and OpenVINO versions and embedding model
(:mod:`indexing.backend_cache`), so later builds reuse it without measuring. Queries never
measure: they embed with the backend the index's manifest records (:func:`query_backend`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from indexing.backend_cache import (
    CONCRETE_BACKENDS,
    DecisionEntry,
    cached_backend,
    decision_key,
    decision_path,
    read_decision,
    write_decision,
)
from indexing.chunking import TokenChunker
from indexing.embeddings import Embedder, build_embedder
from indexing.store import file_lock
from ingest.models import Article

if TYPE_CHECKING:
    from settings.config import Config

AUTO = "auto"
REFERENCE = "torch"  # fp32: what every other candidate's cosine is measured against
CANDIDATES = CONCRETE_BACKENDS  # every backend a build can use is measured
MIN_COSINE = 0.999
SAMPLE_CHUNKS = 96
SECONDS_PER_BACKEND = 3.0
MAX_ROUNDS = 5
WARM_UP_TEXTS = 8

Encode = Callable[[Sequence[str]], np.ndarray]
Report = Callable[[str], None]


@dataclass(frozen=True)
class Measurement:
    """One candidate on the sample; ``note`` says why it could not run (then it never wins)."""

    backend: str
    chunks_per_s: float
    cosine_min: float
    cosine_mean: float
    chunks: int
    note: str = ""

    @property
    def usable(self) -> bool:
        return not self.note


@dataclass(frozen=True)
class Decision:
    backend: str
    measurements: tuple[Measurement, ...]
    cached: bool  # read from the decision file, not measured by this process
    key: str
    path: Path
    min_cosine: float = MIN_COSINE

    def summary(self) -> str:
        """What the build prints: the choice, why, and every candidate's rate and cosine."""
        sample = max((m.chunks for m in self.measurements), default=0)
        when = "cached for this CPU" if self.cached else "measured now"
        lines = [
            f"embedding backend: {self.backend} (auto, {when}: fastest on {sample} real chunks "
            f"with min cosine to fp32 >= {self.min_cosine}; {self.key}; {self.path})"
        ]
        for m in self.measurements:
            if not m.usable:
                lines.append(f"  {m.backend:<13} {m.note}")
                continue
            mark = "  <- chosen" if m.backend == self.backend else ""
            low = "  (cosine below the bar)" if m.cosine_min < self.min_cosine else ""
            lines.append(
                f"  {m.backend:<13} {m.chunks_per_s:8.1f} chunks/s  cosine min "
                f"{m.cosine_min:.5f} mean {m.cosine_mean:.5f}{low}{mark}"
            )
        return "\n".join(lines)


# -- the decision, pure ------------------------------------------------------------------------
def choose_backend(measurements: Sequence[Measurement], min_cosine: float = MIN_COSINE) -> str:
    """The fastest usable candidate whose min cosine to fp32 reaches ``min_cosine``; fp32 when
    none does (on a tie the earlier candidate, fp32 first, wins)."""
    eligible = [m for m in measurements if m.usable and m.cosine_min >= min_cosine]
    if not eligible:
        return REFERENCE
    return max(eligible, key=lambda m: m.chunks_per_s).backend


def _cosines(vectors: np.ndarray, reference: np.ndarray) -> np.ndarray:
    dots = (vectors * reference).sum(axis=1)
    norms = np.linalg.norm(vectors, axis=1) * np.linalg.norm(reference, axis=1)
    cosines: np.ndarray = dots / np.clip(norms, 1e-12, None)
    return cosines


def measure_candidates(
    texts: Sequence[str],
    encoders: Mapping[str, Encode],
    *,
    seconds: float = SECONDS_PER_BACKEND,
    max_rounds: int = MAX_ROUNDS,
    clock: Callable[[], float] = time.perf_counter,
) -> list[Measurement]:
    """Time each encoder on ``texts`` in interleaved rounds (one pass each per round) until it
    has run ``seconds`` or ``max_rounds`` passes; its rate is its best pass. ``encoders`` must
    include the fp32 ``REFERENCE``."""
    if REFERENCE not in encoders:
        raise ValueError(f"the {REFERENCE!r} (fp32) encoder is the reference and must be measured")
    for encode in encoders.values():  # first calls allocate; they are not what a build sees
        encode(list(texts[:WARM_UP_TEXTS]))
    best = dict.fromkeys(encoders, math.inf)
    spent = dict.fromkeys(encoders, 0.0)
    first: dict[str, np.ndarray] = {}
    for _ in range(max(1, max_rounds)):
        active = [n for n in encoders if n not in first or spent[n] < seconds]
        for name in active:
            started = clock()
            vectors = encoders[name](list(texts))
            took = max(clock() - started, 1e-9)
            spent[name] += took
            best[name] = min(best[name], took)
            first.setdefault(name, np.asarray(vectors, dtype=np.float32))
    reference = first[REFERENCE]
    out = []
    for name in encoders:
        cos = _cosines(first[name], reference)
        out.append(Measurement(name, len(texts) / best[name], float(cos.min()),
                               float(cos.mean()), len(texts)))
    return out


def decide(
    path: Path,
    key: str,
    measure: Callable[[], list[Measurement]],
    *,
    min_cosine: float = MIN_COSINE,
) -> Decision:
    """The cached decision for ``key``, or measure, choose and cache it. Held under a file lock so
    two builds starting together neither measure against each other nor both write."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(path.parent / f"{path.name}.lock"):
        entry = read_decision(path, key)
        if entry is not None:
            return Decision(entry["backend"], _measurements(entry), True, key, path, min_cosine)
        measurements = measure()
        backend = choose_backend(measurements, min_cosine)
        write_decision(path, key, _entry(backend, measurements, min_cosine))
        return Decision(backend, tuple(measurements), False, key, path, min_cosine)


def _entry(
    backend: str, measurements: Sequence[Measurement], min_cosine: float
) -> DecisionEntry:
    return {
        "backend": backend,
        "rule": f"fastest with min cosine to fp32 >= {min_cosine} over the sample",
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "candidates": [asdict(m) for m in measurements],
    }


def _measurements(entry: DecisionEntry) -> tuple[Measurement, ...]:
    """The rates stored with a cached decision (for the build's printout; tolerant of gaps)."""
    out = []
    for raw in entry.get("candidates") or []:
        try:
            out.append(Measurement(**raw))
        except TypeError:
            continue
    return tuple(out)


# -- the real candidates -------------------------------------------------------------------------
def _evenly(items: Sequence[Any], n: int) -> list[Any]:
    """``n`` items spread over the whole sequence (a corpus file is often sorted by date)."""
    if len(items) <= n:
        return list(items)
    return [items[i * len(items) // n] for i in range(n)]


def sample_texts(articles: Sequence[Article], tokenizer: Any, cfg: Config,
                 n: int = SAMPLE_CHUNKS) -> list[str]:
    """``n`` chunks as the build will embed them (same chunker, title included)."""
    chunker = TokenChunker(tokenizer, cfg.index.chunk_size, cfg.index.chunk_overlap)
    chunks = chunker.chunk_articles(_evenly(articles, n))
    return [c.search_text for c in _evenly(chunks, n)]


def load_candidates(cfg: Config, names: Sequence[str] = CANDIDATES,
                    ) -> tuple[dict[str, Embedder], list[Measurement]]:
    """Loaded embedders, and a note for each candidate that cannot be built here (onnx-int8
    without onnxruntime, or an export that fails offline). fp32 must load: it is the reference."""
    loaded: dict[str, Embedder] = {}
    missing: list[Measurement] = []
    for name in dict.fromkeys((REFERENCE, *names)):
        try:
            loaded[name] = build_embedder(cfg, backend=name)
        except Exception as err:  # noqa: BLE001 - any failure only removes that candidate
            if name == REFERENCE:
                raise
            first = str(err).splitlines()[0] if str(err) else type(err).__name__
            missing.append(Measurement(name, 0.0, 0.0, 0.0, 0, note=f"not available: {first}"))
    return loaded, missing


def decide_for_corpus(
    cfg: Config,
    articles: Sequence[Article],
    *,
    candidates: Sequence[str] = CANDIDATES,
    sample: int = SAMPLE_CHUNKS,
    seconds: float = SECONDS_PER_BACKEND,
) -> tuple[Decision, Embedder | None]:
    """This machine's decision (cached, or measured on ``articles``' chunks) and, when it was
    measured now, the chosen embedder already loaded (the build reuses it)."""
    loaded: dict[str, Embedder] = {}

    def measure() -> list[Measurement]:
        embedders, missing = load_candidates(cfg, candidates)
        loaded.update(embedders)
        texts = sample_texts(articles, embedders[REFERENCE].tokenizer, cfg, sample)
        encoders = {name: e.encode for name, e in embedders.items()}
        return measure_candidates(texts, encoders, seconds=seconds) + missing

    decision = decide(decision_path(cfg), decision_key(cfg.index.embedding_model), measure)
    return decision, loaded.get(decision.backend)


# -- auto in the config --------------------------------------------------------------------------
def with_embedding_backend(cfg: Config, backend: str) -> Config:
    """A copy of ``cfg`` whose ``index.embedding_backend`` is ``backend`` (cfg is not changed)."""
    index = cfg.index.model_copy(update={"embedding_backend": backend})
    return cfg.model_copy(deep=True, update={"index": index})


def resolve_for_build(
    cfg: Config,
    articles: Sequence[Article],
    embedder: Any = None,
    report: Report | None = None,
) -> tuple[Config, Any]:
    """``(cfg, embedder)`` for a build: with ``auto``, a cfg copy naming the measured backend and
    that backend's embedder when it is loaded already; other settings pass through unchanged.
    An embedder handed in wins (its ``backend``, fp32 for a stand-in without one)."""
    if cfg.index.embedding_backend != AUTO:
        return cfg, embedder
    if embedder is not None:
        given = getattr(embedder, "backend", None) or REFERENCE
        return with_embedding_backend(cfg, given), embedder
    decision, chosen = decide_for_corpus(cfg, articles)
    if report is not None:
        report(decision.summary())
    return with_embedding_backend(cfg, decision.backend), chosen


def query_backend(cfg: Config, built_with: str) -> str:
    """The backend to embed queries with for an index embedded with ``built_with``: ``auto``
    follows the index (its vectors came from that backend), an explicit setting is kept."""
    configured = cfg.index.embedding_backend
    return built_with if configured == AUTO else configured


def wanted_backend(cfg: Config, built_with: str) -> str:
    """The backend a build would use now (``index build --if-needed``): ``auto`` is this
    machine's cached decision, or the index's own backend when this machine has none yet
    (every candidate that can win is within cosine 0.999 of fp32, so the index still serves)."""
    configured = cfg.index.embedding_backend
    if configured != AUTO:
        return configured
    return cached_backend(cfg) or built_with
