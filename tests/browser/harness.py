"""Browser-test plumbing: a real server in a subprocess, Debian's Chromium driven by Playwright, and
a small page object for the chat.

Chromium comes from Debian (``apt-get update && apt-get install -y chromium``); Playwright's own
browser download is never used. Tests skip when it, or the shared data, is absent.
"""

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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from app.config import Config
from settings.config_file import portable_config
from settings.offline import OFFLINE_ENV

REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
ARTIFACTS = REPO_ROOT / "test-artifacts"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]
SERVER_START_TIMEOUT_S = 180  # bound on waiting for /health (a cold import of torch is slow)
ANSWER_TIMEOUT_MS = 240_000  # bound on one answer with the real model on a busy 2-core machine
MODE_LABEL = re.compile(r"Mode: (plain|conversational|multi-query)")
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost"})
# what the browser may not fetch (matched by Chromium itself, so local traffic is not slowed)
NOT_LOCAL_URL = re.compile(
    r"^(?!(?:https?|wss?)://(?:127\.0\.0\.1|localhost)(?::\d+)?(?:[/?#]|$)|(?:data|blob|about):)")
PHONE_VIEWPORT = {"width": 390, "height": 844}
THREAD_PATH = re.compile(r"/thread/[0-9a-f-]{36}$")  # a stored conversation's page
PUBMED_HREF = re.compile(r"^https://pubmed\.ncbi\.nlm\.nih\.gov/(\d+)/$")

# Records every version of the newest message's text, to see an answer grow token by token.
_RECORD_PARTIALS = """
window.__partials = [];
new MutationObserver(() => {
  const els = document.querySelectorAll('.message-content');
  const last = els[els.length - 1];
  if (!last) return;
  const text = last.innerText;
  const seen = window.__partials;
  if (seen[seen.length - 1] !== text) seen.push(text);
}).observe(document, {subtree: true, childList: true, characterData: true});
"""


def require_chromium() -> None:
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is absent: install it with "
                    "`apt-get update && apt-get install -y chromium`")
    pytest.importorskip("playwright.sync_api", reason="playwright (python) is not installed")


def require_shared_data() -> None:
    if not (SHARED_DATA / "pubmed").is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA} (see its README.md)")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# the chat server with tests/browser/fake_app.py's scripted assistant (no model), for running_server
FAKE_APP_ARGS = ["-m", "chainlit", "run", "tests/browser/fake_app.py", "--headless", "--port",
                 "{port}"]

def write_test_config(cfg: Config, path: Path, overrides: dict[str, Any] | None = None) -> Path:
    """Write ``cfg`` as a YAML file at ``path`` with every path in it made absolute (so the file
    works from any folder), its chat history (database, sign-in secret, users) beside the file,
    never the repo's, then ``overrides`` (a nested dict of sections) applied."""
    history = {"history": {"folder": str(path.parent / "history")},
               "ui": {"users_file": str(path.parent / "history" / "users.json")}}
    data = portable_config(cfg, history)
    for section, values in (overrides or {}).items():
        data.setdefault(section, {}).update(values)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


