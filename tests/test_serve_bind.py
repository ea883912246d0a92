"""Where ``python -m app serve`` listens: 127.0.0.1 unless cfg.yaml's ``ui.host`` says otherwise.

The real server (no index needed: it listens before any question) is started in a subprocess and
its listening sockets are read from the operating system (psutil), so the test sees the address
uvicorn really bound, not the one the configuration asked for.
"""

from __future__ import annotations

import time
from pathlib import Path

import psutil
import pytest
import yaml

from app.config import load_config
from tests.browser.harness import Server, free_port, write_test_config

LISTEN_TIMEOUT_S = 180  # stall guard: a cold start imports Chainlit (and its web stack)


def _config(tmp_path: Path, host: str | None) -> Path:
    path = write_test_config(load_config(), tmp_path / "cfg.yaml",
                             {"index": {"dir": str(tmp_path / "no_index")}})
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if host is None:
        del data["ui"]  # nothing said: the built-in default
    else:
        data["ui"]["host"] = host
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _listening(server: Server, port: int) -> set[str]:
    """The addresses the server process listens on at ``port``, once it listens."""
    deadline = time.monotonic() + LISTEN_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise AssertionError(f"the server exited:\n{server.log()}")
        found = {c.laddr.ip for c in psutil.Process(server.proc.pid).net_connections("inet")
                 if c.status == psutil.CONN_LISTEN and c.laddr.port == port}
        if found:
            return found
        time.sleep(0.5)
    raise AssertionError(f"not listening on port {port}:\n{server.log()}")


@pytest.mark.parametrize(("host", "expected"), [(None, "127.0.0.1"), ("127.0.0.2", "127.0.0.2")])
def test_the_chat_listens_on_loopback_unless_the_config_names_an_address(
        tmp_path: Path, host: str | None, expected: str) -> None:
    port = free_port()
    cfg = _config(tmp_path, host)
    server = Server(["-m", "app", "--config", str(cfg), "serve", "--port", str(port)], port,
                    tmp_path / "server.log")
    try:
        assert _listening(server, port) == {expected}
    finally:
        server.stop()
