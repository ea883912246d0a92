"""On-disk index: one folder per build, swapped in atomically, nothing pickled.

Layout under ``<index.dir>``::

    <name>            -> symlink to <name>.builds/<build-id>   (swapped with one os.replace)
    <name>.builds/<build-id>/manifest.json   settings, counts, checksums of the files below
                           chunks.parquet    chunk text + article metadata (JSON), in vector order
                           articles.parquet  pmid + content hash (what ``index update`` compares)
                           dense.faiss       FAISS index (faiss' own binary format)
                           bm25.npz          BM25 term weights (scipy sparse, loaded without pickle)
                           bm25_vocab.json
    <name>.work/      embeddings of an unfinished build, reused when the build is run again,
                      and its progress.json (chunks embedded of all, rate; indexing.progress)

A build may be published lexical-only (``Manifest.dense == "pending"``: no dense.faiss) so that
the chat can start on BM25 while the dense index is embedded; the full build replaces it with the
same atomic swap.

A build killed at any point leaves the previous build (the symlink's target) untouched.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from settings.errors import IndexMissingError as IndexMissingError  # re-exported

if TYPE_CHECKING:
    from settings.config import Config

FORMAT_VERSION = 1
# What each chunk's metadata holds. 1: the citation (title, authors, journal, year, DOI, MeSH).
# 2: + publication types, study design (and the rule that set it), retraction, PMC id, MeSH major
# topics, keywords, language, volume/issue/pages. A schema-1 index is never read as if it had
# these: it is refused with how to upgrade it (`index build --if-needed`: vectors reused, the
# metadata re-derived from the corpus).
METADATA_SCHEMA = 2
UPGRADE_HINT = (
    "upgrade it without re-embedding: `.venv/bin/python -m app index build --if-needed` (or "
    "`make run`) reuses every vector and re-reads the metadata from the corpus files"
)
MANIFEST = "manifest.json"
DENSE_FILE = "dense.faiss"
DATA_FILES = ("chunks.parquet", "articles.parquet", DENSE_FILE, "bm25.npz", "bm25_vocab.json")
PHRASE_FILES = ("bm25_pairs.npz", "bm25_pair_keys.npy")
HOW_TO_BUILD = "build it with `make run` or `.venv/bin/python -m app index build`"
DAMAGED = "damaged index: rebuild with `python -m app index build`"


class IndexMismatchError(IndexMissingError):
    """The index on disk was built with other settings than cfg.yaml asks for."""


class DamagedIndexError(IndexMissingError):
    """A file of the build (the manifest included) is missing, edited or corrupted."""

    def __init__(self, folder: Path, detail: str) -> None:
        super().__init__(f"{DAMAGED} ({folder}: {detail})")


class Manifest(BaseModel):
    format_version: int = FORMAT_VERSION
    name: str
    embedding_model: str
    embedding_backend: str
    dimension: int
    chunk_size: int
    chunk_overlap: int
    faiss_index: str = "flat-ip"
    metadata_schema: int = 1  # absent from manifests written before schema 2
    # k1, b, stopwords the BM25 matrix used, and whether phrase pairs are stored (JSON values)
    bm25_settings: dict[str, Any] = Field(default_factory=dict)
    corpus_checksum: str = ""
    corpus_files: list[str] = Field(default_factory=list)
    # the corpus checksum without the user's library (library.dir), and the library PMIDs this
    # build holds: what lets an addition or removal update the index incrementally
    # (indexing/incremental.py); "" and [] in builds made before the library existed
    base_checksum: str = ""
    library_pmids: list[str] = Field(default_factory=list)
    articles: int
    chunks: int
    dropped_short: int = 0
    bad_records: int = 0
    built_at: str = Field(
        default_factory=lambda: _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    )
    build_seconds: float = 0.0
    reused_articles: int = 0
    embedded_articles: int = 0
    # "pending": a lexical-only build (BM25 and chunks, no dense.faiss) published so the chat
    # can start while the dense index is embedded; "ready": the full build
    dense: Literal["ready", "pending"] = "ready"
    file_sha256: dict[str, str] = Field(default_factory=dict)
    # sha256 of this manifest's own content (every other field), so an edit of it is caught
    manifest_sha256: str = ""

    def stats(self) -> dict[str, Any]:
        return self.model_dump(exclude={"file_sha256", "corpus_files", "manifest_sha256",
                                        "library_pmids"})

    def required_files(self) -> tuple[str, ...]:
        """The files a build of these settings must have (phrase pairs when it was built so; no
        dense.faiss while the dense index is pending)."""
        data = DATA_FILES if self.dense_ready else tuple(f for f in DATA_FILES if f != DENSE_FILE)
        return data + (PHRASE_FILES if self.bm25_settings.get("phrases") else ())

    @property
    def dense_ready(self) -> bool:
        return self.dense == "ready"


def manifest_digest(data: Mapping[str, Any]) -> str:
    """sha256 of a manifest's fields (as parsed from its JSON), ``manifest_sha256`` left out."""
    body = {k: v for k, v in data.items() if k != "manifest_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created if missing) across processes."""
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@dataclass(frozen=True)
class IndexLocation:
    root: Path  # <index.dir>
    name: str

    @property
    def link(self) -> Path:
        return self.root / self.name

    @property
    def builds(self) -> Path:
        return self.root / f"{self.name}.builds"

    @property
    def work(self) -> Path:
        return self.root / f"{self.name}.work"

    @property
    def progress(self) -> Path:
        """The running build's progress file (written by indexing.progress)."""
        return self.work / "progress.json"

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Serialise builds of this index across processes (two `make run`s, parallel tests)."""
        self.root.mkdir(parents=True, exist_ok=True)
        with file_lock(self.root / f".{self.name}.lock"):
            yield

    def current(self) -> Path | None:
        """The folder of the build in use, or None when there is none."""
        if self.link.is_symlink() or self.link.is_dir():
            target = self.link.resolve()
            if (target / MANIFEST).is_file():
                return target
        return None


def location(cfg: Config) -> IndexLocation:
    return IndexLocation(cfg.resolve(cfg.index.dir), cfg.index.name)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_manifest(folder: Path, *, verify: bool = False) -> Manifest:
    """The build's manifest; a file that is not a valid manifest is a :class:`DamagedIndexError`.
    With ``verify``, its own checksum must match too (a legacy build without one is refused)."""
    try:
        raw = json.loads((folder / MANIFEST).read_bytes())
        manifest = Manifest.model_validate(raw)
    except FileNotFoundError:
        raise DamagedIndexError(folder, f"{MANIFEST} is missing") from None
    except (ValueError, ValidationError, UnicodeDecodeError) as err:
        first = str(err).splitlines()[0]
        raise DamagedIndexError(folder, f"{MANIFEST} is not a valid manifest ({first})") from None
    if verify:
        if not manifest.manifest_sha256:
            raise DamagedIndexError(folder, f"{MANIFEST} has no checksum of its own (built by an "
                                    "older version)")
        if manifest_digest(raw) != manifest.manifest_sha256:
            raise DamagedIndexError(folder, f"{MANIFEST} does not match its checksum (edited "
                                    "or corrupted)")
    return manifest


def verify_build(folder: Path, manifest: Manifest, *, complete: bool = True) -> None:
    """Every file the build needs is listed in the manifest, present and unchanged, and the
    tables hold the counts the manifest states. ``complete=False`` checks only the files listed
    (reusing the vectors of a build from before the phrase files were checksummed)."""
    import pyarrow.parquet as pq

    for name in manifest.required_files() if complete else ():
        if name not in manifest.file_sha256:
            raise DamagedIndexError(folder, f"{name} has no checksum in {MANIFEST}")
    for name, digest in manifest.file_sha256.items():
        path = folder / name
        if not path.is_file():
            raise DamagedIndexError(folder, f"{name} is missing")
        if sha256_file(path) != digest:
            raise DamagedIndexError(folder, f"{name} does not match its checksum (edited or "
                                    "corrupted)")
    for name, want in (("chunks.parquet", manifest.chunks), ("articles.parquet",
                                                             manifest.articles)):
        rows = pq.read_metadata(folder / name).num_rows
        if rows != want:
            raise DamagedIndexError(folder, f"{name} holds {rows} rows, the manifest says {want}")


def check_counts(folder: Path, manifest: Manifest, **sizes: int) -> None:
    """Each loaded structure (``dense=index.ntotal``, ``bm25=rows``...) has manifest.chunks rows."""
    for what, size in sizes.items():
        if size != manifest.chunks:
            raise DamagedIndexError(folder, f"the {what} index holds {size} rows, the manifest "
                                    f"says {manifest.chunks} chunks")


def new_build_dir(loc: IndexLocation) -> Path:
    loc.builds.mkdir(parents=True, exist_ok=True)
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%S")
    return Path(tempfile.mkdtemp(prefix=f"{stamp}-", dir=loc.builds))


def publish(loc: IndexLocation, build_dir: Path, manifest: Manifest) -> None:
    """Checksum the build's files, write its manifest last, then swap the symlink atomically."""
    manifest.file_sha256 = {
        p.name: sha256_file(p) for p in sorted(build_dir.iterdir())
        if p.is_file() and not p.name.startswith(MANIFEST)
    }
    missing = [name for name in manifest.required_files() if name not in manifest.file_sha256]
    if missing:
        raise RuntimeError(f"index build incomplete: {', '.join(missing)} not written")
    manifest.manifest_sha256 = ""
    manifest.manifest_sha256 = manifest_digest(manifest.model_dump(mode="json"))
    tmp_manifest = build_dir / (MANIFEST + ".tmp")
    tmp_manifest.write_text(manifest.model_dump_json(indent=2), encoding="utf-8")
    os.replace(tmp_manifest, build_dir / MANIFEST)
    previous = loc.current()
    if loc.link.exists() and not loc.link.is_symlink():  # an old-style folder: move it aside
        os.replace(loc.link, loc.builds / f"legacy-{os.getpid()}")
    tmp_link = loc.root / f".{loc.name}.link-{os.getpid()}"
    if tmp_link.is_symlink():
        tmp_link.unlink()
    tmp_link.symlink_to(os.path.relpath(build_dir, loc.root))
    os.replace(tmp_link, loc.link)
    _prune(loc, keep={build_dir.resolve(), previous.resolve() if previous else None})


def _prune(loc: IndexLocation, keep: set[Path | None]) -> None:
    """Remove builds other than the current and the previous one (unfinished ones included)."""
    for child in loc.builds.iterdir():
        if child.resolve() not in keep:
            shutil.rmtree(child, ignore_errors=True)


def open_current(
    cfg: Config, *, verify: bool = True, old_schema_ok: bool = False
) -> tuple[Path, Manifest]:
    """The current build's folder and manifest, checked against cfg.yaml and its checksums.
    ``old_schema_ok``: an older metadata schema is accepted (to upgrade it, never to search it)."""
    loc = location(cfg)
    folder = loc.current()
    if folder is None:
        if loc.link.is_symlink() and loc.link.resolve().is_dir():  # a build without manifest
            raise DamagedIndexError(loc.link.resolve(), f"{MANIFEST} is missing")
        raise IndexMissingError(f"no search index at {loc.link}: {HOW_TO_BUILD}")
    manifest = read_manifest(folder, verify=verify)
    check_compatible(manifest, cfg, old_schema_ok=old_schema_ok)
    if verify:
        verify_build(folder, manifest)
    return folder, manifest


def check_compatible(manifest: Manifest, cfg: Config, *, old_schema_ok: bool = False) -> None:
    if manifest.metadata_schema > METADATA_SCHEMA:
        raise IndexMismatchError(
            f"the index was written by a newer version of this program (metadata schema "
            f"{manifest.metadata_schema}, this code reads {METADATA_SCHEMA}): update the code, or "
            "rebuild the index: `.venv/bin/python -m app index build`"
        )
    if manifest.metadata_schema < METADATA_SCHEMA and not old_schema_ok:
        raise IndexMismatchError(
            f"the index was built before study designs and retractions were recorded (metadata "
            f"schema {manifest.metadata_schema}, this code reads {METADATA_SCHEMA}): "
            + UPGRADE_HINT
        )
    problems = []
    if manifest.format_version != FORMAT_VERSION:
        problems.append(
            f"format version {manifest.format_version} (this code reads {FORMAT_VERSION})"
        )
    for key in ("embedding_model", "chunk_size", "chunk_overlap"):
        have, want = getattr(manifest, key), getattr(cfg.index, key)
        if have != want:
            problems.append(
                f"index.{key} is {want!r} in cfg.yaml but the index was built with {have!r}"
            )
    if problems:
        raise IndexMismatchError(
            "the index on disk does not match cfg.yaml: "
            + "; ".join(problems)
            + ". Rebuild it: `.venv/bin/python -m app index build`"
        )


# -- resumable embedding shards ----------------------------------------------------------------
class ShardCache:
    """Embeddings of an unfinished build, saved shard by shard (numpy, no pickle)."""

    def __init__(self, folder: Path, plan_key: str) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        plan = folder / "plan.json"
        if plan.is_file() and json.loads(plan.read_text()).get("key") != plan_key:
            shutil.rmtree(folder)
            folder.mkdir(parents=True)
        plan.write_text(json.dumps({"key": plan_key}))

    def _path(self, start: int) -> Path:
        return self.folder / f"emb-{start:09d}.npy"

    def get(self, start: int, rows: int) -> np.ndarray | None:
        path = self._path(start)
        if not path.is_file():
            return None
        try:
            arr = np.load(path, allow_pickle=False)
        except (ValueError, OSError):
            return None
        return arr if arr.shape[0] == rows else None

    def saved_rows(self, total: int, shard_rows: int) -> int:
        """How many of ``total`` rows already have a saved shard (not loaded: counted)."""
        return sum(min(shard_rows, total - start) for start in range(0, total, shard_rows)
                   if self._path(start).is_file())

    def put(self, start: int, vectors: np.ndarray) -> None:
        tmp = self.folder / f".tmp-{start}.npy"
        np.save(tmp, vectors, allow_pickle=False)
        os.replace(tmp, self._path(start))

    def clear(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
