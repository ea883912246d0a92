"""``python -m app bench chat``: reading the chat protocol's events, the mixed-history and
stored-answer checks, and a small real run (2 conversations x 2 questions: the real server, the
default model, the small test index, the real Socket.IO protocol)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.chat import (
    ChatClient,
    Question,
    Turn,
    conversation_script,
    history_folder,
    history_problems,
    read_turn,
    stored_answers_check,
)
from tests.browser.harness import REPO_ROOT, write_test_config

LINK = "https://pubmed.ncbi.nlm.nih.gov/{}/"


def _answer(pmid: str = "1") -> str:
    return (f"Yes [1].\n\n**Sources**\n\n[1] [A title]({LINK.format(pmid)})\n\n"
            "*Mode: conversational*")


def test_a_turn_is_read_from_what_the_page_is_sent() -> None:
    events: list[tuple[float, str, Any]] = [
        (10.0, "task_start", {}),
        (10.1, "new_message", {"id": "q", "type": "assistant_message", "output": "Queued: wait"}),
        (12.0, "delete_message", {"id": "q"}),
        (12.1, "new_message", {"id": "s", "type": "tool", "name": "Search", "output": ""}),
        (12.3, "update_message", {"id": "s", "type": "tool", "name": "Search", "output":
                                  "**Rewritten question:** Is IQ linked to sleep\\? And in "
                                  "women\\?\n\n**Sources found:** 3"}),
        (12.4, "stream_start", {"id": "a", "type": "assistant_message", "output": "Yes"}),
        (12.5, "stream_token", {"id": "a", "token": " [1]."}),
        (13.0, "update_message", {"id": "a", "type": "assistant_message", "output": _answer()}),
        (13.1, "task_end", {}),
    ]
    turn = Turn("And in women?", True)
    read_turn(turn, events, sent=10.0)
    assert turn.notices == ["Queued: wait"] and turn.notice_s == pytest.approx(0.1)
    assert turn.search_step_s == pytest.approx(2.1)
    assert turn.searched == "Is IQ linked to sleep? And in women?"
    assert turn.first_words_s == pytest.approx(2.4) and turn.answer_s == pytest.approx(3.0)
    assert turn.answer_id == "a" and turn.sources == 1 and turn.errors == []


def _turn(question: str, searched: str, follow_up: bool = False, sources: int = 1) -> Turn:
    label = "Rewritten question" if follow_up else "Searched for"
    return Turn(question, follow_up, answer_s=1.0, searched=searched, sources=sources,
                search_step=f"**{label}:** {searched}")


def test_mixed_histories_are_found() -> None:
    script = conversation_script("sleep duration", 2)
    assert script == [Question("Is intelligence associated with sleep duration?", False),
                      Question("Does that hold in women?", True)]
    own = [("sleep", [_turn(script[0].text, script[0].text),
                      _turn(script[1].text, f"{script[0].text} {script[1].text}", True)]),
           ("autism", [_turn("Is intelligence associated with autism?",
                             "Is intelligence associated with autism?")])]
    assert history_problems(own) == []
    # the follow-up searched with the other conversation's question
    mixed = [("sleep", [own[0][1][0], _turn(script[1].text, "Is intelligence associated with "
                                            "autism? Does that hold in women?", True)]),
             own[1]]
    problems = history_problems(mixed)
    assert any("names ['autism']" in p for p in problems)
    assert any("not its topic" in p for p in problems)
    # the follow-up searched without any history, though its first question was answered
    alone = [("sleep", [own[0][1][0], Turn(script[1].text, True, answer_s=1.0,
                                           searched=script[1].text, search_step="**Searched "
                                           "for:** Does that hold in women?")])]
    assert any("without its history" in p for p in history_problems(alone))
    # after a refusal (no sources: not in the history) a follow-up has nothing to use
    refused = [("sleep", [_turn(script[0].text, script[0].text, sources=0), alone[0][1][1]])]
    assert history_problems(refused) == []


def test_stored_answers_check_finds_missing_and_doubled_answers(tmp_path: Path) -> None:
    assert stored_answers_check(None, ["a"])["checked"] is False
    assert stored_answers_check(tmp_path, ["a"])["checked"] is False  # no database there
    with sqlite3.connect(tmp_path / "chat.db") as db:
        db.execute("CREATE TABLE steps (id TEXT, output TEXT)")  # no key: a double can be stored
        db.executemany("INSERT INTO steps VALUES (?, ?)", [("a", "x"), ("b", "y"), ("b", "y")])
    result = stored_answers_check(tmp_path, ["a", "b", "c"])
    assert result["checked"] and not result["ok"]
    assert result["missing"] == ["c"] and result["stored_more_than_once"] == ["b"]
    assert stored_answers_check(tmp_path, ["a"])["ok"] is True


def test_the_bench_never_stores_in_the_users_own_history(small_index_cfg: Any,
                                                          tmp_path: Path) -> None:
    scratch = tmp_path / "run"
    assert history_folder(small_index_cfg, None, scratch) == scratch / "history"
    assert history_folder(small_index_cfg, str(tmp_path / "d"), scratch) == tmp_path / "d"
    off = small_index_cfg.model_copy(update={"history": small_index_cfg.history.model_copy(
        update={"enabled": False})})
    assert history_folder(off, None, scratch) is None


def test_the_client_asks_only_after_the_chat_start_has_ended() -> None:
    """The order a real server sent on one connection: mode buttons first, the start's task_end
    after them. A question sent between the two would take that task_end for its answer's end and
    its answer would be filed under the next question. Mutation: ``_started`` true on the mode
    buttons alone -> the first check fails."""
    client = ChatClient("http://127.0.0.1:1")
    for name in ("task_end", "task_start", "new_message", "set_commands", "update_message"):
        client.events.append((0.0, name, {}))
    assert not client._started()
    client.events.append((0.0, "task_end", {}))
    assert client._started()


@pytest.mark.slow
def test_a_small_real_run_answers_every_question_without_mixing_histories(
        small_index_cfg: Any, tmp_path: Path) -> None:
    cfg = write_test_config(small_index_cfg, tmp_path / "cfg.yaml")
    out = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "app", "--config", str(cfg), "bench", "chat",
         "--conversations", "2", "--questions", "2", "--out", str(out),
         "--server-log", str(tmp_path / "server.log"), "--timeout", "1200"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rep = json.loads(out.read_text(encoding="utf-8"))
    assert rep["ok"] and rep["answers"] == rep["answers_expected"] == 4, proc.stdout
    assert rep["errors"] == [] and rep["mixed_history_problems"] == []
    for conversation in rep["transcripts"]:
        first, follow_up = conversation["turns"]
        assert conversation["topic"].lower() in first["searched"].lower()
        if first["sources"]:  # in the history: the follow-up is resolved against its topic
            assert conversation["topic"].lower() in follow_up["searched"].lower(), follow_up
            assert follow_up["searched"] != follow_up["question"], follow_up
    # both asked at once and the model answers one at a time: one waited, and was told so
    assert rep["questions_with_a_notice"] >= 1, rep["notices_shown"]
    assert any(text.startswith("Queued") for text in rep["notices_shown"])
    assert rep["time_to_answer_s"]["n"] == 4 and rep["server_rss_mib"]["peak"] > 0
    # the server keeps chat history in the run's own folder: every answer stored there, once;
    # the configured history folder (a user's own conversations) gains nothing
    stored = rep["stored"]
    assert stored["checked"] and stored["answers"] == 4 and stored["ok"], stored
    assert not (tmp_path / "history" / "history.db").exists(), stored["database"]
    assert "bench chat: 2 conversations x 2 questions" in proc.stdout and "OK" in proc.stdout
