"""A full disk under the chat, for real: app/ui.py with the scripted assistant of
tests/browser/fake_app.py (no model), driven by Debian's Chromium, on a disk that has no room
left for its history database nor for the files Chainlit writes beside it (each answer's side
panels and export files go to ``<app root>/.files`` before they are shown): the server's app
root is a folder on that disk (the repo's ``.chainlit``, ``public`` and ``chainlit.md`` linked
in), its history folder inside it.

How the disk fills (printed, recorded as the test's ``disk`` property; neither way skips):

- ``tmpfs`` (root, as in this project's sandbox): a tmpfs of ``TMPFS_SIZE`` is mounted there;
  after the first conversation is stored a filler file takes every byte left, so the next
  writes fail with ENOSPC (SQLite: "database or disk is full"). Freeing space is deleting the
  filler; the mount goes in a ``finally``.
- ``rlimit`` (where mounting is not permitted): the running server's file size limit is set to
  0 (``prlimit`` RLIMIT_FSIZE on its process, no privilege needed; Python ignores SIGXFSZ), so
  every write to a file fails with EFBIG (SQLite: "disk I/O error"); its log goes through a
  pipe. Freeing space is the limit gone (the next start has none). ``FULL_DISK_BY=rlimit`` in
  the environment takes this way even as root.
"""

from __future__ import annotations

import errno
import os
import resource
import shutil
import sqlite3
import subprocess
import time
import warnings
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pytest

from app.config import load_config
from app.history import UNAVAILABLE_TEXT
from tests.browser.harness import (
    FAKE_APP_ARGS,
    REPO_ROOT,
    ChatPage,
    Server,
    require_chromium,
    running_server,
    write_test_config,
)

pytestmark = pytest.mark.browser

TMPFS_SIZE = "1m"  # the schema, a first conversation and its panels' files: about 150 KiB
APP_ROOT_LINKS = (".chainlit", "public", "chainlit.md")
TABLES = ("users", "threads", "steps", "elements", "feedbacks")


class TinyDisk:
    """The server's app root (its history folder inside) on a disk that :meth:`fill` makes
    full and :meth:`free` frees."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True)
        self.how = "tmpfs" if self._mount() else "rlimit"
        self.filler = folder / "filler"
        for name in APP_ROOT_LINKS:  # Chainlit's settings, as the repo has them
            (folder / name).symlink_to(REPO_ROOT / name)

    def _mount(self) -> bool:
        if os.environ.get("FULL_DISK_BY") == "rlimit" or os.geteuid() != 0 \
                or shutil.which("mount") is None:
            return False
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE},mode=0700",
                               "tmpfs", str(self.folder)], capture_output=True, timeout=30)
        return done.returncode == 0

    def fill(self, server: Server) -> None:
        if self.how == "rlimit":
            _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
            resource.prlimit(server.proc.pid, resource.RLIMIT_FSIZE, (0, hard))
            return
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            while True:
                try:
                    os.write(fd, b"\0" * 65536)
                except OSError as err:
                    if err.errno != errno.ENOSPC:
                        raise
                    break
        finally:
            os.close(fd)
        assert os.statvfs(self.folder).f_bavail == 0  # really full

    def free(self) -> None:
        if self.how == "tmpfs":
            self.filler.unlink()
            assert os.statvfs(self.folder).f_bavail > 0

    def close(self) -> None:
        if self.how == "tmpfs":
            if subprocess.run(["umount", str(self.folder)], timeout=30).returncode != 0:
                subprocess.run(["umount", "-l", str(self.folder)], timeout=30, check=True)


@contextmanager
def tiny_disk(folder: Path) -> Iterator[TinyDisk]:
    disk = TinyDisk(folder)
    try:
        yield disk
    finally:
        disk.close()


def _fake_server(cfg: Path, log: Path, disk: TinyDisk) -> Any:
    return running_server(FAKE_APP_ARGS, log, env={"CHAINLIT_APP_ROOT": str(disk.folder),
                                              "PUBMED_ASSISTANT_CFG": str(cfg),
                                              "FAKE_TOKEN_DELAY": "0.01"},
                          piped_log=disk.how == "rlimit")


def _dump(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table (read-only: nothing written beside the file)."""
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as con:
        return {t: sorted(con.execute(f'SELECT * FROM "{t}"').fetchall(), key=repr)
                for t in TABLES}


