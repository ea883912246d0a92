"""A GGUF file's transformers model and tokenizer, made once into a cache folder, loaded from there.

transformers reads a GGUF file by converting its tokenizer and dequantizing every tensor, at each
start of the ``huggingface`` backend (docs/models.md "Loading a GGUF through transformers"). The
first start saves what that made, the model with ``save_pretrained`` (safetensors: no pickle) and
the tokenizer beside it, into ``<llm.gguf_cache>/<stem>-<key>.transformers``; later starts load
that folder with the same settings (dtype, device) the GGUF would have been loaded with. The key
is the file's resolved path, size and modification time: a changed file gets a folder of its own.
The folder is written under a temporary name and renamed into place, so an interrupted write
leaves no half folder and two starts writing at once each end with a whole one. A cache that
cannot be written is logged and the GGUF is loaded as before. The folder is read as safetensors
only: a pickled weights file put there is never loaded.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from llms.gguf_compat import source_key

log = logging.getLogger(__name__)

# what a finished folder holds (written last: the rename makes the whole folder appear at once)
DONE_FILES = ("config.json", "model.safetensors", "tokenizer.json")


def folder_for(source: Path, cache_dir: Path) -> Path:
    """Where the converted copy of ``source`` lives (it may not exist yet)."""
    return cache_dir / f"{source.stem}-{source_key(source)}.transformers"


def is_complete(folder: Path) -> bool:
    return all((folder / name).is_file() for name in DONE_FILES)


def convert(source: Path) -> tuple[Any, Any]:
    """(model, tokenizer) as transformers reads the GGUF file ``source`` (CPU, its own dtype)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kwargs = {"gguf_file": source.name, "local_files_only": True}
    tokenizer = AutoTokenizer.from_pretrained(str(source.parent), **kwargs)
    model = AutoModelForCausalLM.from_pretrained(str(source.parent), **kwargs)
    return model, tokenizer


def save_dequantized(model: Any, folder: Path) -> None:
    """``model.save_pretrained(folder)`` (safetensors) for a model read from a GGUF file.

    transformers marks such a model as quantized with "gguf" and refuses to save it, although
    its weights are plain tensors by then; the marks (the quantizer and the config's
    ``quantization_config``) are set aside while it saves, so the folder loads as an ordinary
    model, and put back after."""
    quantizer = getattr(model, "hf_quantizer", None)
    config = model.config
    quantization = config.__dict__.pop("quantization_config", None)
    model.hf_quantizer = None
    try:
        model.save_pretrained(str(folder))
    finally:
        model.hf_quantizer = quantizer
        if quantization is not None:
            config.quantization_config = quantization


def dequantized_folder(source: Path, cache_dir: Path,
                       converter: Callable[[Path], tuple[Any, Any]] = convert) -> Path | None:
    """The transformers folder converted from the GGUF file ``source`` (made now by ``converter``
    when missing), or None when it cannot be written (the caller then loads ``source`` itself)."""
    target = folder_for(source, cache_dir)
    if is_complete(target):
        return target
    model, tokenizer = converter(source)
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=cache_dir))
    except OSError as err:
        log.warning("could not cache the converted %s in %s (%s): it is converted at each start",
                    source.name, cache_dir, err)  # fmt: skip
        return None
    try:
        save_dequantized(model, tmp)
        tokenizer.save_pretrained(str(tmp))
        os.chmod(tmp, 0o755)
        os.replace(tmp, target)
        log.info("converted %s for transformers once, into %s", source.name, target)
    except Exception as err:  # noqa: BLE001 - a disk error or a model transformers cannot save
        if not is_complete(target):  # not another start's finished folder
            log.warning("could not cache the converted %s in %s (%s): it is converted at each "
                        "start", source.name, cache_dir, err)  # fmt: skip
            return None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target
