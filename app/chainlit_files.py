"""Each chat server keeps its answers' files in a folder of its own.

Chainlit writes an answer's side panels and export files (``sources.bib``, ...) under one
folder, ``.files`` in the app root, and removes that whole folder when its server stops. Two
servers started from the same folder (two ports, ``make run`` beside a test run, a restart
overlapping the old process) would delete each other's files: a chat still running loses the
export files it already offered, and its next answers are shown without source panels, their
markers plain text. Installed by the chat's startup handler (app/ui.py), before any session.

The folder is ``.files-<pid>`` beside ``.files`` (the same disk: a full disk is still reported as
one). Chainlit removes it when its server stops; one left by a killed server is removed by the
next start.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

FOLDER_PREFIX = ".files-"


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def remove_abandoned(app_root: Path) -> list[Path]:
    """Remove the files folders of servers no longer running (killed ones); returns them."""
    removed = []
    for folder in app_root.glob(FOLDER_PREFIX + "*"):
        pid = folder.name.removeprefix(FOLDER_PREFIX)
        if folder.is_dir() and pid.isdigit() and not _running(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def private_files_folder(app_root: Path) -> Path:
    """A new empty folder for this process's files (mode 0700: the exports hold users'
    conversations); an old one with this process's number is a dead process's."""
    remove_abandoned(app_root)
    folder = app_root / f"{FOLDER_PREFIX}{os.getpid()}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(mode=0o700)
    return folder


def install_private_files_folder() -> Path:
    """Point Chainlit's files folder at this server's own folder and return it. Chainlit reads it
    at each use (``chainlit.config``) and removes it when this server stops
    (``chainlit.server``)."""
    import chainlit.config as cl_config
    import chainlit.server as cl_server

    folder = private_files_folder(Path(cl_config.APP_ROOT))
    cl_config.FILES_DIRECTORY = folder
    cl_server.FILES_DIRECTORY = folder  # the name it removes at exit
    return folder
