"""A scripted stand-in for ``chains.assistant.Assistant`` (same ``astream`` contract), for UI tests
that must not load the model: it records how it was called and whether its stream was closed."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator

from chains.result import AnswerResult, DoneEvent, PreparedEvent, Source, TokenEvent
from tests.helpers import REFUSAL

XSS_TITLE = "<img src=x onerror=alert(1)> <script>alert(1)</script> Intelligence and working memory"


def fake_sources() -> list[Source]:
    return [
        Source(n=1, pmid="31234567", title="Childhood IQ and adult health: a cohort study",
               url="https://pubmed.ncbi.nlm.nih.gov/31234567/", year=2019,
               journal="Intelligence", authors=["Deary IJ", "Batty GD"], confidence=0.8,
               volume="41", issue="3", pages="101-9", doi="10.1016/j.intell.2019.05.001",
               passage="BACKGROUND: Higher childhood IQ predicts better health.\nRESULTS: Yes."),
        Source(n=2, pmid="29999999", title=XSS_TITLE,
               url="https://pubmed.ncbi.nlm.nih.gov/29999999/", year=2021,
               journal="J [Evil] *Journal*", authors=["O'Brien <b>X</b>"], confidence=0.4,
               passage="Abstract with <script>alert(2)</script> and "
                       "[a link](javascript:alert(3))."),
    ]


class FakeAssistant:
    """Yields Prepared, the answer in pieces, Done; refuses questions mentioning football; a
    question asking for a "long answer" gets 400 tokens (to test stopping and queueing), one asking
    for a "very long answer" the same at 0.1 s a token at least (40 s: surely still running when a
    test looks under any load, without redrawing the page a hundred times a second).

    ``token_delay`` sleeps between tokens; ``blocking=True`` sleeps with ``time.sleep`` (as a
    synchronous model call would), so a test can tell whether it runs off the caller's loop.
    """

    retriever = None  # no search: the chat shows no retrieval line

    def __init__(self, tokens: list[str] | None = None, token_delay: float = 0.0,
                 blocking: bool = False, sources: list[Source] | None = None) -> None:
        self.tokens = tokens if tokens is not None else [
            "Higher childhood IQ ", "predicts better adult health [1]", " <b>and</b> more [2]."]
        self.token_delay = token_delay
        self.blocking = blocking
        self.sources = sources if sources is not None else fake_sources()
        self.calls: list[dict] = []
        self.threads: set[int] = set()
        self.tokens_sent = 0
        self.closed = 0
        self.active = 0
        self.max_active = 0
        self.started = threading.Event()

    async def astream(self, question: str, *, mode: str,
                      history: list[tuple[str, str]]) -> AsyncIterator:
        self.calls.append({"question": question, "mode": mode, "history": list(history)})
        self.threads.add(threading.get_ident())
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        self.started.set()
        try:
            if "football" in question.lower():
                yield PreparedEvent(searched_question=question)
                yield TokenEvent(text=REFUSAL)
                yield DoneEvent(result=AnswerResult(answer=REFUSAL, mode=mode, question=question,
                                                    searched_question=question, refused=True))
                return
            lowered = question.lower()
            tokens = ["word "] * 400 if "long answer" in lowered else self.tokens
            delay = self.token_delay
            if "very long answer" in lowered:
                delay = max(delay, 0.1)
            # a follow-up names the turn it continues (tests tell whose history it was given)
            searched = f"{question} (rewritten) after {history[-1][0]}" if history else question
            subs = [f"{question} variant {i}" for i in (1, 2)] if mode == "multi-query" else []
            filters = {"year_min": 2018} if "since 2018" in question else {}
            yield PreparedEvent(searched_question=searched, sub_queries=subs, filters=filters,
                                sources=self.sources)
            for token in tokens:
                if delay:
                    if self.blocking:
                        time.sleep(delay)  # blocking on purpose
                    else:
                        await asyncio.sleep(delay)
                self.tokens_sent += 1
                yield TokenEvent(text=token)
            yield DoneEvent(result=AnswerResult(
                answer="".join(tokens), mode=mode, question=question,
                searched_question=searched, sub_queries=subs, filters=filters,
                sources=self.sources))
        finally:
            self.active -= 1
            self.closed += 1


def corpus_sources(pmids: list[str], corpus_files: list[str]) -> list[Source]:
    """Sources built from real articles of the shared corpus (their titles, abstracts and the
    designs ingest.design gives them), numbered in the order of ``pmids``."""
    from pathlib import Path

    from ingest.design import classify
    from ingest.models import Article
    from ingest.sources import iter_file

    wanted = {p: i for i, p in enumerate(pmids)}
    found: dict[str, Article] = {}
    for f in corpus_files:
        for a in iter_file(Path(f)):
            if isinstance(a, Article) and a.pmid in wanted:
                found[a.pmid] = a
    sources = []
    for pmid in pmids:
        a = found[pmid]
        d = classify(a)
        sources.append(Source(
            n=wanted[pmid] + 1, pmid=a.pmid, title=a.title, url=f"https://pubmed.ncbi.nlm.nih.gov/{a.pmid}/",
            year=a.year, journal=a.journal, authors=list(a.authors), confidence=0.7,
            passage=a.abstract[:400], abstract=a.abstract, design=d.label,
            design_source=d.source, design_rule=d.rule))
    return sources
