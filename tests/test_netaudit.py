"""The browser tests' record of a server's attempts to reach other hosts (tests/browser/netaudit.py)
records an attempt whether or not it succeeds: on this offline machine too."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.browser.harness import REPO_ROOT
from tests.browser.netaudit import is_local_host

PROBE = """
import socket, urllib.request
for host in ("127.0.0.1", "localhost", "::1", None):
    try:
        socket.getaddrinfo(host, 80)
    except OSError:
        pass
server = socket.create_server(("127.0.0.1", 0))
socket.create_connection(server.getsockname()).close()
try:
    urllib.request.urlopen("https://cdn.example.invalid/app.js", timeout=2)
except OSError:
    pass
s = socket.socket()
s.settimeout(0.2)
try:
    s.connect(("192.0.2.7", 443))  # TEST-NET-1: never answers
except OSError:
    pass
"""


def test_an_attempt_to_reach_another_host_is_recorded_even_when_it_fails(tmp_path: Path) -> None:
    log = tmp_path / "net.log"
    subprocess.run([sys.executable, "-m", "tests.browser.netaudit", str(log), "-c", PROBE],
                   cwd=REPO_ROOT, check=True, timeout=60)
    lines = log.read_text().splitlines()
    assert any("cdn.example.invalid" in line for line in lines), lines  # the name lookup
    assert any(line.startswith("socket.connect 192.0.2.7:443") for line in lines), lines
    assert not any("127.0.0.1" in line or "localhost" in line for line in lines), lines


def test_local_hosts() -> None:
    assert all(map(is_local_host, ["127.0.0.1", "localhost", "::1", "0.0.0.0", None, b"::"]))
    assert not any(map(is_local_host, ["fonts.googleapis.com", "10.0.0.1", "8.8.8.8"]))
