"""One factory per chain step, each a named LCEL runnable (in the style of chat-langchain).

The :class:`~chains.assistant.Assistant` composes them per mode; each can also be used alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.runnables import Runnable, RunnableLambda

from chains.llm import with_max_tokens
from chains.prompts import format_history, format_source, render
from chains.queries import guard_rewrite, needs_context, parse_queries

MAX_PASSAGE_WORDS = 160  # a 135M model reads short passages better; also keeps prefill fast


def passage_of(doc: Document, max_words: int | None = MAX_PASSAGE_WORDS) -> str:
    words = doc.page_content.split()
    if max_words is None:
        return " ".join(words)
    return " ".join(words[:max_words]) + (" …" if len(words) > max_words else "")


def format_context(documents: Sequence[Document], max_words: int | None = MAX_PASSAGE_WORDS) -> str:
    if not documents:
        return "(no sources)"
    return "\n\n".join(
        format_source(
            i,
            str(d.metadata.get("title") or ""),
            d.metadata.get("year"),
            passage_of(d, max_words),
        )
        for i, d in enumerate(documents, start=1)
    )


def answer_messages(
    template: str,
    question: str,
    documents: Sequence[Document],
    max_words: int | None = MAX_PASSAGE_WORDS,
) -> list[BaseMessage]:
    """Sources first, then the question (short prompts work best for a tiny model)."""
    context = format_context(documents, max_words)
    return [HumanMessage(render(template, context=context, question=question))]


# ---- factories --------------------------------------------------------------------------------


def make_retrieve_step(retriever: Any) -> Runnable:
    """``{"question", "filters"?}`` -> the retriever's ``Retrieval``."""

    def _sync(inp: dict) -> Any:
        return retriever.retrieve(inp["question"], filters=inp.get("filters"), k=inp.get("k"))

    async def _async(inp: dict) -> Any:
        return await retriever.aretrieve(
            inp["question"], filters=inp.get("filters"), k=inp.get("k")
        )

    return RunnableLambda(_sync, afunc=_async).with_config(run_name="retrieve")


def make_rewrite_step(llm: BaseChatModel, template: str) -> Runnable:
    """``{"question", "history": [(user, assistant)]}`` -> ``{"question", "raw", "fallback"}``.

    Only follow-ups that depend on the conversation are rewritten; the LLM's rewrite goes
    through :func:`chains.queries.guard_rewrite`.
    """
    prompt = RunnableLambda(
        lambda inp: [
            HumanMessage(
                render(template, history=format_history(inp["history"]), question=inp["question"])
            )
        ]
    ).with_config(run_name="rewrite_prompt")
    generate = (prompt | with_max_tokens(llm, 48) | StrOutputParser()).with_config(
        run_name="rewrite_llm"
    )

    def _guard(inp: dict, raw: str) -> dict:
        previous = [u for u, _ in inp["history"]]
        question, fallback = guard_rewrite(inp["question"], raw, previous)
        return {"question": question, "raw": raw, "fallback": fallback}

    def _as_is(inp: dict) -> dict | None:
        # First turn, or a follow-up that stands on its own ("Who won the World Cup?"): search
        # it unchanged; a tiny model's rewrite would only drag the old topic into it.
        if not inp.get("history") or not needs_context(inp["question"]):
            return {"question": inp["question"], "raw": "", "fallback": False}
        return None

    def _sync(inp: dict) -> dict:
        return _as_is(inp) or _guard(inp, generate.invoke(inp))

    async def _async(inp: dict) -> dict:
        return _as_is(inp) or _guard(inp, await generate.ainvoke(inp))

    return RunnableLambda(_sync, afunc=_async).with_config(run_name="rewrite_question")


def make_multi_query_step(llm: BaseChatModel, template: str, n: int) -> Runnable:
    """``{"question"}`` -> up to ``n`` alternative queries (parsed robustly, never the original)."""
    prompt = RunnableLambda(
        lambda inp: [HumanMessage(render(template, question=inp["question"], n=n))]
    ).with_config(run_name="multi_query_prompt")
    generate = prompt | with_max_tokens(llm, 24 * n + 16) | StrOutputParser()

    def _parse(inp: dict, raw: str) -> list[str]:
        return parse_queries(raw, n, original=inp["question"])

    async def _async(inp: dict) -> list[str]:
        return _parse(inp, await generate.ainvoke(inp))

    return RunnableLambda(lambda inp: _parse(inp, generate.invoke(inp)), afunc=_async).with_config(
        run_name="generate_queries"
    )


def make_answer_step(llm: BaseChatModel) -> Runnable:
    """Prompt messages -> answer text (streams token by token)."""
    return (llm | StrOutputParser()).with_config(run_name="answer")
