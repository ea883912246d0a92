"""The measured ``embedding_backend: auto`` decision, cached per CPU model in the index folder.

Which embedding backend is fastest is not predictable from CPU flags: two CPUs that both report
AVX512-BF16 ran bf16 MiniLM at 2.4x and 0.68x the fp32 speed. ``auto`` therefore measures
(:mod:`indexing.auto_backend`) and stores the outcome here, keyed by what decides the speed: the
CPU model (``/proc/cpuinfo``'s ``model name``), the torch and OpenVINO versions and the embedding
model. A later build or query on the same kind of machine reads it instead of measuring again;
another CPU model (an index folder on a shared disk) gets its own entry. A file that cannot be
read is treated as empty, so a damaged cache costs one measurement, never a failed build.
"""

from __future__ import annotations

import json
import os
import platform
import tempfile
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, cast

if TYPE_CHECKING:
    from settings.config import Config

DECISION_FILE = ".embedding-backend.json"
FILE_VERSION = 1
CONCRETE_BACKENDS = ("torch", "torch-bf16", "onnx-int8", "openvino", "openvino-bf16")


class DecisionEntry(TypedDict, total=False):
    """One CPU's cached decision (``indexing.auto_backend`` writes it; read back from JSON)."""

    backend: str
    rule: str
    measured_at: str
    candidates: list[dict[str, Any]]  # ``asdict`` of each ``auto_backend.Measurement``


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The ``model name`` line of /proc/cpuinfo (Linux); ``platform.processor()`` elsewhere."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and value.strip():
            return value.strip()
    return platform.processor() or platform.machine() or "unknown CPU"


def package_version(name: str) -> str:
    """Read from the package metadata: importing torch only for its version costs seconds."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return f"no {name}"


def torch_version() -> str:
    return package_version("torch")


def decision_key(embedding_model: str, cpu: str | None = None, torch: str | None = None) -> str:
    """What the measured speed depends on; a change of any part means measuring again (a new
    OpenVINO, or its arrival, is a new candidate to measure)."""
    runtimes = f"torch {torch or torch_version()} | openvino {package_version('openvino')}"
    return f"{cpu or cpu_model()} | {runtimes} | {embedding_model}"


def decision_path(cfg: Config) -> Path:
    """Beside the indices (and the ONNX cache), shared by every index name in that folder."""
    return cfg.resolve(cfg.index.dir) / DECISION_FILE


def _read_all(path: Path) -> dict[str, DecisionEntry]:
    """Every entry of the file; {} when it is missing, not JSON or not this format."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != FILE_VERSION:
        return {}
    entries = data.get("decisions")
    if not isinstance(entries, dict):
        return {}
    return {k: cast(DecisionEntry, v) for k, v in entries.items() if isinstance(v, dict)}


def read_decision(path: Path, key: str) -> DecisionEntry | None:
    """The cached entry for ``key`` when it names a backend this code can run, else None."""
    entry = _read_all(path).get(key)
    if entry is None or entry.get("backend") not in CONCRETE_BACKENDS:
        return None
    return entry


def write_decision(path: Path, key: str, entry: DecisionEntry) -> None:
    """Add or replace ``key``'s entry, keeping other CPUs' entries; atomic (temp + os.replace),
    so a reader never sees half a file."""
    entries = _read_all(path)
    entries[key] = entry
    body = json.dumps({"version": FILE_VERSION, "decisions": entries}, indent=2, sort_keys=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(body + "\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def cached_backend(cfg: Config) -> str | None:
    """The backend ``auto`` chose on this kind of machine, if it was measured already."""
    entry = read_decision(decision_path(cfg), decision_key(cfg.index.embedding_model))
    return entry["backend"] if entry else None
