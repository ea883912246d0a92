"""Each chat server's own files folder (app/chainlit_files.py); the folder shared with another
server stopping is tested for real in tests/test_ui_browser_panel.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from app.chainlit_files import FOLDER_PREFIX, private_files_folder, remove_abandoned


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(done.stdout)


def test_a_killed_servers_folder_is_removed_and_a_running_ones_kept(tmp_path: Path) -> None:
    dead = tmp_path / f"{FOLDER_PREFIX}{_dead_pid()}"
    alive = tmp_path / f"{FOLDER_PREFIX}{os.getppid()}"  # the process that started this test
    other = tmp_path / ".files-notes"  # not a server's
    for folder in (dead, alive, other):
        (folder / "session").mkdir(parents=True)
    assert remove_abandoned(tmp_path) == [dead]
    assert not dead.exists() and alive.is_dir() and other.is_dir()


def test_this_servers_folder_is_new_empty_and_private(tmp_path: Path) -> None:
    stale = tmp_path / f"{FOLDER_PREFIX}{os.getpid()}"  # a dead process had this number
    (stale / "old-session").mkdir(parents=True)
    folder = private_files_folder(tmp_path)
    assert folder == stale and list(folder.iterdir()) == []
    assert folder.stat().st_mode & 0o777 == 0o700
