"""``python -m app ARGS`` run through the CLI's own entry point in the test process.

A subprocess imports torch and transformers and loads the models again for each call (10-25 s of
CPU each on 2 cores); in the test process they are loaded once. Each test file that uses this
keeps at least one call as a real process (the entry point, exit codes, stdout and stderr)."""

from __future__ import annotations

import contextlib
import io
import subprocess
from pathlib import Path


def app_in_process(cfg_file: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """What ``python -m app --config cfg_file ARGS`` returns and prints, as a CompletedProcess."""
    from app.cli import main

    argv = ["--config", str(cfg_file), *args]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit_:  # argparse's own exits
            code = exit_.code if isinstance(exit_.code, int) else 1
    return subprocess.CompletedProcess(["python", "-m", "app", *argv], code, out.getvalue(),
                                       err.getvalue())
