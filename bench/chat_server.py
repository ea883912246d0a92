"""The bench chat's server: ``python -m app serve`` on 127.0.0.1 in its own process group,
its peak RSS sampled."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from bench.chat_client import HOST
from settings.config import REPO_ROOT

LOADED_LOG = re.compile(r"language model loaded|assistant not loaded at startup: (.*)")
SERVER_START_TIMEOUT_S = 600  # stall guard: importing torch and loading the model on a busy CPU


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


class ServerProcess:
    """``python -m app serve`` on 127.0.0.1 in its own process group; its RSS sampled."""

    def __init__(self, config_path: str | None, log_path: Path) -> None:
        self.port = free_port()
        self.url = f"http://{HOST}:{self.port}"
        self.log_path = log_path
        args = [sys.executable, "-m", "app"]
        if config_path:
            args += ["--config", str(Path(config_path).expanduser().resolve())]
        args += ["serve", "--host", HOST, "--port", str(self.port)]
        self._log = log_path.open("wb")
        self.proc = subprocess.Popen(args, cwd=REPO_ROOT, stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.peak_rss = 0
        self._sampling = threading.Event()
        self._sampler: threading.Thread | None = None

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def rss(self) -> int:
        """Bytes resident in the server and its children now."""
        import psutil

        try:
            proc = psutil.Process(self.proc.pid)
            procs = [proc, *proc.children(recursive=True)]
        except psutil.NoSuchProcess:
            return 0
        total = 0
        for p in procs:
            try:
                total += p.memory_info().rss
            except psutil.NoSuchProcess:
                pass
        return total

    def wait_loaded(self, timeout: float = SERVER_START_TIMEOUT_S) -> None:
        """Until /health answers and the log says the model is loaded (or failed to load)."""
        deadline = time.monotonic() + timeout
        healthy = False
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited with {self.proc.returncode}:\n"
                                   f"{self.log()[-3000:]}")
            if not healthy:
                try:
                    with urllib.request.urlopen(self.url + "/health", timeout=2) as resp:
                        healthy = resp.status == 200
                except OSError:
                    pass
            found = LOADED_LOG.search(self.log())
            if healthy and found:
                if found.group(1):
                    raise RuntimeError(f"the server could not load the assistant: {found.group(1)}")
                return
            time.sleep(0.5)
        raise RuntimeError(f"the server was not ready after {timeout:.0f} s:\n{self.log()[-3000:]}")

    def start_sampling(self, every_s: float = 0.2) -> None:
        def sample() -> None:
            while not self._sampling.wait(every_s):
                self.peak_rss = max(self.peak_rss, self.rss())
        self.peak_rss = self.rss()
        self._sampler = threading.Thread(target=sample, daemon=True)
        self._sampler.start()

    def stop(self) -> None:
        self._sampling.set()
        if self._sampler is not None:
            self._sampler.join(timeout=5)
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)  # its own process group only
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=20)
        self._log.close()


# ---- the run --------------------------------------------------------------------------------
