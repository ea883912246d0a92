"""A gpt4all-loadable copy of a GGUF file, made once into a cache folder and reused.

Why: gpt4all 2.8.2's bundled llama.cpp predates the ``smollm`` pre-tokenizer name and refuses the
packaged SmolLM2 GGUF ("unknown pre-tokenizer type"). llama.cpp's ``smollm`` pre-tokenizer is the
same split as its older ``starcoder`` one (single digits, then the GPT-2 pattern); the default
target here is ``gpt-2``, whose pattern only differs for runs of digits, and SmolLM2's vocabulary
has no multi-digit tokens, so the ids come out the same. ``eval tokenizer`` measures that against
the Hugging Face tokenizer of the same file (docs/models.md, "GPT4All backend").

Only the ``tokenizer.ggml.pre`` value changes; the tensors are copied byte for byte by the ``gguf``
package's own metadata writer (the code behind ``gguf_new_metadata``). The copy is written to a
temporary file and renamed into place, with a manifest holding the source's SHA-256: a changed
source (another package version) is noticed and the copy rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

PRE_KEY = "tokenizer.ggml.pre"
TEMPLATE_KEY = "tokenizer.chat_template"
MANIFEST_VERSION = 1
# pre-tokenizer names gpt4all 2.8.2's llama.cpp does not know, and the name the copy gets instead
DEFAULT_REWRITES = {"smollm": "gpt-2"}


@dataclass(frozen=True)
class PreparedGGUF:
    """The file gpt4all loads and what the chat model needs from its metadata."""

    path: Path
    chat_template: str | None
    pre_tokenizer: str | None
    source: Path
    rewritten: bool


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def read_metadata(path: Path) -> dict[str, str | None]:
    """The pre-tokenizer name and chat template of a GGUF (memory-mapped: cheap)."""
    import gguf

    reader = gguf.GGUFReader(path, "r")
    out: dict[str, str | None] = {}
    for key in (PRE_KEY, TEMPLATE_KEY):
        field = reader.get_field(key)
        out[key] = str(field.contents()) if field is not None else None
    return out


def _stat_key(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns]


def _write_atomic(target: Path, write: Callable[[Path], object]) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, 0o644)  # mkstemp makes it private; the copy is no secret
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def rewrite_pre_tokenizer(source: Path, target: Path, pre: str) -> None:
    """Copy ``source`` to ``target`` (atomically) with ``tokenizer.ggml.pre`` set to ``pre``."""
    import gguf
    from gguf.scripts.gguf_new_metadata import MetadataDetails, copy_with_new_metadata

    def write(tmp: Path) -> None:
        reader = gguf.GGUFReader(source, "r")
        arch = reader.get_field(gguf.Keys.General.ARCHITECTURE)
        if arch is None:
            raise ValueError(f"{source} has no {gguf.Keys.General.ARCHITECTURE}: not a model GGUF")
        writer = gguf.GGUFWriter(tmp, arch=str(arch.contents()), endianess=reader.endianess)
        alignment = reader.get_field(gguf.Keys.General.ALIGNMENT)
        if alignment is not None:
            writer.data_alignment = alignment.contents()
        new = {PRE_KEY: MetadataDetails(gguf.GGUFValueType.STRING, pre)}
        copy_with_new_metadata(reader, writer, new, [])

    _write_atomic(target, write)


class GGUFCache:
    """``<cache_dir>/<stem>.<pre>.gguf`` plus ``<stem>.<pre>.json`` (the manifest)."""

    def __init__(self, cache_dir: Path) -> None:
        self.dir = cache_dir

    def paths(self, source: Path, pre: str) -> tuple[Path, Path]:
        stem = f"{source.stem}.{pre}"
        return self.dir / f"{stem}.gguf", self.dir / f"{stem}.json"

    def _manifest(self, path: Path) -> dict[str, Any] | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if data.get("version") == MANIFEST_VERSION else None

    def get_or_build(self, source: Path, pre: str) -> Path:
        """The rewritten copy of ``source``, rebuilt when the source's content changed.

        Fast path: the source and the copy have the size and mtime the manifest recorded. Else the
        source is hashed; a different hash (or a missing/edited copy) rebuilds.
        """
        copy, manifest_path = self.paths(source, pre)
        manifest = self._manifest(manifest_path)
        if manifest and copy.is_file():
            if (
                manifest["source_stat"] == _stat_key(source)
                and manifest["copy_stat"] == _stat_key(copy)
                and manifest["pre"] == pre
            ):
                return copy
            if manifest["source_sha256"] == sha256_file(source) and manifest[
                "copy_sha256"
            ] == sha256_file(copy):
                self._save_manifest(manifest_path, source, copy, pre, manifest["source_sha256"],
                                    manifest["copy_sha256"])  # fmt: skip
                return copy
        log.info("writing a gpt4all-compatible copy of %s (pre-tokenizer %s) to %s",
                 source, pre, copy)  # fmt: skip
        source_sha = sha256_file(source)
        rewrite_pre_tokenizer(source, copy, pre)
        self._save_manifest(manifest_path, source, copy, pre, source_sha, sha256_file(copy))
        return copy

    def _save_manifest(
        self, path: Path, source: Path, copy: Path, pre: str, source_sha: str, copy_sha: str
    ) -> None:
        data = {
            "version": MANIFEST_VERSION,
            "source": str(source),
            "source_sha256": source_sha,
            "source_stat": _stat_key(source),
            "copy_sha256": copy_sha,
            "copy_stat": _stat_key(copy),
            "pre": pre,
        }
        _write_atomic(path, lambda tmp: tmp.write_text(json.dumps(data, indent=1), "utf-8"))


def source_key(source: Path) -> str:
    """A GGUF file's key for what is converted from it once: its resolved path, size and
    modification time (a changed or moved file gets a new key)."""
    st = source.stat()
    text = f"{source.resolve()}|{st.st_size}|{st.st_mtime_ns}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cached_tokenizer(source: Path, cache_dir: Path) -> Path | None:
    """A Hugging Face tokenizer folder converted from ``source`` (made once: converting takes
    ~15 s, loading the folder well under a second); None when transformers cannot convert it.

    The chat model counts prompt tokens with it (the context budget); ``eval tokenizer`` checks
    that its ids equal the ones gpt4all's llama.cpp produces.
    """
    target = cache_dir / f"{source.stem}-{source_key(source)}.tokenizer"
    if (target / "tokenizer.json").is_file():
        return target
    try:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(
            str(source.parent), gguf_file=source.name, local_files_only=True
        )
    except Exception as err:  # noqa: BLE001 - an unconvertible tokenizer: counts are estimated
        log.warning("no Hugging Face tokenizer for %s (%s): prompt tokens will be estimated",
                    source, err)  # fmt: skip
        return None
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=cache_dir))
    try:
        tok.save_pretrained(str(tmp))
        os.chmod(tmp, 0o755)
        os.replace(tmp, target)
    except OSError:
        if not (target / "tokenizer.json").is_file():  # not a concurrent writer's finished copy
            raise
    finally:
        if tmp.exists():
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
    return target


def prepare_for_gpt4all(
    source: Path, cache_dir: Path, rewrites: dict[str, str] | None = None
) -> PreparedGGUF:
    """The file to hand gpt4all: ``source`` as is, or its cached copy when its pre-tokenizer
    name is one gpt4all's llama.cpp rejects and ``rewrites`` maps it to a known one."""
    rewrites = DEFAULT_REWRITES if rewrites is None else rewrites
    try:
        meta = read_metadata(source)
    except Exception as err:  # noqa: BLE001 - a file to load as is: llama.cpp says what is wrong
        if rewrites:
            raise
        log.warning("could not read the metadata of %s (%s): loading it as is", source, err)
        return PreparedGGUF(source, None, None, source, rewritten=False)
    pre = meta[PRE_KEY]
    if pre in rewrites:
        target = rewrites[pre]
        path = GGUFCache(cache_dir).get_or_build(source, target)
        return PreparedGGUF(path, meta[TEMPLATE_KEY], target, source, rewritten=True)
    return PreparedGGUF(source, meta[TEMPLATE_KEY], pre, source, rewritten=False)
