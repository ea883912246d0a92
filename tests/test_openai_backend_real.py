"""``llm.backend: openai`` for real: a small OpenAI-compatible chat-completions server on
127.0.0.1, speaking the wire protocol (JSON, and with ``"stream": true`` server-sent events
``data: {...}`` ending in ``data: [DONE]``), and the project's own client talking to it."""

from __future__ import annotations

import json
import queue
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage

from settings.config import Config, OpenAILLMConfig
from settings.errors import UserFacingError
from tests.conftest import REPO

pytest.importorskip("langchain_openai")

MODEL = "tiny-test-model"
API_KEY = "sk-loopback-test"
PIECES = ["Methyl", "phenidate", " improved", " attention", " [1]", "."]
ROLES = {"human": "user", "system": "system", "ai": "assistant"}


class ChatServer:
    """``POST /v1/chat/completions`` on a free loopback port. Streaming is in lockstep when
    ``lockstep`` is set: after each piece the server waits until the test has received it (a
    permit in ``permits``), so a client that buffered the answer would stall it (``stalls``)."""

    def __init__(self, pieces: list[str], *, lockstep: bool = False) -> None:
        self.pieces = pieces
        self.lockstep = lockstep
        self.permits: queue.Queue[None] = queue.Queue()
        self.requests: list[dict] = []
        self.headers: list[dict[str, str]] = []
        self.stalls = 0
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                if self.path != "/v1/chat/completions":
                    self._json(404, {"error": {"message": f"no route {self.path}"}})
                    return
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                server.headers.append({k.lower(): v for k, v in self.headers.items()})
                if body.get("stream"):
                    self._stream(body)
                else:
                    self._json(200, server.completion(body))

            def _json(self, status: int, data: dict) -> None:
                raw = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def _stream(self, body: dict) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()  # HTTP/1.0: the stream ends when the connection closes
                for i, piece in enumerate(server.pieces):
                    delta = {"content": piece, **({"role": "assistant"} if i == 0 else {})}
                    self._event(server.chunk(body, delta, None))
                    if server.lockstep and i < len(server.pieces) - 1:
                        try:
                            server.permits.get(timeout=5)
                        except queue.Empty:
                            server.stalls += 1
                self._event(server.chunk(body, {}, "stop"))
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

            def _event(self, data: dict) -> None:
                self.wfile.write(f"data: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()

        return Handler

    @staticmethod
    def chunk(body: dict, delta: dict, finish: str | None) -> dict:
        return {
            "id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }  # fmt: skip

    def completion(self, body: dict) -> dict:
        return {
            "id": "chatcmpl-test", "object": "chat.completion", "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "".join(self.pieces)}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }  # fmt: skip

    def __enter__(self) -> ChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def free_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)


def openai_cfg(base_url: str, **llm: object) -> Config:
    return Config(
        llm=OpenAILLMConfig(openai_base_url=base_url, openai_model=MODEL, **llm)
    )


def project_messages(cfg: Config) -> list[BaseMessage]:
    """The answer prompt as the project builds it (prompts/answer.txt with one source)."""
    from chains.prompts import Prompts
    from chains.steps import answer_messages

    doc = Document(
        page_content="Methylphenidate improved attention in children with ADHD.",
        metadata={"pmid": "123", "title": "Stimulants and attention", "year": 2020},
    )
    return answer_messages(Prompts.from_config(cfg).answer, "Does methylphenidate help?", [doc])


def as_wire(messages: list[BaseMessage]) -> list[dict]:
    return [{"role": ROLES[m.type], "content": m.content} for m in messages]


def test_a_streamed_answer_arrives_token_by_token() -> None:
    from llms.llm import get_llm

    with ChatServer(PIECES, lockstep=True) as server:
        cfg = openai_cfg(server.base_url, max_new_tokens=77, temperature=0.0)
        llm = get_llm(cfg.llm, root=cfg.root)
        messages = project_messages(cfg)
        got: list[str] = []
        seen_when: list[int] = []  # how many requests the server had when each token arrived
        stream: Iterator = llm.stream(messages)
        for chunk in stream:
            if chunk.content:
                got.append(str(chunk.content))
                seen_when.append(len(server.requests))
                server.permits.put(None)  # let the server send the next piece
    assert got == PIECES  # one chunk per server event, in order, nothing merged
    assert server.stalls == 0, "a token was held back until the server sent more"
    assert seen_when == [1] * len(PIECES)
    request = server.requests[0]
    assert request["stream"] is True and request["model"] == MODEL
    assert request["messages"] == as_wire(messages)
    assert "Methylphenidate improved attention" in request["messages"][0]["content"]
    # the cap under its classic name, which every OpenAI-compatible server reads
    assert request["max_tokens"] == 77 and "max_completion_tokens" not in request
    assert request["temperature"] == 0.0
    assert server.headers[0]["authorization"] == f"Bearer {API_KEY}"


def test_invoke_and_the_per_call_token_cap_reach_the_server() -> None:
    from llms.llm import get_llm, with_max_tokens

    with ChatServer(PIECES) as server:
        cfg = openai_cfg(server.base_url)
        llm = get_llm(cfg.llm, root=cfg.root)
        messages = project_messages(cfg)
        reply = with_max_tokens(llm, 12).invoke(messages)
    assert reply.content == "".join(PIECES)
    assert server.requests[0]["max_tokens"] == 12  # not the configured 128
    assert server.requests[0]["messages"] == as_wire(messages)


def test_a_server_that_is_down_gives_a_clear_error() -> None:
    from llms.llm import get_llm

    url = f"http://127.0.0.1:{free_port()}/v1"
    cfg = openai_cfg(url)
    llm = get_llm(cfg.llm, root=cfg.root)
    with pytest.raises(UserFacingError) as caught:
        list(llm.stream(project_messages(cfg)))
    message = str(caught.value)
    assert url in message and "llm.openai_base_url" in message
    with pytest.raises(UserFacingError, match="cannot be reached"):
        llm.invoke("hello")


def test_an_unknown_route_or_model_gives_a_clear_error() -> None:
    from llms.llm import get_llm

    with ChatServer(PIECES) as server:
        cfg = openai_cfg(server.base_url.removesuffix("/v1") + "/wrong")
        llm = get_llm(cfg.llm, root=cfg.root)
        with pytest.raises(UserFacingError, match="404") as caught:
            llm.invoke("hello")
    assert "llm.openai_model" in str(caught.value)


# ---- the command line: eval answers in the gold setting needs no index, only the model ----------


def _cli_config(tmp_path: Path, base_url: str) -> Path:
    prompts = {k: str(REPO / "prompts" / f"{k}.txt")
               for k in ("answer", "rewrite", "multi_query", "yes_no", "lead")}  # fmt: skip
    cfg_file = tmp_path / "cfg.yaml"
    cfg_file.write_text(yaml.safe_dump({
        "llm": {"backend": "openai", "openai_base_url": base_url, "openai_model": MODEL},
        "prompts": prompts,
        "index": {"dir": str(tmp_path / "indices")},
    }))  # fmt: skip
    return cfg_file


def _questions(tmp_path: Path) -> Path:
    rows = [
        {"qid": "1", "question": "Does methylphenidate help?", "answer": "yes", "split": "test",
         "contexts": ["Methylphenidate improved attention."]},
        {"qid": "2", "question": "Does placebo help?", "answer": "no", "split": "test",
         "contexts": ["Placebo had no effect."]},
    ]  # fmt: skip
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _eval_answers(cfg_file: Path, questions: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "app", "--config", str(cfg_file), "eval", "answers",
         "--setting", "gold", "--method", "json", "--questions", str(questions), "--json"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_cli_answers_through_the_server(tmp_path: Path) -> None:
    with ChatServer(['{"draft": "It helped.", ', '"answer": "yes"}']) as server:
        out = _eval_answers(_cli_config(tmp_path, server.base_url), _questions(tmp_path))
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["method"] == "json" and report["n"] == 2 and report["invalid_rate"] == 0
    assert report["predicted"] == {"yes": 2} and report["accuracy"] == 0.5
    assert len(server.requests) == 2
    assert "Placebo had no effect." in server.requests[1]["messages"][0]["content"]


def test_cli_with_the_server_down_prints_the_error_not_a_traceback(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    out = _eval_answers(_cli_config(tmp_path, url), _questions(tmp_path))
    assert out.returncode == 1
    assert f"error: the OpenAI-compatible server at {url} cannot be reached" in out.stderr
    assert "Traceback" not in out.stderr
