"""The UI's backend queue: model work off the server loop, one request at a time, real stop."""

from __future__ import annotations

import asyncio
import threading

import pytest

from app.errors import IndexMissingError
from app.ui import Backend, LoopThread
from chains.result import DoneEvent, PreparedEvent, TokenEvent
from tests.browser.fakes import FakeAssistant
from tests.helpers import until


async def _collect(backend: Backend, assistant: FakeAssistant, question: str = "q",
                   mode: str = "plain") -> list:
    async with backend.turn(), backend.stream(assistant, question, mode, []) as events:
        return [e async for e in events]


@pytest.mark.asyncio
async def test_stream_runs_on_the_worker_thread_and_relays_events_in_order() -> None:
    fake = FakeAssistant(token_delay=0.01, blocking=True)
    backend = Backend(lambda: fake)
    assistant = await backend.assistant()
    events = await _collect(backend, assistant)
    assert isinstance(events[0], PreparedEvent)
    assert [e.text for e in events if isinstance(e, TokenEvent)] == fake.tokens
    assert isinstance(events[-1], DoneEvent)
    assert threading.get_ident() not in fake.threads and len(fake.threads) == 1
    assert fake.closed == 1


@pytest.mark.asyncio
async def test_cancelling_the_consumer_stops_the_stream_on_the_worker() -> None:
    fake = FakeAssistant(tokens=["tok "] * 200, token_delay=0.01)
    backend = Backend(lambda: fake)
    assistant = await backend.assistant()
    got: list = []

    async def consume() -> None:
        async with backend.turn(), backend.stream(assistant, "q", "plain", []) as events:
            async for event in events:
                got.append(event)

    task = asyncio.create_task(consume())
    while len(got) < 5:
        await asyncio.sleep(0.005)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # __aexit__ returned only once the stream was closed on the worker
    assert fake.closed == 1 and fake.active == 0
    sent = fake.tokens_sent
    await asyncio.sleep(0.1)
    assert fake.tokens_sent == sent < 200
    assert not backend.busy


async def _until_queued(task: asyncio.Task) -> None:
    """Let ``task`` run until it blocks (on the generation slot: it must not have finished)."""
    await asyncio.sleep(0.01)
    assert not task.done(), "the request should be waiting for the slot"


@pytest.mark.asyncio
async def test_requests_get_the_slot_in_the_order_they_asked_and_never_overlap() -> None:
    fake = FakeAssistant(token_delay=0.01)
    backend = Backend(lambda: fake)
    assistant = await backend.assistant()
    slot_order: list[str] = []  # who held the generation slot, in the order it was granted

    async def request(question: str) -> list:
        async with backend.turn():
            slot_order.append(question)
            async with backend.stream(assistant, question, "plain", []) as events:
                return [e async for e in events]

    asked = ["q2", "q0", "q3", "q1"]  # started in this order (neither sorted nor reversed)
    tasks: dict[str, asyncio.Task] = {}
    async with backend.turn():  # the slot is taken: each request below has to queue behind it
        for question in asked:
            tasks[question] = asyncio.create_task(request(question))
            await _until_queued(tasks[question])
        assert slot_order == [] and fake.calls == [] and backend.busy
    # awaited in another order on purpose: the order comes from the queue, not from the caller
    results = {q: await tasks[q] for q in sorted(tasks, reverse=True)}
    assert slot_order == asked
    assert [call["question"] for call in fake.calls] == asked  # the model saw them in turn too
    assert all(results[q][-1].result.question == q for q in asked)
    assert fake.max_active == 1 and not backend.busy


@pytest.mark.asyncio
async def test_busy_is_visible_while_a_request_holds_the_slot() -> None:
    backend = Backend(FakeAssistant)
    assert not backend.busy
    async with backend.turn():
        assert backend.busy
    assert not backend.busy


@pytest.mark.asyncio
async def test_errors_in_the_stream_reach_the_caller() -> None:
    class Broken(FakeAssistant):
        async def astream(self, question, *, mode, history):  # type: ignore[override]
            yield PreparedEvent(searched_question=question)
            raise IndexMissingError("index gone")

    backend = Backend(Broken)
    assistant = await backend.assistant()
    with pytest.raises(IndexMissingError, match="index gone"):
        await _collect(backend, assistant)
    assert not backend.busy


@pytest.mark.asyncio
async def test_a_failed_load_is_retried_and_loading_runs_on_the_worker() -> None:
    attempts: list[int] = []

    def factory() -> FakeAssistant:
        attempts.append(threading.get_ident())
        if len(attempts) == 1:
            raise IndexMissingError("build the index first")
        return FakeAssistant()

    backend = Backend(factory)
    with pytest.raises(IndexMissingError):
        await backend.assistant()
    assert not backend.loaded
    first = await backend.assistant()
    assert backend.loaded and await backend.assistant() is first
    assert len(attempts) == 2 and threading.get_ident() not in attempts


@pytest.mark.asyncio
async def test_concurrent_first_requests_load_once() -> None:
    calls: list[int] = []

    def factory() -> FakeAssistant:
        calls.append(1)
        return FakeAssistant()

    backend = Backend(factory, LoopThread("test-worker"))
    a, b = await asyncio.gather(backend.assistant(), backend.assistant())
    assert a is b and len(calls) == 1


@pytest.mark.asyncio
async def test_a_waiting_request_is_told_how_many_come_first_as_the_queue_moves() -> None:
    backend = Backend(FakeAssistant)
    seen: dict[str, list[int]] = {"a": [], "b": [], "c": []}
    go = {name: asyncio.Event() for name in seen}

    async def request(name: str) -> None:
        async def on_wait(ahead: int) -> None:
            seen[name].append(ahead)

        async with backend.turn(on_wait=on_wait, poll_s=0.01):
            await go[name].wait()

    assert backend.ahead() == 0
    async with backend.turn():  # the slot is taken
        tasks = {}
        for name in seen:
            tasks[name] = asyncio.create_task(request(name))
            await _until_queued(tasks[name])
        assert backend.ahead() == 4  # the holder and three waiting
        tasks["b"].cancel()  # a closed tab leaves the queue
        with pytest.raises(asyncio.CancelledError):
            await tasks["b"]
        await until(lambda: seen["c"][-1] == 2, seen)  # b left: the holder and a are ahead
    await until(lambda: seen["c"][-1] == 1, seen)  # the holder is done and a has the slot
    go["a"].set()
    await tasks["a"]
    go["c"].set()
    await tasks["c"]
    assert seen["a"] == [1] and seen["b"] == [2]
    assert seen["c"] == [3, 2, 1]  # b left, then the holder finished; a was served first
    assert backend.ahead() == 0 and not backend.busy
