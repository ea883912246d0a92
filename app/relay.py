"""The one :class:`~chains.assistant.Assistant` of the chat process, off the server's loop.

The model is not thread-safe and slow, so all of its work runs on one background thread with its
own event loop (the server's loop never blocks) and one request at a time holds the generation
slot (others see a "Queued" message). Stopping a request cancels the stream on that thread, not
just the display.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, Literal, Protocol, Self, TypeVar

from retrievers.service import SearchService

T = TypeVar("T")
# A request's place in the queue: its acquisition of the generation slot (an asyncio.Lock's)
SlotTicket = asyncio.Future[Literal[True]]


class AssistantLike(Protocol):
    def astream(self, question: str, *, mode: str,
                history: list[tuple[str, str]]) -> AsyncIterator[Any]: ...

    @property
    def retriever(self) -> SearchService | None:
        """The assistant's search (None: a stand-in without one, e.g. the browser tests')."""
        ...


class LoopThread:
    """A daemon thread running its own asyncio loop; coroutines submitted here run off the server's
    loop, one thread for all model work (the backend is not thread-safe)."""

    def __init__(self, name: str = "assistant-worker") -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._guard = threading.Lock()

    def _ensure(self) -> asyncio.AbstractEventLoop:
        with self._guard:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name=self._name, daemon=True).start()
                self._loop = loop
            return self._loop

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self._ensure())


_END = object()


class RelayedStream:
    """Runs ``make_stream()`` (an async iterator) on a :class:`LoopThread` and hands its events to
    the caller's loop. Leaving the ``async with`` early (stop button, error) cancels the stream on
    the worker and waits until it has really stopped, so the next request never overlaps it."""

    def __init__(self, worker: LoopThread, make_stream: Callable[[], AsyncIterator[Any]]) -> None:
        self._worker = worker
        self._make_stream = make_stream
        # (True, event or _END) or (False, the error the stream raised)
        self._queue: asyncio.Queue[tuple[bool, Any]] = asyncio.Queue()
        self._finished = asyncio.Event()
        self._future: concurrent.futures.Future[None] | None = None

    async def _relay(self, home: asyncio.AbstractEventLoop) -> None:
        put = self._queue.put_nowait
        stream = None
        try:
            stream = self._make_stream()
            async for event in stream:
                home.call_soon_threadsafe(put, (True, event))
        except asyncio.CancelledError:
            raise
        except BaseException as err:  # handed to the caller, raised there
            home.call_soon_threadsafe(put, (False, err))
        finally:
            try:
                aclose = getattr(stream, "aclose", None)
                if aclose is not None:
                    await aclose()
            finally:
                home.call_soon_threadsafe(put, (True, _END))
                home.call_soon_threadsafe(self._finished.set)

    async def __aenter__(self) -> Self:
        self._future = self._worker.submit(self._relay(asyncio.get_running_loop()))
        return self

    def __aiter__(self) -> RelayedStream:
        return self

    async def __anext__(self) -> Any:
        ok, item = await self._queue.get()
        if not ok:
            raise item
        if item is _END:
            raise StopAsyncIteration
        return item

    async def __aexit__(self, *exc: object) -> None:
        if self._future is not None and not self._finished.is_set():
            self._future.cancel()  # cancels the relay task on the worker loop
        await _wait_even_if_cancelled(self._finished)


async def _wait_even_if_cancelled(event: asyncio.Event) -> None:
    """Wait for ``event``; a cancellation meanwhile is re-raised only once the event is set."""
    cancelled = False
    while not event.is_set():
        try:
            await asyncio.shield(event.wait())
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError


class Backend:
    """The assistant of this server process, loaded once on the worker thread, and the queue in
    front of it (an asyncio lock: one request generates, the others wait their turn)."""

    def __init__(self, factory: Callable[[], AssistantLike], worker: LoopThread | None = None):
        self._factory = factory
        self._worker = worker or LoopThread()
        self._assistant: AssistantLike | None = None
        self._loading: concurrent.futures.Future[AssistantLike] | None = None
        self._slot = asyncio.Lock()
        self._waiting: list[SlotTicket] = []  # requests' slot acquisitions, in arrival order

    @property
    def loaded(self) -> bool:
        return self._assistant is not None

    @property
    def busy(self) -> bool:
        return self._slot.locked()

    @property
    def load_error(self) -> str | None:
        """Why the last load failed (None: loaded, loading or not started); the next
        :meth:`assistant` call tries again."""
        f = self._loading
        if f is None or not f.done() or f.cancelled() or f.exception() is None:
            return None
        return str(f.exception())

    @property
    def queue_length(self) -> int:
        """Requests waiting for the slot or holding it (what the API's 429 is decided on)."""
        return self.ahead()

    async def _load_on_worker(self) -> AssistantLike:
        return self._factory()

    async def assistant(self) -> AssistantLike:
        """The assistant, loading it on the worker thread if needed. A failed load is retried by the
        next call (for example once the index has been built); an interrupted wait is not."""
        if self._assistant is not None:
            return self._assistant
        failed = self._loading is not None and self._loading.done() and (
            self._loading.cancelled() or self._loading.exception() is not None)
        if self._loading is None or failed:
            self._loading = self._worker.submit(self._load_on_worker())
        assistant: AssistantLike = await asyncio.shield(asyncio.wrap_future(self._loading))
        self._assistant = assistant
        return assistant

    def ahead(self, ticket: SlotTicket | None = None) -> int:
        """How many requests come before a waiting one (``ticket``; None: a request arriving now):
        the one holding the slot and those waiting since earlier (the slot is granted in order;
        one granted it a moment ago counts once, as the holder)."""
        waiting = self._waiting
        if ticket is not None:
            waiting = waiting[:waiting.index(ticket)] if ticket in waiting else []
        return sum(1 for f in waiting if not f.done()) + (1 if self.busy else 0)

    @contextlib.asynccontextmanager
    async def turn(self, on_wait: Callable[[int], Coroutine[Any, Any, None]] | None = None,
                   poll_s: float = 1.0) -> AsyncIterator[None]:
        """Hold the generation slot (waits while another request generates). While it waits
        behind others, ``on_wait(n)`` is awaited whenever the number ``n >= 1`` of requests ahead
        of it changes (checked every ``poll_s``), so the page can say how many come first."""
        acquire = asyncio.ensure_future(self._slot.acquire())
        self._waiting.append(acquire)
        try:
            shown = None
            while not acquire.done():
                if on_wait is not None and (n := self.ahead(acquire)) != shown and n > 0:
                    shown = n
                    await on_wait(n)
                await asyncio.wait({acquire}, timeout=poll_s)
            acquire.result()
        except BaseException:
            if acquire.done() and not acquire.cancelled() and acquire.exception() is None:
                self._slot.release()  # granted just as the wait was cancelled
            else:
                acquire.cancel()  # asyncio.Lock passes the slot on to the next waiter
            raise
        finally:
            self._waiting.remove(acquire)
        try:
            yield
        finally:
            self._slot.release()

    def stream(self, assistant: AssistantLike, question: str, mode: str,
               history: list[tuple[str, str]]) -> RelayedStream:
        history = list(history)
        return RelayedStream(
            self._worker, lambda: assistant.astream(question, mode=mode, history=history))
