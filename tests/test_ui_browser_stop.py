"""Stop in the chat with the real model (SmolLM2-135M writing, ``answer.style: auto``): the Stop
button ends the generation itself, not only what the page shows.

The server allows a long answer (``max_new_tokens`` 512, tens of seconds of generation here) and
Stop is clicked as soon as the search step is shown, when generation starts, so the click always
comes long before the answer could end on its own. Whether the model really stopped is read from
the server log, where the model backend (gpt4all or transformers) records how each generation
ended.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.harness import (
    ChatPage,
    Server,
    chromium,
    require_chromium,
    serving_chat,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

MAX_NEW_TOKENS = 512
QUESTION = "Is childhood intelligence associated with adult mortality?"
REFUSED = "Who won the 2014 football World Cup?"
GENERATION_ENDED = re.compile(
    r"generation ended after (\d+) new tokens \(max_new_tokens (\d+)\): (stopped by its reader|"
    r"finished)")
CANCELLED = "answer cancelled (stop button or closed tab)"
STOPPED_NOTE = re.compile(r"Stopped\.")  # app/ui.py's note (Chainlit's own says "stopped.")
LOG_WAIT_S = 300  # bound on the model noticing; a generation left running ends within it too


@pytest.fixture(scope="module")
def server(small_index_cfg: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    require_chromium()
    folder = tmp_path_factory.mktemp("ui_stop")
    edit = {"llm": {"max_new_tokens": MAX_NEW_TOKENS}, "answer": {"style": "auto"}}
    with serving_chat(small_index_cfg, folder, edit) as srv:
        yield srv


def _generation_end(server: Server, after: int) -> re.Match[str]:
    """The first "generation ended" line the server logs after offset ``after`` (bounded wait)."""
    deadline = time.monotonic() + LOG_WAIT_S
    while time.monotonic() < deadline:
        found = GENERATION_ENDED.search(server.log()[after:])
        if found:
            return found
        time.sleep(0.5)
    raise AssertionError(f"no generation ended within {LOG_WAIT_S} s:\n{server.log()[after:]}")


def test_stop_ends_the_generation_and_the_chat_goes_on(server: Server) -> None:
    with chromium() as browser:
        chat = ChatPage(browser, server.url).open()
        try:
            log_at = len(server.log())
            before = chat.send(QUESTION)
            chat.page.locator("button#step-Search").wait_for(timeout=240_000)  # generating now
            chat.page.click("#stop-button")
            chat.page.get_by_text("Task manually stopped.").wait_for()

            ended = _generation_end(server, log_at)
            new_tokens, limit, how = int(ended[1]), int(ended[2]), ended[3]
            assert how == "stopped by its reader", ended[0]  # not left to run to its end
            assert new_tokens < limit == MAX_NEW_TOKENS, ended[0]
            assert CANCELLED in server.log()[log_at:]

            stopped = chat.page.locator(".message-content", has_text=STOPPED_NOTE).last
            shown = stopped.inner_text()
            assert shown.rstrip().endswith("Stopped.") and "Sources" not in shown, shown
            # the chat answers the next question, and the stopped answer never grows again
            answer = chat.ask(REFUSED)
            assert "Sorry, but I don't know" in answer.inner_text()
            assert chat.answers().count() == before + 1  # the stopped answer never finished
            assert stopped.inner_text() == shown
        finally:
            chat.close()
