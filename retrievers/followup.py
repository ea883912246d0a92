"""Topic carry-over for follow-up questions, without trusting a small LLM.

A follow-up ("Does it relate to outcomes after brain injury?") is searched twice: as written, and
in a context form that carries the conversation's topic (an LLM rewrite that passed the chains'
guard, or else the previous question followed by the follow-up). The two ranked lists are fused
by reciprocal rank fusion, the as-written list at half weight (``AS_WRITTEN_WEIGHT``), so

- a follow-up that keeps the topic ranks first the articles both searches agree on;
- a follow-up that changes topic still finds its own articles: its as-written list is half of
  the fusion, and the articles of the old topic only fill places the new topic leaves;
- no model output is trusted alone: the LLM rewrite, when there is one, is one of two voters.

A follow-up that names a topic of its own (no word pointing back, an essential concept of its
own: :func:`chains.queries.names_own_topic`) can still lose to the old topic: the in-context
query holds both topics, and at full weight its old-topic articles outrank the new topic's
("Is childhood intelligence associated with adult mortality?" after a question on working
memory training got two training papers and no mortality one). :func:`topic_weights` decides,
in one place, how much the conversation weighs: when such a follow-up's own search is
confident, the roles swap (path ``standalone``): the follow-up as written leads at full weight
and the conversation re-orders its articles at half weight, too little to bring in one of its
own (``OWN_TOPIC_CONTEXT_WEIGHT``). Any other follow-up keeps the fusion above.

A follow-up resolved against the whole conversation (path ``resolved``) that names words of
its own is searched a third time, in focus: its own words with only the topic's group and
subject (``FOCUSED_WEIGHT``), so an outcome or exposure it switches to is not outvoted by the
old one the resolved question still holds.

Optionally the previous turn's sources act as a prior: a third, lighter-weighted list that
re-orders candidates the two searches found but never adds an article neither search returned.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict, Unpack

from langchain_core.documents import Document
from langchain_core.runnables import RunnableConfig

from ingest.metadata import ChunkMeta
from retrievers.articles import article_text
from retrievers.asked_age import asked_age_first
from retrievers.filters import Filters
from retrievers.fusion import reciprocal_rank_fusion
from retrievers.service import Retrieval, SearchService

Path = Literal["llm", "fallback", "unchanged", "fused", "standalone", "resolved"]
PATHS: tuple[str, ...] = ("llm", "fallback", "unchanged", "fused", "standalone", "resolved")
# the paths on which a follow-up was searched with its conversation as well as written: its
# as-written search, a few words of its own, may find papers off the conversation's topic
IN_CONTEXT: frozenset[str] = frozenset({"llm", "fallback", "fused", "resolved"})
LIST_NAMES = ("as_written", "in_context", "focused", "previous_sources")
# The in-context query already contains the follow-up's own words, so the as-written search is a
# second, half-weight vote: enough to keep a follow-up that changed topic on its own articles,
# not enough to let a context-free follow-up's noise outrank the conversation's topic
# (docs/measurements-retrieval.md, "Follow-ups keep their topic").
AS_WRITTEN_WEIGHT = 0.5
# A follow-up resolved against the whole conversation (path "resolved", chains.conversation):
# the resolved question holds the follow-up's own words and the topic, so the follow-up as
# written ("any long-term side effects?") is a lighter vote, unless it names a concept of its
# own ("can choline given to the mother protect against it?"): then the usual half
# (measured: docs/conversations.md).
RESOLVED_AS_WRITTEN_WEIGHT = 0.25
# A follow-up with a topic of its own (path "standalone"): the conversation's vote. At half
# weight an article only the in-context search found scores at most 0.5/(c+1), below any of
# the as-written search's first topk articles (1/(c+topk)) while topk < c + 2 (c=5, topk=3 in
# cfg.yaml), so the old topic re-orders the new topic's articles but never replaces one
# (docs/followups_topic_change.md).
OWN_TOPIC_CONTEXT_WEIGHT = 0.5
# A resolved follow-up's third search (path "resolved"): its own words with only the topic's
# anchor, its group and subject (chains.conversation.focus_query). The resolved question keeps
# the whole old topic, whose outcome or exposure then outvotes the follow-up's new one ("kids
# who needed ECMO as newborns end up with normal IQ: working memory training help"); the
# focused search does not. It is a lighter vote than the resolution, so it re-orders what the
# conversation found more than it brings in its own (measured on every conversation file:
# docs/conversations.md, fourth pass).
FOCUSED_WEIGHT = 0.35
# "Confident on its own": the as-written search's best article is at least of medium
# confidence, as the chat labels it (chains.result.MEDIUM_CONFIDENCE).
OWN_TOPIC_MIN_CONFIDENCE = 0.33


@dataclass(frozen=True)
class TopicWeights:
    """How much each search counts in a follow-up's fusion (:func:`topic_weights`)."""

    path: Path
    as_written: float = AS_WRITTEN_WEIGHT
    in_context: float = 1.0
    prior: float = 0.0  # the previous turn's sources (a re-ordering prior, never adds)
    focused: float = 0.0  # the follow-up's own words with the topic's anchor only


