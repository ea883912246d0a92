"""One factory per chain step, each a named LCEL runnable (in the style of chat-langchain).

:mod:`chains.modes` composes them into the three modes; each can also be used alone. Steps that
need the LLM take a *provider* (a no-argument callable returning the chat model), so the model is
loaded on the first step that really runs it, not when the chain is built: a question that is
refused for lack of sources never loads it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.runnables import Runnable, RunnableLambda, RunnablePassthrough

from chains.prompts import format_history, format_source, render
from chains.queries import guard_rewrite
from chains.subqueries import sub_queries
from grounding.concepts import CorpusTerms
from grounding.sources import SentenceEncoder
from ingest.metadata import ChunkMeta
from llms.capabilities import capabilities
from llms.llm import with_max_tokens
from retrievers.service import Retrieval, SearchService

MAX_PASSAGE_WORDS = 160  # a 135M model reads short passages better; also keeps prefill fast

ModelProvider = Callable[[], BaseChatModel]


def passage_of(doc: Document, max_words: int | None = MAX_PASSAGE_WORDS) -> str:
    words = doc.page_content.split()
    if max_words is None:
        return " ".join(words)
    return " ".join(words[:max_words]) + (" …" if len(words) > max_words else "")


def format_context(documents: Sequence[Document], max_words: int | None = MAX_PASSAGE_WORDS) -> str:
    if not documents:
        return "(no sources)"
    return "\n\n".join(
        _source_block(i, d, max_words) for i, d in enumerate(documents, start=1)
    )


def _source_block(n: int, doc: Document, max_words: int | None) -> str:
    meta = ChunkMeta.from_metadata(doc.metadata)
    return format_source(n, meta.title, meta.year, passage_of(doc, max_words))


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


def model_step(
    model: ModelProvider, *, max_tokens: int | None = None, run_name: str = "llm"
) -> Runnable[Any, Any]:
    """The chat model as a step, resolved when it first runs (a Runnable returned by a
    ``RunnableLambda`` is invoked, or streamed, with the same input)."""

    def pick(_input: Any) -> Runnable[Any, Any]:
        llm = model()
        return with_max_tokens(llm, max_tokens) if max_tokens else llm

    return RunnableLambda(pick).with_config(run_name=run_name)


def make_retrieve_step(retriever: SearchService) -> Runnable[Any, Any]:
    """``{"question", "filters"?, "k"?}`` -> the retriever's ``Retrieval``."""

    def _sync(inp: dict[str, Any]) -> Retrieval:
        return retriever.retrieve(inp["question"], filters=inp.get("filters"), k=inp.get("k"))

    async def _async(inp: dict[str, Any]) -> Retrieval:
        return await retriever.aretrieve(
            inp["question"], filters=inp.get("filters"), k=inp.get("k")
        )

    return RunnableLambda(_sync, afunc=_async).with_config(run_name="retrieve")


def make_rewrite_step(model: ModelProvider, template: str) -> Runnable[Any, Any]:
    """``{"question", "history": [(user, assistant)]}`` -> ``{"question", "raw", "fallback"}``.

    The LLM writes a standalone question; :func:`chains.queries.guard_rewrite` keeps it only when
    it is usable. Whether to rewrite at all is the caller's branch (see :mod:`chains.modes`).
    """
    def rewrite_prompt(inp: dict[str, Any]) -> list[BaseMessage]:
        history = format_history(inp["history"])
        return [HumanMessage(render(template, history=history, question=inp["question"]))]

    prompt = RunnableLambda(rewrite_prompt).with_config(run_name="rewrite_prompt")
    generate = (
        prompt | model_step(model, max_tokens=48, run_name="rewrite_model") | StrOutputParser()
    ).with_config(run_name="rewrite_llm")

    def guard(inp: dict[str, Any]) -> dict[str, Any]:
        previous = [u for u, _ in inp["history"]]
        question, fallback = guard_rewrite(inp["question"], inp["raw"], previous)
        return {"question": question, "raw": inp["raw"], "fallback": fallback}

    return (
        RunnablePassthrough.assign(raw=generate)
        | RunnableLambda(guard).with_config(run_name="guard_rewrite")
    ).with_config(run_name="rewrite_question")


def make_multi_query_step(
    model: ModelProvider,
    template: str,
    n: int,
    encoder: Callable[[], SentenceEncoder | None] | None = None,
    corpus: CorpusTerms | None = None,
) -> Runnable[Any, Any]:
    """``{"question", "searched_question"?}`` -> up to ``n`` alternative queries: what the model
    wrote, parsed robustly, kept only when about the question (:func:`chains.subqueries.
    sub_queries`: MiniLM cosine with the searched question, from ``encoder()``), at least two
    (derived from the question when the model gives fewer), never the original."""
    def queries_prompt(inp: dict[str, Any]) -> list[BaseMessage]:
        return [HumanMessage(render(template, question=inp["question"], n=n))]

    prompt = RunnableLambda(queries_prompt).with_config(run_name="multi_query_prompt")
    generate = (
        prompt
        | model_step(model, max_tokens=24 * n + 16, run_name="multi_query_model")
        | StrOutputParser()
    )
    def parse(inp: dict[str, Any]) -> list[str]:
        question = inp.get("searched_question") or inp["question"]
        return sub_queries(question, inp["raw"], n, encoder() if encoder else None, corpus)

    return (
        RunnablePassthrough.assign(raw=generate)
        | RunnableLambda(parse).with_config(run_name="parse_queries")
    ).with_config(
        run_name="generate_queries"
    )


def make_answer_step(model: ModelProvider) -> Runnable[Any, Any]:
    """``{"messages", "answer_prefix"}`` -> answer text, streamed token by token. A model that can
    continue an assistant turn already begun continues after the prefix ("Yes. "), so its
    explanation agrees with the verdict."""
    def pick(inp: dict[str, Any]) -> Runnable[Any, Any]:
        llm: Runnable[Any, Any] = model()
        prefix = inp.get("answer_prefix") or ""
        if prefix and capabilities(llm).continues_prefix:
            llm = llm.bind(assistant_prefix=prefix)
        return itemgetter("messages") | llm | StrOutputParser()

    return RunnableLambda(pick).with_config(run_name="answer")
