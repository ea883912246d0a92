"""Load a GGUF through gpt4all (never downloading) into a :class:`GPT4AllChatModel`.

gpt4all 2.8.2 reports a failed load only on its C stderr (llama.cpp's log) and returns an object
whose model is not loaded; here that log is captured during the load, and a failure becomes a
:class:`ModelLoadError` naming the file, llama.cpp's reason and the fix.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from llms.gguf_compat import cached_tokenizer, prepare_for_gpt4all
from settings.config import GPT4AllLLMConfig
from settings.errors import ModelLoadError

if TYPE_CHECKING:
    from llms.gpt4all_chat import GPT4AllChatModel


class ModelFile(Protocol):
    """Where the GGUF is (:class:`llms.llm.ModelLocation`)."""

    @property
    def folder(self) -> Path: ...

    @property
    def gguf_file(self) -> str | None: ...


def default_threads() -> int:
    """All usable cores but one, at most 4: llama.cpp's threads spin-wait at every barrier, so
    when another process wants a core (the embedder, the browser, a build) a generation on every
    core collapses (docs/models.md "GPT4All backend": 2 threads decoded 0.4 tokens/s at load 5,
    1 thread 17.9). Beyond 4 threads a 135M model gains little."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(4, (cores or 1) - 1))


@contextlib.contextmanager
def captured_stderr_fd() -> Iterator[list[str]]:
    """Everything written to file descriptor 2 (C code included) inside the block."""
    out: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield out
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            out.append(tmp.read().decode("utf-8", "replace"))


def load_failure_reason(log: str) -> str:
    """llama.cpp's own words for why a load failed (its ``error ...`` lines)."""
    lines = [ln.strip() for ln in log.splitlines() if re.search(r"error|failed", ln, re.I)]
    lines = [ln for ln in lines if "libcudart" not in ln and "libllamamodel" not in ln]
    return "; ".join(dict.fromkeys(lines)) or "no reason given by llama.cpp"


def load_failure_fix(reason: str, path: Path) -> str:
    if "pre-tokenizer" in reason:
        return (
            "its tokenizer.ggml.pre names a pre-tokenizer this llama.cpp does not know: write a "
            "copy with a known one (`python -m gguf.scripts.gguf_new_metadata --pre-tokenizer "
            f"gpt-2 {path} OUT.gguf`), check it with `python -m app eval tokenizer --gguf "
            "OUT.gguf --reference-gguf IN.gguf`, or set llm.backend: huggingface"
        )
    if "bounds" in reason or "corrupt" in reason or "truncat" in reason or "magic" in reason:
        return "the file is incomplete or corrupted: download or copy it again"
    return "check that it is a GGUF model file, or set llm.backend: huggingface in cfg.yaml"


def _tokenizer(source: Path, cache_dir: Path) -> Any:  # tokenizers.Tokenizer | None
    folder = cached_tokenizer(source, cache_dir)
    if folder is None:
        return None
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(folder / "tokenizer.json"))


def load_gpt4all(
    llm: GPT4AllLLMConfig, loc: ModelFile, root: Path | None, *, packaged: bool
) -> GPT4AllChatModel:
    """``loc`` is a :class:`llms.llm.ModelLocation`; ``packaged``: the default model, whose
    pre-tokenizer name is rewritten in a cached copy (a user's own file is loaded as is)."""
    from llms.gpt4all_chat import GPT4AllChatModel

    if not loc.gguf_file:
        raise ModelLoadError(
            "llm.backend gpt4all needs a .gguf file: set llm.model_path to it (or llm.gguf_file)"
        )
    source = loc.folder / loc.gguf_file
    cache_dir = llm.gguf_cache_dir(root)
    try:
        prepared = prepare_for_gpt4all(source, cache_dir, None if packaged else {})
    except (OSError, ValueError) as err:
        raise ModelLoadError(
            f"could not read the GGUF {source} for gpt4all: {type(err).__name__}: {err} "
            f"(check the file; the default model's copy goes to llm.gguf_cache={cache_dir})"
        ) from err
    device = {"auto": None, "cpu": "cpu", "gpu": "gpu", "cuda": "cuda"}[llm.device]
    from gpt4all import GPT4All
    from gpt4all import _pyllmodel as binding

    try:
        with captured_stderr_fd() as log:
            client = GPT4All(
                model_name=prepared.path.name,
                model_path=str(prepared.path.parent),
                allow_download=False,
                device=device,
                n_ctx=llm.context_window,
                verbose=False,
            )
    except Exception as err:
        reason = f"{err}; {load_failure_reason(''.join(log))}"
        raise ModelLoadError(
            f"gpt4all could not load {prepared.path}: {reason} "
            f"({load_failure_fix(reason, prepared.path)})"
        ) from err
    if not binding.llmodel.llmodel_isModelLoaded(client.model.model):
        reason = load_failure_reason("".join(log))
        raise ModelLoadError(
            f"gpt4all could not load {prepared.path}: {reason} "
            f"({load_failure_fix(reason, prepared.path)})"
        )
    client.model.set_thread_count(llm.n_threads or default_threads())
    return GPT4AllChatModel(
        client=client,
        tokenizer=_tokenizer(source, cache_dir),
        chat_template=prepared.chat_template,
        model_name=loc.gguf_file,
        temperature=llm.temperature,
        top_p=llm.top_p,
        max_new_tokens=llm.max_new_tokens,
        repetition_penalty=llm.repetition_penalty,
        context_window=llm.context_window,
        n_batch=llm.n_batch,
    )