@dataclass
class FollowupRetrieval:
    """Like :class:`retrievers.hybrid.Retrieval`, and says how the conversation shaped the search.

    ``path``: ``unchanged`` (no history: searched as written), ``fused`` (as written + previous
    question and follow-up), ``llm`` (as written + the LLM's guarded rewrite), ``fallback`` (as
    written + the chains' rule-based rewrite, used when the LLM's rewrite failed the guard),
    ``standalone`` (a follow-up with a topic of its own: as written leads, the conversation
    only re-orders; :func:`topic_weights`), ``resolved`` (as written + the question resolved
    against the whole conversation by rules: :mod:`chains.conversation`). ``queries``: every
    text searched, the as-written one first.
    """

    documents: list[Document]
    filters: Filters
    query: str
    path: Path = "unchanged"
    queries: list[str] = field(default_factory=list)
    shown: str = ""  # ``query`` as the search step shows it, where it differs (:func:`led`)

    @property
    def empty(self) -> bool:
        return not self.documents


def in_context_query(followup: str, previous_questions: Sequence[str]) -> str:
    """The last previous question followed by the follow-up: the topic's words, verbatim.

    Verbatim rather than picked keywords: BM25's idf already discounts the common words, and the
    embedding of the two sentences together is what the follow-up means in context.
    """
    previous = next((q.strip() for q in reversed(previous_questions) if q.strip()), "")
    return f"{previous} {followup.strip()}".strip()


def plan_queries(
    followup: str,
    previous_questions: Sequence[str],
    rewrite: str | None = None,
    rewrite_fallback: bool = False,
    resolved: bool = False,
    focus: str | None = None,
) -> tuple[Path, list[str]]:
    """(path, texts to search): the follow-up as written, then its context form (``rewrite``:
    the LLM's, the rule-based fallback's, or with ``resolved`` the conversation's resolution),
    then, with ``resolved``, ``focus``: the follow-up's own words with the topic's anchor only
    (:func:`chains.conversation.focus_query`)."""
    if not any(q.strip() for q in previous_questions):
        return "unchanged", [followup]
    if rewrite and rewrite.strip():
        path: Path = "resolved" if resolved else "fallback" if rewrite_fallback else "llm"
        context = rewrite.strip()
    else:
        path, context = "fused", in_context_query(followup, previous_questions)
    if context.strip().lower() == followup.strip().lower():
        return path, [followup]
    if resolved and focus and focus.strip() and focus.strip().lower() not in (
            followup.strip().lower(), context.strip().lower()):
        return path, [followup, context, focus.strip()]
    return path, [followup, context]


def topic_weights(
    path: Path,
    as_written: Sequence[Document],
    *,
    own_topic: bool,
    prior_weight: float = 0.0,
    own_words: bool = False,
) -> TopicWeights:
    """How much the conversation's topic weighs for this follow-up: the one place that decides.

    ``own_topic``: the follow-up names a topic of its own and nothing of it leans on the
    conversation (:func:`chains.queries.names_own_topic`); ``as_written``: what its own search
    found. Such a follow-up leads (path ``standalone``: as written at full weight, the
    conversation at ``OWN_TOPIC_CONTEXT_WEIGHT``, no prior of the old sources) when its own
    search is confident (best article >= ``OWN_TOPIC_MIN_CONFIDENCE``). Any other follow-up
    keeps the usual weights (``path`` as planned): the conversation carries it, the more so
    when it was resolved against the whole conversation (``RESOLVED_AS_WRITTEN_WEIGHT``).
    """
    if own_topic and as_written:
        if max(_confidence(d) for d in as_written) >= OWN_TOPIC_MIN_CONFIDENCE:
            return TopicWeights("standalone", 1.0, OWN_TOPIC_CONTEXT_WEIGHT, 0.0)
    focused = FOCUSED_WEIGHT if path == "resolved" else 0.0
    if path == "resolved" and not own_words:
        return TopicWeights(path, RESOLVED_AS_WRITTEN_WEIGHT, 1.0, prior_weight, focused)
    return TopicWeights(path, AS_WRITTEN_WEIGHT, 1.0, prior_weight, focused)


