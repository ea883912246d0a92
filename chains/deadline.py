"""A time limit on a token stream: generation stops, and the caller says so, when it runs out.

The model streams from a worker thread; leaving the stream closes it, which sets the thread's stop
flag (llms/hf_chat.py, llms/streaming.py), so the model stops too and the next question is not
stuck behind it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import TypeVar

T = TypeVar("T")


class Deadline:
    """``async for x in deadline.limit(stream)``: the items until ``at`` (a ``perf_counter``
    time); ``expired`` tells afterwards whether the stream was cut."""

    def __init__(self, at: float) -> None:
        self.at = at
        self.expired = False

    @classmethod
    def after(cls, seconds: float, start: float | None = None) -> Deadline:
        return cls((time.perf_counter() if start is None else start) + seconds)

    async def limit(self, stream: AsyncIterator[T]) -> AsyncIterator[T]:
        iterator = aiter(stream)
        try:
            while True:
                remaining = self.at - time.perf_counter()
                if remaining <= 0:
                    self.expired = True
                    return
                try:
                    item = await asyncio.wait_for(anext(iterator), remaining)
                except StopAsyncIteration:
                    return
                except TimeoutError:
                    self.expired = True
                    return
                yield item
        finally:
            aclose = getattr(iterator, "aclose", None)
            if aclose is not None:
                await aclose()


def stopped_note(seconds: float) -> str:
    return (f" … (Stopped: the answer took longer than the {seconds:g} s limit, llm.timeout_s in "
            "cfg.yaml.)")
