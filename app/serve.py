"""``python -m app serve``: the Chainlit chat (app/ui.py), headless, at http://localhost:8000.

Chainlit runs in this process. Its settings are read from the repo's ``.chainlit/config.toml`` when
``chainlit`` is first imported, so the environment is prepared before that import: the app root,
the address, the config file for app/ui.py (``PUBMED_ASSISTANT_CFG``), and no variables that would
switch on a remote data layer (Literal AI, a database).
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from pathlib import Path

from settings.config import REPO_ROOT, Config
from settings.errors import UserFacingError
from settings.offline import offline_env

UI_SCRIPT = REPO_ROOT / "app" / "ui.py"
# Variables that make Chainlit send chats to Literal AI or to a database: never wanted here.
REMOTE_DATA_VARS = ("LITERAL_API_KEY", "LITERAL_API_URL", "DATABASE_URL")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default=None, help="address to listen on (default: ui.host)")
    parser.add_argument("--port", type=int, default=None,
                        help="port to listen on (default: ui.port, 8000)")


def address(cfg: Config, args: argparse.Namespace) -> tuple[str, int]:
    host = getattr(args, "host", None) or cfg.ui.host
    port = getattr(args, "port", None) or cfg.ui.port
    if not 1 <= int(port) <= 65535:
        raise UserFacingError(f"--port must be between 1 and 65535 (got {port})")
    return host, int(port)


def chainlit_environment(host: str, port: int, config_path: str | None,
                         base: dict[str, str]) -> dict[str, str]:
    """The environment Chainlit and app/ui.py run with (``base`` is left untouched)."""
    env = {k: v for k, v in base.items() if k not in REMOTE_DATA_VARS}
    env["CHAINLIT_APP_ROOT"] = str(REPO_ROOT)
    env["CHAINLIT_HOST"] = host
    env["CHAINLIT_PORT"] = str(port)
    if config_path:
        env["PUBMED_ASSISTANT_CFG"] = str(Path(config_path).expanduser().resolve())
    env["TRACELOOP_TELEMETRY"] = "false"  # Chainlit's Literal AI client bundles Traceloop
    offline_env(env)
    return env


def check_port_free(host: str, port: int) -> None:
    """Fail early with a clear message instead of uvicorn's log line when the port is taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as err:
            raise UserFacingError(
                f"cannot listen on {host}:{port} ({err.strerror or err}); is another server "
                f"running there? Stop it or pass --port to use another port") from None


def browser_url(host: str, port: int) -> str:
    shown = "localhost" if host in ("127.0.0.1", "0.0.0.0", "::", "::1", "localhost") else host
    return f"http://{shown}:{port}"


def run(cfg: Config, args: argparse.Namespace) -> int:
    host, port = address(cfg, args)
    if "chainlit.config" in sys.modules:  # its settings were read from another folder already
        raise UserFacingError("Chainlit was imported before `serve` could configure it; run "
                              "`python -m app serve` in a fresh process")
    check_port_free(host, port)
    env = chainlit_environment(host, port, getattr(args, "config", None), dict(os.environ))
    for key in REMOTE_DATA_VARS:
        os.environ.pop(key, None)
    os.environ.update(env)

    from chainlit.cli import run_chainlit
    from chainlit.config import config as chainlit_config

    from app import dense_build

    # a lexical-only index (make run): the dense index is embedded meanwhile, in another process
    if dense_build.start_if_pending(cfg, getattr(args, "config", None)) is not None:
        print("semantic index: building in the background (the chat uses keyword search until "
              f"it is ready; log: {dense_build.log_path(cfg)})", flush=True)
    if cfg.ui.auth == "none" and host not in ("127.0.0.1", "localhost", "::1"):
        print(f"warning: serving on {host} with ui.auth: none: anyone who reaches this port is "
              "the local user and sees every conversation; set ui.auth: password in cfg.yaml "
              "(README \"Chat history\")", file=sys.stderr, flush=True)
    chainlit_config.run.headless = True
    chainlit_config.run.watch = False
    print(f"PubMed assistant: serving the chat at {browser_url(host, port)} (Ctrl+C stops it)",
          flush=True)
    run_chainlit(str(UI_SCRIPT))
    return 0