def _confidence(doc: Document) -> float:
    """The retriever's confidence in [0, 1] (retrievers.hybrid); a retriever that gives none is
    taken at its word."""
    return float(doc.metadata.get("confidence", 1.0))


def fuse_followup(
    lists: Sequence[Sequence[Document]],
    *,
    c: float,
    k: int | None,
    previous_sources: Sequence[str] = (),
    prior_weight: float = 0.0,
    stands_alone: bool = False,
    as_written_weight: float = AS_WRITTEN_WEIGHT,
    weights: TopicWeights | None = None,
) -> list[Document]:
    """Fuse [as written, in context] and the optional prior of earlier sources.

    ``stands_alone``: the follow-up is a complete question on its own; when its as-written
    search finds nothing (off-topic for this corpus), the answer is nothing, not the old topic.
    ``weights`` (from :func:`topic_weights`) overrides ``as_written_weight`` and
    ``prior_weight``.
    """
    if weights is None:
        weights = TopicWeights("fused", as_written_weight, 1.0, prior_weight)
    prior_weight = weights.prior
    lists = [list(docs) for docs in lists]
    if not lists or (stands_alone and not lists[0]):
        return []
    ranked = [docs for docs in lists if docs]
    if len(ranked) <= 1:
        return list(ranked[0] if ranked else [])[:k]
    names = [n for n, docs in zip(LIST_NAMES, lists, strict=False) if docs]
    by_name = {LIST_NAMES[0]: weights.as_written, LIST_NAMES[1]: weights.in_context,
               LIST_NAMES[2]: weights.focused}
    weight_of = [by_name[n] for n in names]
    if previous_sources and prior_weight > 0:
        found = {ChunkMeta.pmid_of(d.metadata): d for docs in ranked for d in docs}
        prior = [found[p] for p in dict.fromkeys(map(str, previous_sources)) if p in found]
        if prior:
            ranked.append(prior)
            names.append(LIST_NAMES[3])
            weight_of.append(prior_weight)
    inner: dict[str, Any] = {}  # each retriever's ranks, from the first list that has them
    for d in (d for docs in ranked for d in docs if d.metadata.get("ranks") is not None):
        inner.setdefault(ChunkMeta.pmid_of(d.metadata), d.metadata["ranks"])
    fused = reciprocal_rank_fusion(
        ranked,
        c=c,
        weights=weight_of,
        names=names,
        key="pmid",
    )[:k]
    out = []
    for doc in fused:
        meta = dict(doc.metadata)
        meta["query_ranks"] = meta.pop("ranks")
        pmid = ChunkMeta.pmid_of(meta)
        if inner.get(pmid) is not None:
            meta["ranks"] = inner[pmid]
        out.append(Document(page_content=doc.page_content, metadata=meta, id=doc.id))
    return out


class FollowupOptions(TypedDict, total=False):
    """How :func:`retrieve_followup` searches (each is explained there)."""

    rewrite: str | None
    rewrite_fallback: bool
    resolved: bool
    previous_sources: Sequence[str]
    prior_weight: float
    stands_alone: bool
    own_topic: bool
    focus: str | None
    own_words: bool
    lead: str
    k: int | None
    config: RunnableConfig | None