class Server:
    """``python -m app serve`` (or another command) in its own process group, logged to a file.

    With ``piped_log`` the server writes its log into a pipe that this process copies to the
    file (a server under a file size limit, RLIMIT_FSIZE, could not write the file itself)."""

    def __init__(self, args: list[str], port: int, log_path: Path,
                 env: dict[str, str] | None = None, audit_log: Path | None = None,
                 piped_log: bool = False) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.log_path = log_path
        self.audit_log = audit_log
        if audit_log is not None:  # every attempt to reach another host lands in this file
            args = ["-m", "tests.browser.netaudit", str(audit_log), *args]
        full_env = {**os.environ, **OFFLINE_ENV, "PYTHONUNBUFFERED": "1", **(env or {})}
        if "tests/browser/fake_app.py" in args:  # its config and history beside the log
            full_env.setdefault("FAKE_APP_FOLDER", str(log_path.parent / f"fake_app_{port}"))
        self._log = log_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, *args], cwd=REPO_ROOT, env=full_env,
            stdout=subprocess.PIPE if piped_log else self._log, stderr=subprocess.STDOUT,
            start_new_session=True)
        self._copier: threading.Thread | None = None
        if piped_log:
            self._copier = threading.Thread(target=self._copy_log, daemon=True)
            self._copier.start()

    def _copy_log(self) -> None:
        assert self.proc.stdout is not None
        while chunk := self.proc.stdout.read1(65536):
            self._log.write(chunk)
            self._log.flush()

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def wait_for_log(self, pattern: str, after: int = 0, timeout_s: float = 60) -> re.Match[str]:
        """The first match of ``pattern`` in the log after offset ``after``; waits for it (the
        bound is a stall guard, not a speed goal) and fails naming what was logged instead."""
        deadline = time.monotonic() + timeout_s
        while True:
            found = re.search(pattern, self.log()[after:])
            if found:
                return found
            if time.monotonic() > deadline:
                raise AssertionError(f"{pattern!r} not logged:\n{self.log()[after:][-3000:]}")
            time.sleep(0.2)

    def remote_attempts(self) -> list[str]:
        """Each connection or name lookup the server made towards another host (needs
        ``audit_log``; see tests/browser/netaudit.py)."""
        if self.audit_log is None:
            raise RuntimeError("this server was started without an audit log")
        return self.audit_log.read_text(encoding="utf-8").splitlines()

    def wait_ready(self, timeout_s: float = SERVER_START_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.log()}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as resp:
                    if resp.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"server not ready after {timeout_s} s:\n{self.log()}")

    def kill(self) -> None:
        """A hard kill (SIGKILL: no shutdown code runs), as a crash or a power cut would."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)  # our own process group only
            self.proc.wait(timeout=15)
        self._log.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)  # our own process group only
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=15)
        if self._copier is not None:
            self._copier.join(timeout=15)
            if self.proc.stdout is not None:
                self.proc.stdout.close()
        self._log.close()


@contextmanager
def serving_chat(cfg: Config, folder: Path, overrides: dict[str, Any] | None = None, *,
                 audit: bool = False, env: dict[str, str] | None = None) -> Iterator[Server]:
    """The real chat server (``python -m app serve``) on ``cfg`` with ``overrides``: its config
    written to ``folder/cfg.yaml``, its log to ``folder/server.log`` and, with ``audit``, its
    attempts to reach other hosts to ``folder/net.log``; ``env`` is added to its environment."""
    path = write_test_config(cfg, folder / "cfg.yaml", overrides)
    args = ["-m", "app", "--config", str(path), "serve", "--port", "{port}"]
    with running_server(args, folder / "server.log", env=env,
                        audit_log=folder / "net.log" if audit else None) as server:
        yield server


@contextmanager
def running_server(args: list[str], log_path: Path, env: dict[str, str] | None = None,
                   audit_log: Path | None = None, piped_log: bool = False) -> Iterator[Server]:
    """Start ``python <args>`` (``{port}`` in an argument becomes a free port), wait until it
    answers /health, and stop it afterwards. With ``audit_log``, the server's every attempt to
    reach another host is recorded there (:meth:`Server.remote_attempts`); ``piped_log``: see
    :class:`Server`."""
    port = free_port()
    server = Server([a.format(port=port) for a in args], port, log_path, env, audit_log,
                    piped_log)
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


@contextmanager
def chromium() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def is_local_url(url: str) -> bool:
    """A URL this machine serves (127.0.0.1, localhost) or one that loads nothing (data:,
    blob:, about:)."""
    parts = urlsplit(url)
    if parts.scheme in ("data", "blob", "about"):
        return True
    return parts.hostname in LOCAL_HOSTS


class ChatPage:
    """One browser tab on the chat, remembering dialogs and every request it made.

    Every request of the tab's context (pages, workers, service workers) is recorded as it is
    made; one to another host is recorded and then aborted, so the record does not depend on
    whether this machine is online. :meth:`close` fails the test if there was any."""

    def __init__(self, browser: Any, base_url: str, tab_of: ChatPage | None = None,
                 phone: bool = False) -> None:
        """A new browser context (a user of its own), or with ``tab_of`` another tab of that
        page's context (the same user and cookies; its requests recorded with that page's).
        ``phone``: a 390x844 touch screen (Chainlit's phone layout: the side panel is a sheet,
        the sidebar a drawer, and the page stays at "/" after the first answer)."""
        self.base_url = base_url
        self.dialogs: list[str] = []
        self._keeps_history: bool | None = None
        self._owns_context = tab_of is None
        self.phone = phone if tab_of is None else tab_of.phone
        if tab_of is None:
            size = PHONE_VIEWPORT if phone else {"width": 1280, "height": 1000}
            self.context = browser.new_context(viewport=size, is_mobile=phone, has_touch=phone)
            self.context.add_init_script(_RECORD_PARTIALS)
            self.requests: list[str] = []
            self.context.on("request", lambda req: self.requests.append(req.url))
            self.context.route(NOT_LOCAL_URL, lambda route: route.abort())
        else:
            self.context = tab_of.context
            self.requests = tab_of.requests
        self.page = self.context.new_page()
        self.page.on("dialog", self._on_dialog)
        self.page.on("websocket", lambda ws: self.requests.append(ws.url))

    def _on_dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def open(self) -> ChatPage:
        """Load the chat and wait until the session has started (its mode buttons have arrived
        and one is highlighted): a question sent earlier can see Chainlit's start-of-chat "task
        ended" event arrive while it is answered, which hides the stop button."""
        self.page.goto(self.base_url)
        self.page.wait_for_selector("#chat-input", timeout=60_000)
        self.selected_mode_button().wait_for(timeout=60_000)
        return self

    def close(self) -> None:
        """Close the tab; raise if it ever asked another host for anything (unless the test is
        already failing: that error is the one to see)."""
        if self._owns_context:
            self.context.close()
        else:
            self.page.close()
        external = self.external_requests()
        if external and sys.exc_info()[0] is None:
            raise AssertionError(f"the page made requests to other hosts: {external}")

    # ---- asking ----------------------------------------------------------------------------
    def answers(self) -> Any:
        """Finished answers: their content ends with the mode label."""
        return self.page.locator(".message-content", has_text=MODE_LABEL)

    def send(self, question: str) -> int:
        """Type and send a question; returns how many answers were finished before it."""
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        before = self.answers().count()
        self.page.evaluate("window.__partials = []")
        submit = self.page.locator("#chat-submit")
        for attempt in range(3):
            # with history on, the first message moves the page to the conversation's URL and
            # the composer is drawn again, empty: typed before that, the text is gone; type again
            self.page.fill("#chat-input", question)
            submit.wait_for()
            try:
                self.page.wait_for_function(
                    "() => { const b = document.querySelector('#chat-submit');"
                    " return b && !b.disabled; }", timeout=10_000)
                submit.click(timeout=10_000)
                return before
            except PlaywrightTimeout:
                if attempt == 2:
                    raise
        return before

    def click_on_screen(self, selector: str, timeout_s: float = 30) -> None:
        """Click the element matching ``selector`` that is on screen (the closed threads sidebar
        holds a second "New chat" and sidebar button, off screen); waits for it (a page just
        loaded can still be drawing: its spinner first, then the chat)."""
        deadline = time.monotonic() + timeout_s
        while True:
            for element in self.page.locator(selector).all():
                box = element.bounding_box()
                if box and box["x"] >= 0 and box["y"] >= 0:
                    element.click()
                    return
            if time.monotonic() > deadline:
                raise AssertionError(f"no {selector} on screen")
            self.page.wait_for_timeout(200)

    def wait_answer(self, before: int, timeout_ms: int = ANSWER_TIMEOUT_MS) -> Any:
        self.answers().nth(before).wait_for(timeout=timeout_ms)
        if (self.keeps_history() and not self.phone
                and not THREAD_PATH.search(urlsplit(self.page.url).path)):
            # the first message moves the page to the conversation's URL once it is stored,
            # which draws the chat again: an answer can be finished before that
            self.page.wait_for_url(THREAD_PATH, timeout=60_000, wait_until="commit")
        return self.answers().nth(before)

    def rate(self, positive: bool, comment: str) -> None:
        """Rate the last answer with its thumbs and a comment, as a user does.

        The thumbs are drawn again when the message's run ends, which closes a dialog opened
        just before (seen on a loaded machine): so the chat is let finish first (no stop button),
        and a thumb whose dialog did not open is clicked again."""
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        self.page.locator("#stop-button").wait_for(state="hidden", timeout=60_000)
        thumb = ".positive-feedback-off" if positive else ".negative-feedback-off"
        dialog = self.page.locator("[role=dialog]")
        for attempt in range(3):
            self.page.locator(thumb).last.click()
            try:
                dialog.locator("#submit-feedback").wait_for(timeout=10_000)
                break
            except PlaywrightTimeout:
                if attempt == 2:
                    raise
        dialog.locator("textarea").fill(comment)
        dialog.locator("#submit-feedback").click()
        done = ".positive-feedback-on" if positive else ".negative-feedback-on"
        self.page.locator(done).wait_for(timeout=30_000)

    def keeps_history(self) -> bool:
        """Whether the server stores conversations (Chainlit's ``dataPersistence``)."""
        if self._keeps_history is None:
            got = self.page.request.get(self.base_url + "/project/settings?language=en-US")
            self._keeps_history = got.ok and bool(got.json().get("dataPersistence"))
        return self._keeps_history

    def ask(self, question: str, timeout_ms: int = ANSWER_TIMEOUT_MS) -> Any:
        return self.wait_answer(self.send(question), timeout_ms)

    def user_messages(self) -> list[str]:
        """The questions in this tab's chat (user text is shown as plain preformatted text)."""
        return self.page.locator(".message-content pre").all_inner_texts()

    def partials(self) -> list[str]:
        return list(self.page.evaluate("window.__partials"))

    # ---- the answer mode: one button per mode beside the message box (app/mode_control.py) ----
    def mode_button(self, mode: str) -> Any:
        """The button of ``mode`` (a mode's name, or its label in chains.modes.MODE_TABLE)."""
        from chains.modes import mode_buttons, mode_labels

        name = {label: n for n, label in mode_labels().items()}.get(mode, mode)
        return self.page.locator(f"[id='command-{mode_buttons()[name]}']")

    def selected_mode_button(self) -> Any:
        """The highlighted mode button (Chainlit marks a selected command with text-command)."""
        return self.page.locator(".command-buttons-container button.text-command")

    def current_mode(self) -> str:
        """The text of the highlighted mode button (e.g. "Plain")."""
        return self.selected_mode_button().inner_text().strip()

    def set_mode(self, mode: str) -> None:
        """Click ``mode``'s button (one click) unless it is highlighted already."""
        button = self.mode_button(mode)
        if "text-command" not in (button.get_attribute("class") or ""):
            button.click()
        self.page.wait_for_function(
            "id => (document.getElementById(id)?.className || '').includes('text-command')",
            arg=button.get_attribute("id"))

    def last_search_step(self) -> str:
        """Open the newest collapsed "Used Search" step and return its text."""
        toggle = self.page.locator("button#step-Search").last
        toggle.wait_for()
        if toggle.get_attribute("aria-expanded") != "true":
            toggle.click()
        region = self.page.locator(f"[id='{toggle.get_attribute('aria-controls')}']")
        region.get_by_text("Sources found:").wait_for()
        return region.inner_text()

    def source_links(self, answer: Any) -> list[tuple[str, str, str | None]]:
        """(text, href, target) of the PubMed links in one answer."""
        return [(a.inner_text(), a.get_attribute("href") or "", a.get_attribute("target"))
                for a in answer.locator("a[href^='https://pubmed.ncbi.nlm.nih.gov/']").all()]

    def open_source_panel(self, answer: Any, n: int) -> Any:
        """Click the answer's ``[n]`` marker; return the side panel showing that source."""
        # a stall guard: the markers become links when the answer's panels arrive after it
        answer.locator("a.element-link", has_text=f"[{n}]").first.click(timeout=60_000)
        panel = self.page.locator("#side-view-content")
        panel.get_by_text(f"[{n}]").first.wait_for(timeout=30_000)
        return panel

    def external_requests(self) -> list[str]:
        return [u for u in self.requests if not is_local_url(u)]

    def screenshot(self, name: str) -> Path:
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / name
        self.page.screenshot(path=str(path), full_page=True)
        print(f"\nscreenshot: {path}")
        return path
