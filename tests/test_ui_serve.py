"""``python -m app serve`` settings and the committed Chainlit configuration."""

from __future__ import annotations

import argparse
import json
import socket
import tomllib
from pathlib import Path

import pytest

from app import serve
from app.cli import build_parser
from app.config import REPO_ROOT, config_from_dict
from app.errors import UserFacingError

CHAINLIT_DIR = REPO_ROOT / ".chainlit"


def test_serve_arguments_default_to_the_config() -> None:
    args = build_parser().parse_args(["serve"])
    assert args.host is None and args.port is None
    cfg = config_from_dict({})
    assert serve.address(cfg, args) == ("127.0.0.1", 8000)
    args = build_parser().parse_args(["serve", "--host", "0.0.0.0", "--port", "8123"])
    assert serve.address(cfg, args) == ("0.0.0.0", 8123)
    assert serve.address(config_from_dict({"ui": {"port": 9000}}),
                         argparse.Namespace()) == ("127.0.0.1", 9000)


def test_bad_port_is_a_clear_error() -> None:
    with pytest.raises(UserFacingError, match="--port must be between 1 and 65535"):
        serve.address(config_from_dict({}), argparse.Namespace(host=None, port=70000))


def test_environment_points_chainlit_at_the_repo_and_the_config(tmp_path: Path) -> None:
    base = {"LITERAL_API_KEY": "secret", "DATABASE_URL": "postgres://x", "PATH": "/bin"}
    cfg_file = tmp_path / "cfg.yaml"
    env = serve.chainlit_environment("127.0.0.1", 8123, str(cfg_file), base)
    assert env["CHAINLIT_APP_ROOT"] == str(REPO_ROOT)
    assert env["CHAINLIT_HOST"] == "127.0.0.1" and env["CHAINLIT_PORT"] == "8123"
    assert env["PUBMED_ASSISTANT_CFG"] == str(cfg_file.resolve())
    assert "LITERAL_API_KEY" not in env and "DATABASE_URL" not in env
    assert env["PATH"] == "/bin" and env["HF_HUB_OFFLINE"] == "1"
    assert base["LITERAL_API_KEY"] == "secret"  # the caller's mapping is not changed
    assert "PUBMED_ASSISTANT_CFG" not in serve.chainlit_environment("h", 1, None, {})


def test_a_taken_port_is_reported_before_chainlit_starts() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(UserFacingError, match=f"cannot listen on 127.0.0.1:{port}"):
            serve.check_port_free("127.0.0.1", port)


def test_browser_url_names_localhost_for_local_addresses() -> None:
    assert serve.browser_url("127.0.0.1", 8000) == "http://localhost:8000"
    assert serve.browser_url("0.0.0.0", 8000) == "http://localhost:8000"
    assert serve.browser_url("10.1.2.3", 80) == "http://10.1.2.3:80"


def test_committed_chainlit_config_is_safe_and_offline() -> None:
    data = tomllib.loads((CHAINLIT_DIR / "config.toml").read_text(encoding="utf-8"))
    features, ui = data["features"], data["UI"]
    assert features["unsafe_allow_html"] is False
    assert data["project"]["allow_origins"] == []  # the server's own origin only (web_security)
    assert features["user_message_markdown"] is False
    assert features["spontaneous_file_upload"]["enabled"] is False
    assert features["mcp"]["enabled"] is False and features["audio"]["enabled"] is False
    for key in ("custom_meta_url", "custom_meta_image_url", "logo_file_url",
                "default_avatar_file_url"):
        assert not str(ui.get(key, "")).startswith(("http:", "https:", "//")), key
    assert data["meta"]["generated_by"] == "2.12.0"


# Our wording where Chainlit's is a developer's: (file, key path) -> text. The header button
# that opens chainlit.md says "Help", not "Readme"; the message box asks for a question; "New
# chat" says the conversation is kept.
TRANSLATION_OVERRIDES = {
    ("en-US.json", ("navigation", "header", "readme")): "Help",
    ("en-US.json", ("chat", "input", "placeholder")): "Ask a biomedical question...",
    # history is kept: "New chat" does not clear it (issue #36)
    ("en-US.json", ("navigation", "newChat", "dialog", "description")): (
        "This starts a new conversation; follow-up questions there do not see this one. This "
        "conversation stays in Past chats (the sidebar)."),
}


def test_committed_translations_are_chainlits_own() -> None:
    """`chainlit init` copies its translations into .chainlit/translations; the committed copies
    must be exactly those but for TRANSLATION_OVERRIDES (regenerate with `CHAINLIT_APP_ROOT=.
    chainlit init` after an upgrade, having removed the folder, then apply the overrides)."""
    import chainlit.config as cl_config

    package = Path(cl_config.TRANSLATIONS_DIR)
    shipped = sorted(p.name for p in package.glob("*.json"))
    committed = sorted(p.name for p in (CHAINLIT_DIR / "translations").glob("*.json"))
    assert committed == shipped
    for name in shipped:
        ours = json.loads((CHAINLIT_DIR / "translations" / name).read_text(encoding="utf-8"))
        theirs = json.loads((package / name).read_text(encoding="utf-8"))
        for (file, path), text in TRANSLATION_OVERRIDES.items():
            if file == name:
                *parents, key = path
                node = theirs
                for part in parents:
                    node = node[part]
                node[key] = text
        assert ours == theirs, name


def test_serve_refuses_to_run_once_chainlit_was_configured_elsewhere() -> None:
    import chainlit.config  # noqa: F401  (as any earlier import in this process would)

    with pytest.raises(UserFacingError, match="fresh process"):
        serve.run(config_from_dict({}), argparse.Namespace(host=None, port=None, config=None))
