"""Each chat server keeps its answers' files in a folder of its own.

Chainlit writes an answer's side panels and export files (``sources.bib``, ...) under one
folder, ``.files`` in the app root, and removes that whole folder when its server stops. Two
servers started from the same folder (two ports, ``make run`` beside a test run, a restart
overlapping the old process) would delete each other's files: a chat still running loses the
export files it already offered, and its next answers are shown without source panels, their
markers plain text. Installed by the chat's startup handler (app/ui.py), before any session.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

FOLDER_PREFIX = "pubmed-chat-files-"


def install_private_files_folder() -> Path:
    """Point Chainlit's files folder at a new private one (mode 0700: the exports hold users'
    conversations) and return it. Chainlit reads it at each use (``chainlit.config``) and
    removes it when this server stops (``chainlit.server``); a killed server leaves it in the
    system's temporary folder."""
    import chainlit.config as cl_config
    import chainlit.server as cl_server

    folder = Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX))
    cl_config.FILES_DIRECTORY = folder
    cl_server.FILES_DIRECTORY = folder  # the name it removes at exit
    return folder