def _settled(db: Path, question: str) -> dict[str, list[tuple[Any, ...]]]:
    """The database once ``question`` is answered and stored and nothing has changed for 1 s
    (Chainlit stores steps in background tasks)."""
    deadline = time.monotonic() + 60
    last, since = None, time.monotonic()
    while True:
        now = _dump(db) if db.is_file() else None
        stored = now is not None and any(
            question in repr(row) and "pubmed_answer" in repr(row) for row in now["steps"])
        if now != last:
            last, since = now, time.monotonic()
        elif stored and time.monotonic() - since >= 1.0:
            return now  # type: ignore[return-value]
        assert time.monotonic() < deadline, f"{question!r} not stored: {now}"
        time.sleep(0.2)


def test_a_full_disk_the_chat_answers_says_so_once_keeps_what_was_stored_and_recovers(
        browser: Any, tmp_path: Path, record_property: Any) -> None:
    require_chromium()
    db = tmp_path / "disk" / "history" / "history.db"
    cfg = write_test_config(load_config(), tmp_path / "cfg.yaml",
                            {"history": {"folder": str(db.parent)}})
    with tiny_disk(tmp_path / "disk") as disk:
        record_property("disk", disk.how)
        print(f"\nfull disk by {disk.how}")
        if disk.how == "rlimit":
            warnings.warn("full disk simulated with RLIMIT_FSIZE, not a full tmpfs (mounting "
                          "one is not permitted here, or FULL_DISK_BY=rlimit)", stacklevel=1)
        with _fake_server(cfg, tmp_path / "server1.log", disk) as server:
            chat = ChatPage(browser, server.url).open()
            try:
                assert "Mode: plain" in chat.ask("Is IQ heritable?").inner_text()
                stored = _settled(db, "Is IQ heritable?")
                disk.fill(server)
                # the same conversation goes on: answered, told once, nothing half stored
                for question in ("Does IQ predict health?", "Is IQ stable over life?"):
                    assert "Mode: plain" in chat.ask(question).inner_text()
                chat.page.get_by_text(UNAVAILABLE_TEXT).first.wait_for(timeout=30_000)
                chat.page.wait_for_timeout(500)  # a second notice has had its chance
                assert chat.page.get_by_text(UNAVAILABLE_TEXT).count() == 1
                assert "Mode: plain" in chat.answers().nth(2).inner_text()
                log = server.wait_for_log(r"history unavailable \((.+)\) while (.+)")
                reason = {"tmpfs": "database or disk is full", "rlimit": "disk I/O error"}
                assert reason[disk.how] in log.group(1), log.group(0)
                assert str(db.parent) in log.group(2), log.group(0)  # where to free space
                assert server.log().count("history unavailable (") == 1
                # the panels' files could not be written either: the answers stood without them
                server.wait_for_log(r"source panels and export files could not be written")
                assert "answer failed" not in server.log()
                assert "Traceback" not in server.log()  # reasons in a line each, no errors
            finally:
                chat.close()
        disk.free()
        # nothing stored before was lost or half-overwritten; the file is sound
        assert _dump(db) == stored
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as con:
            assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)

        # the next start, with room again, stores conversations again
        with _fake_server(cfg, tmp_path / "server2.log", disk) as server:
            chat = ChatPage(browser, server.url).open()
            try:
                chat.ask("Is IQ heritable today?")
                after = _settled(db, "Is IQ heritable today?")
                assert chat.page.get_by_text(UNAVAILABLE_TEXT).count() == 0
            finally:
                chat.close()
            assert "history unavailable" not in server.log()
        assert set(stored["steps"]) <= set(after["steps"])
        assert len(after["threads"]) == 2
        assert not list(db.parent.glob("history.db.corrupt-*"))  # a sound file, not set aside
