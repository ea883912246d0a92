"""The one mode table (chains.modes.MODE_TABLE): a fourth mode is one row and one builder, and
the config type, the Assistant, the CLI's, eval's and bench's ``--mode`` choices and the chat's
mode picker all take it without another edit (issue #26)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.runnables import Runnable, RunnableLambda

from chains import modes
from chains.assistant import Assistant, InvalidModeError
from chains.modes import MODE_TABLE, ModeParts, ModeSpec, check_mode_names, make_search_step
from settings import config as settings_config
from settings.config import Config, ConfigError, config_from_dict
from tests.fake_retriever import FakeEncoder, FakeRetriever, make_doc

DOCS = [
    make_doc("11", "Methylphenidate for ADHD in adults", "Methylphenidate improved ADHD symptoms."),
    make_doc("22", "Stimulants in children with ADHD", "Stimulant medication helped children."),
    make_doc("33", "Amphetamine and attention", "Amphetamine improved attention in ADHD trials."),
]


def build_toy_chain(parts: ModeParts) -> Runnable:
    """The toy mode: plain search, then only the best source is kept for the answer."""

    def best_only(turn: Any) -> Any:
        return {**turn, "documents": turn["documents"][:1]}

    return (
        make_search_step(parts.retrieve) | RunnableLambda(best_only) | parts.answer_tail
    ).with_config(run_name="toy")


TOY = ModeSpec("toy", "Toy (best source only)", build_toy_chain, "toy keeps the best source only")


@pytest.fixture
def toy_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    """The only two edits a new mode needs: its row in the table (whose names the config type
    reads from the lowest layer) and its builder (above)."""
    monkeypatch.setattr(modes, "MODE_TABLE", (*MODE_TABLE, TOY))
    monkeypatch.setattr(settings_config, "MODE_NAMES", (*settings_config.MODE_NAMES, TOY.name))


def test_the_table_is_the_config_types_names() -> None:
    assert tuple(s.name for s in MODE_TABLE) == settings_config.MODE_NAMES
    with pytest.raises(RuntimeError, match="MODE_NAMES"):
        check_mode_names((*MODE_TABLE, TOY), settings_config.MODE_NAMES)


def test_an_unknown_mode_is_refused_by_the_config_and_the_assistant() -> None:
    with pytest.raises(ConfigError, match="toy"):
        config_from_dict({"chains": {"mode": "toy"}})
    a = Assistant.from_config(Config(), retriever=FakeRetriever(list(DOCS), k=3),
                              encoder=FakeEncoder())  # fmt: skip
    with pytest.raises(InvalidModeError, match="plain, conversational, multi-query"):
        a.ask("Does methylphenidate help ADHD?", mode="toy")


@pytest.mark.usefixtures("toy_mode")
def test_a_toy_mode_answers_through_the_assistant() -> None:
    cfg = config_from_dict({"chains": {"mode": "toy"}})
    assert cfg.chains.mode == "toy"
    a = Assistant.from_config(cfg, retriever=FakeRetriever(list(DOCS), k=3),
                              encoder=FakeEncoder())  # fmt: skip
    r = a.ask("Does methylphenidate improve ADHD symptoms?", mode=cfg.chains.mode)
    assert r.mode == "toy" and not r.refused
    assert [s.pmid for s in r.sources] == ["11"]  # the toy builder ran: one source only
    assert "[1]" in r.answer
    plain = a.ask("Does methylphenidate improve ADHD symptoms?", mode="plain")
    assert len(plain.sources) > 1  # the other modes are untouched


@pytest.mark.usefixtures("toy_mode")
@pytest.mark.parametrize(
    ("argv", "dest"),
    [
        (["ask", "Does it help?", "--mode", "toy"], "mode"),
        (["eval", "verdicts", "--questions", "q.jsonl", "--mode", "toy"], "mode"),
        (["eval", "grounding", "--questions", "q.jsonl", "--mode", "toy"], "mode"),
        (["bench", "answer", "--modes", "plain", "toy"], "modes"),
    ],
)
def test_a_toy_mode_is_a_choice_of_every_command(argv: list[str], dest: str) -> None:
    from app.cli import build_parser

    args = build_parser(argv).parse_args(argv)
    value = getattr(args, dest)
    assert value == "toy" or value == ["plain", "toy"]


@pytest.mark.asyncio
@pytest.mark.usefixtures("toy_mode")
async def test_a_toy_mode_is_in_the_chats_mode_picker(monkeypatch: pytest.MonkeyPatch) -> None:
    from chainlit.context import init_http_context
    from chainlit.user_session import user_session

    from app import mode_control, ui

    sent: list[list[dict[str, Any]]] = []

    async def show(selected: str) -> None:
        sent.append(mode_control.mode_commands(selected))

    async def no_status() -> None:
        return None

    monkeypatch.setattr(ui, "show_mode_buttons", show)
    monkeypatch.setattr(ui, "_show_index_status", no_status)
    monkeypatch.setattr(ui, "app_config", lambda: Config())
    init_http_context()
    await ui._chat_start()
    buttons = sent[0]
    assert [b["id"] for b in buttons] == [s.button_text for s in (*MODE_TABLE, TOY)]
    assert "toy keeps the best source only" in buttons[-1]["description"]
    assert [b["selected"] for b in buttons] == [True, False, False, False]  # cfg: plain
    assert mode_control.mode_for_message(TOY.button_text, "plain") == ("toy", False)
    assert mode_control.mode_for_message(None, "plain") == ("plain", True)
    user_session.set("mode", "toy")
    assert ui._current_mode() == "toy"


def test_without_the_toy_mode_the_commands_refuse_it() -> None:
    from app.cli import build_parser

    with pytest.raises(SystemExit):
        build_parser(["ask", "q", "--mode", "toy"]).parse_args(["ask", "q", "--mode", "toy"])


def test_the_tables_helpers() -> None:
    assert modes.mode_names() == ("plain", "conversational", "multi-query")
    assert modes.mode_labels()["plain"] == "Plain"


def test_questions_of_a_reopened_conversation_keep_its_stored_mode() -> None:
    from app import mode_control

    # the page still highlights the new chat's default: the conversation's own mode continues
    # it, for every question after the first too (the page still shows the default)
    resume = mode_control.mode_after_resume
    assert resume("plain", "plain", "conversational") == ("conversational", "conversational")
    # another button is the user's choice, and ends it; so does clearing the highlighted one
    assert resume("multi-query", "plain", "conversational") == ("multi-query", None)
    assert resume("plain", "plain", "conversational", unselected=True) == ("plain", None)
    assert resume("plain", "plain", None) == ("plain", None)