@dataclass(frozen=True)
class FollowupPlan:
    """One follow-up search, planned once for the sync and async paths: which texts to search
    (:func:`plan_queries`), how deep, and how to fuse what they find (:meth:`combine`)."""

    retriever: SearchService
    path: Path
    queries: list[str]
    options: FollowupOptions

    @classmethod
    def make(
        cls,
        retriever: SearchService,
        question: str,
        previous_questions: Sequence[str],
        options: FollowupOptions,
    ) -> FollowupPlan:
        path, queries = plan_queries(question, previous_questions, options.get("rewrite"),
                                     options.get("rewrite_fallback", False),
                                     options.get("resolved", False),
                                     options.get("focus"))  # fmt: skip
        return cls(retriever, path, queries, options)

    @property
    def depth(self) -> int:
        """Each search goes as deep as the retriever's own lists, so the fusion has room to
        work."""
        return max(self.options.get("k") or self.retriever.topk, self.retriever.k)

    @property
    def config(self) -> RunnableConfig | None:
        return self.options.get("config")

    def wording(self, i: int) -> str | None:
        """The follow-up as the user wrote it, for each search after the first (the texts built
        from it and the conversation), when it names a concept of its own (``own_words``):
        :meth:`retrievers.hybrid.HybridRetriever.retrieve` then reads from it whether the user
        wrote in the abstracts' words. A follow-up of common words only ("any long-term side
        effects?") says nothing of that and is not given (measured: docs/conversations.md
        "Stop 59")."""
        own = self.options.get("own_words", False)
        return self.queries[0] if i > 0 and own else None

    def combine(self, results: Sequence[Retrieval]) -> FollowupRetrieval:
        """The searches' results fused (see the module docstring)."""
        options = self.options
        prior_weight = options.get("prior_weight", 0.0)
        lists = [r.documents for r in results]
        weights = (
            topic_weights(self.path, lists[0], own_topic=options.get("own_topic", False),
                          prior_weight=prior_weight, own_words=options.get("own_words", False))
            if len(lists) > 1
            else TopicWeights(self.path, prior=prior_weight)
        )  # fmt: skip
        documents = fuse_followup(
            lists,
            c=self.retriever.c,
            k=None,
            previous_sources=options.get("previous_sources", ()),
            stands_alone=options.get("stands_alone", False),
            weights=weights,
        )
        # the text the answer is about: the in-context one, unless the follow-up leads
        main = results[1] if len(results) > 1 and weights.path != "standalone" else results[0]
        # asked about one age group, the other group's studies come last (retrievers.asked_age)
        documents = asked_age_first(documents, main.query, article_text)
        documents = documents[: options.get("k") or int(self.retriever.topk)]
        resolved = main is not results[0] and self.path == "resolved"
        return FollowupRetrieval(
            documents=documents,
            filters=results[0].filters,
            query=main.query,
            shown=led(options.get("lead", ""), main.query) if resolved else "",
            path=weights.path,
            queries=[r.query or q for r, q in zip(results, self.queries, strict=True)],
        )


def led(lead: str, query: str) -> str:
    """``query`` led by the question words the topic's question had (``lead``: "Are", "How
    do"; :attr:`chains.conversation.Resolution.lead`), as the search step shows it: "Are
    stimulant medications effective for ADHD in adults?"."""
    lead = lead.strip()
    if not lead or not query.strip():
        return query
    return f"{lead[0].upper()}{lead[1:]} {query.strip()}"


def retrieve_followup(
    retriever: SearchService,
    question: str,
    previous_questions: Sequence[str],
    **options: Unpack[FollowupOptions],
) -> FollowupRetrieval:
    """Search a follow-up as written and in context; fuse (see the module docstring).

    ``rewrite``: the chains' guarded rewrite, searched as the context form
    (``rewrite_fallback``: the rule-based one; ``resolved``: the conversation's resolution,
    :mod:`chains.conversation`); ``previous_sources`` with ``prior_weight``: the
    previous turn's sources as a re-ordering prior; ``stands_alone``: a complete question (an
    off-topic one is refused, not rescued by the history); ``own_topic``: it names a topic of its
    own (:func:`topic_weights` may let it lead); ``k``: the articles kept (default the
    retriever's ``topk``); ``lead``: the question words shown before the resolved question
    (:func:`led`; not searched).
    """
    plan = FollowupPlan.make(retriever, question, previous_questions, options)
    return plan.combine([retriever.retrieve(q, k=plan.depth, config=plan.config,
                                            wording=plan.wording(i))
                         for i, q in enumerate(plan.queries)])  # fmt: skip


async def aretrieve_followup(
    retriever: SearchService,
    question: str,
    previous_questions: Sequence[str],
    **options: Unpack[FollowupOptions],
) -> FollowupRetrieval:
    """The async form of :func:`retrieve_followup` (the searches run concurrently)."""
    plan = FollowupPlan.make(retriever, question, previous_questions, options)
    results = await asyncio.gather(
        *(retriever.aretrieve(q, k=plan.depth, config=plan.config, wording=plan.wording(i))
          for i, q in enumerate(plan.queries))
    )
    return plan.combine(results)
