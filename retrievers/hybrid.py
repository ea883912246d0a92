"""The patched EnsembleRetriever: BM25 + similarity-thresholded FAISS, fused by RRF per PMID.

The patch (on both the sync and async paths):
- FAISS returns only hits with cosine similarity >= ``score_threshold``;
- when FAISS has fewer than ``k`` articles above it, BM25 contributes no more articles than FAISS
  did, and when FAISS has none the retriever returns nothing, so off-topic questions are refused
  without calling the LLM;
- fusion is per PMID and each result carries the fused score, each retriever's rank and score,
  and a confidence in [0, 1].
Filters parsed from the question ("after 2020", "by Deary") are applied inside both retrievers.

While the index has no dense part yet (a lexical-only build, ``dense_ready`` False: the chat's
first minutes after ``make run``), retrieval is BM25 alone and the refusal is lexical
(:func:`refuses_lexical`). Each retrieval searches one snapshot of the backend (a
:class:`~retrievers.live.LiveIndex` swaps in a newly published build between questions).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from langchain_classic.retrievers import EnsembleRetriever
from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import patch_config
from pydantic import Field, SkipValidation

from indexing.aliases import name_stems
from indexing.drug_names import with_generic_names, without_unindexed_drugs
from indexing.embeddings import Embedder
from indexing.lay_terms import with_drug_classes, with_index_names
from indexing.stems import stem
from ingest.metadata import ChunkMeta
from retrievers.articles import with_article_texts
from retrievers.asked_age import AbstractOf, abstracts_from, asked_age_first, passage
from retrievers.filters import Filters, parse_filters
from retrievers.fusion import (
    best_chunk_per_article,
    convex_combination,
    prefer_designs,
    reciprocal_rank_fusion,
    retracted_last,
)
from retrievers.keywords import keyword_query
from retrievers.request_filters import with_request_filters
from retrievers.service import CorpusWords, Retrieval, SearchBackend
from settings.config import Config

__all__ = ["HybridRetriever", "Retrieval", "fusion_weights", "refuses", "refuses_lexical"]

NAMES = ("bm25", "dense")
# Cosine at which the dense half of the confidence saturates (MiniLM rarely exceeds it).
COSINE_FULL_CONFIDENCE = 0.75
# BM25 relevance (best score / highest possible) at which the lexical half saturates
LEXICAL_FULL_CONFIDENCE = 0.5


def refuses(best_cosine: float | None, threshold: float) -> bool:
    """The refusal: whether the retriever returns nothing for a question whose best dense hit has
    cosine ``best_cosine`` (None: no dense hit at all). FAISS keeps hits with cosine >=
    ``retrieval.score_threshold``; with none kept, BM25's hits are dropped too, so an off-topic
    question is refused without calling the LLM."""
    return best_cosine is None or best_cosine < threshold


def refuses_lexical(relevance: float, threshold: float) -> bool:
    """The refusal without a dense index: the best BM25 match covers less than ``threshold`` of
    the highest score the question's words could reach (``retrieval.bm25.refusal_threshold``;
    :meth:`indexing.bm25.BM25Index.relevance`, measured in docs/measurements-retrieval.md,
    "Refusal before the semantic index exists")."""
    return relevance < threshold


def fusion_weights(
    relevance: float | None,
    weights: list[float],
    weak_weights: list[float] | None,
    threshold: float,
    ramp: float = 0.0,
) -> list[float]:
    """The [BM25, dense] fusion weights for one question.

    ``weights`` (``retrieval.weights``, BM25 leading) unless BM25's best match is weak: when it
    covers less than ``threshold`` of the highest score the question's words could reach (the bar
    at which BM25 alone refuses a question, :func:`refuses_lexical`), BM25 found no abstract in
    the question's words, which happens when the question is worded unlike the abstracts ("IQ",
    "live longer" for "intelligence", "mortality"); then ``weak_weights``
    (``retrieval.weights_when_bm25_weak``, dense leading) apply. ``relevance`` None (a backend
    that cannot measure it) or ``weak_weights`` None: always ``weights``.

    ``ramp`` > 0 (``retrieval.bm25_weak_ramp``) makes the change continuous: the weights move
    linearly from ``weak_weights`` at ``threshold`` to ``weights`` at ``threshold + ramp``, so a
    question whose BM25 match is only a little above the bar is led by both retrievers, not by
    BM25 alone.
    """
    if weak_weights is None or relevance is None:
        return list(weights)
    if refuses_lexical(relevance, threshold):
        return list(weak_weights)
    if ramp <= 0 or relevance >= threshold + ramp:
        return list(weights)
    t = (relevance - threshold) / ramp  # 0 at the bar, 1 at the end of the ramp
    return [w + t * (s - w) for w, s in zip(weak_weights, weights, strict=True)]


def lexical_refusal_text(searched: str, backend: SearchBackend) -> str:
    """What the lexical refusal reads: the searched text without the drug names no indexed
    chunk holds (:func:`indexing.drug_names.without_unindexed_drugs`): a drug the corpus has
    not read does not make the question off-topic."""
    corpus = backend.corpus
    if corpus is None:
        return searched
    return without_unindexed_drugs(searched, lambda w: corpus.chunks_with_stems([stem(w)]) > 0)


class _BackendRetriever(BaseRetriever):
    backend: SkipValidation[SearchBackend]  # a Protocol: pydantic cannot validate it
    k: int = 20
    filters: Filters = Field(default_factory=Filters)

    def bound(self, filters: Filters, backend: SearchBackend | None = None) -> _BackendRetriever:
        """A copy searching with ``filters`` (and ``backend``: one snapshot per retrieval)."""
        update: dict[str, Any] = {"filters": filters}
        if backend is not None:
            update["backend"] = backend
        return self.model_copy(update=update)


class BM25ChunkRetriever(_BackendRetriever):
    """rank-bm25 scoring over title + chunk text; one (best) chunk per article."""

    rare_keywords: bool = False

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        text = keyword_query(query) if self.rare_keywords else query
        # Over-fetch chunks so that k distinct articles survive the per-article cut.
        docs = self.backend.bm25_search(text, 3 * self.k, self.filters)
        return best_chunk_per_article(docs)[: self.k]


class ThresholdedFaissRetriever(_BackendRetriever):
    """FAISS cosine similarity search; hits below ``score_threshold`` are dropped."""

    score_threshold: float = 0.25

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        docs = self.backend.dense_search(query, self.k, self.score_threshold, self.filters)
        return best_chunk_per_article(docs)[: self.k]


@dataclass(frozen=True)
class _Search:
    """One retrieval's plan, made once for the sync and async paths: the question without its
    filters (what grounding reads), the text the engines search (with drug names' generic
    names), the filters, the backend snapshot and the bound retrievers to run (BM25 alone while
    the build has no dense index), each with its run name."""

    query: str
    searched: str
    filters: Filters
    backend: SearchBackend
    parts: list[tuple[str, _BackendRetriever]]
    # the user's own wording, when the searched text is built from it (a follow-up's context
    # form): BM25's relevance is also measured on it (:meth:`HybridRetriever._relevance`)
    wording: str | None = None

    @property
    def lexical(self) -> bool:
        return len(self.parts) == 1


class HybridRetriever(EnsembleRetriever):
    """``EnsembleRetriever`` over [BM25, thresholded FAISS] with the patch described above; the
    :class:`~retrievers.service.SearchService` the layers above use."""

    # the parent (langchain_classic) types it int; cfg.yaml may give a float
    c: float = 60  # type: ignore[assignment]
    fusion: str = "rrf"  # rrf | convex (retrievers.fusion.convex_combination)
    k: int = 20
    topk: int = 3
    parse_filters: bool = True
    lexical_threshold: float = 0.0  # retrieval.bm25.refusal_threshold (no dense index yet)
    weak_weights: list[float] | None = None  # retrieval.weights_when_bm25_weak (fusion_weights)
    weak_ramp: float = 0.0  # retrieval.bm25_weak_ramp (fusion_weights)
    prefer_design: float = 0.0  # retrieval.prefer_design (retrievers.fusion.prefer_designs)
    brand_classes: bool = True  # retrieval.brand_classes (indexing.lay_terms.with_drug_classes)
    lay_names: bool = True  # retrieval.lay_names (indexing.lay_terms.with_index_names)

    @classmethod
    def from_backend(cls, backend: SearchBackend, cfg: Config) -> HybridRetriever:
        r = cfg.retrieval
        return cls(
            retrievers=[
                BM25ChunkRetriever(backend=backend, k=r.k, rare_keywords=r.bm25.rare_keywords),
                ThresholdedFaissRetriever(
                    backend=backend, k=r.k, score_threshold=r.score_threshold
                ),
            ],
            weights=list(r.weights),
            c=r.rrf_c,
            fusion=r.fusion,
            k=r.k,
            topk=r.topk_rrf,
            id_key="pmid",
            lexical_threshold=r.bm25.refusal_threshold,
            weak_weights=(
                list(r.weights_when_bm25_weak) if r.weights_when_bm25_weak is not None else None
            ),
            prefer_design=r.prefer_design,
            weak_ramp=r.bm25_weak_ramp,
            brand_classes=r.brand_classes,
            lay_names=r.lay_names,
        )

    # -- the two halves, typed -------------------------------------------------------------------
    @property
    def bm25_retriever(self) -> BM25ChunkRetriever:
        part = self.retrievers[0]
        if not isinstance(part, BM25ChunkRetriever):
            raise TypeError(f"the first retriever must be a BM25ChunkRetriever, not {part!r}")
        return part

    @property
    def dense_retriever(self) -> ThresholdedFaissRetriever:
        part = self.retrievers[1]
        if not isinstance(part, ThresholdedFaissRetriever):
            raise TypeError(
                f"the second retriever must be a ThresholdedFaissRetriever, not {part!r}"
            )
        return part

    @property
    def backend(self) -> SearchBackend:
        """The search backend both halves share (a live index follows the published build)."""
        return self.bm25_retriever.backend

    # -- public API (retrievers.service.SearchService) ----------------------------------------
    def retrieve(
        self,
        question: str,
        *,
        k: int | None = None,
        filters: Filters | None = None,
        config: RunnableConfig | None = None,
        wording: str | None = None,
    ) -> Retrieval:
        search = self._plan(question, filters, wording)
        lists = [
            part.invoke(search.searched, patch_config(config, run_name=name))
            for name, part in search.parts
        ]
        return self._finish(search, lists, k)

    async def aretrieve(
        self,
        question: str,
        *,
        k: int | None = None,
        filters: Filters | None = None,
        config: RunnableConfig | None = None,
        wording: str | None = None,
    ) -> Retrieval:
        search = self._plan(question, filters, wording)
        lists = await asyncio.gather(
            *[
                part.ainvoke(search.searched, patch_config(config, run_name=name))
                for name, part in search.parts
            ]
        )
        return self._finish(search, list(lists), k)

    def _plan(self, question: str, filters: Filters | None, wording: str | None = None) -> _Search:
        """What :meth:`retrieve` and :meth:`aretrieve` run: one backend snapshot for all parts;
        BM25 alone while the build has no dense index."""
        query, filters = self._prepare(question, filters)
        backend = self.snapshot()
        halves: list[_BackendRetriever] = [self.bm25_retriever, self.dense_retriever]
        if not backend.dense_ready:
            halves = halves[:1]
        parts = [(name, r.bound(filters, backend)) for name, r in zip(NAMES, halves, strict=False)]
        # a brand name searched with its generic name, the abstracts' word ("Zoloft (sertraline)");
        # a lay word's WordNet names only where no chunk holds the word: added to words the index
        # uses, they moved MiniLM's query away more often than they found a paper (docs/verdicts.md
        # "Stop 49")
        # and, where the index holds the drug by none of its names, with its narrow class
        # ("Zoloft (sertraline; SSRI)")
        corpus = backend.corpus

        def searched(text: str) -> str:
            named = with_generic_names(text)
            if corpus is None:
                return named

            def chunks(name: str) -> int:
                return corpus.chunks_with_stems(sorted(name_stems(name)))

            if self.brand_classes:
                named = with_drug_classes(named, chunks)
            # a lay word the index never uses, with the name of it the index uses most
            # ("preemies (preterm infant)"; docs/verdicts.md "Stop 72")
            return with_index_names(named, chunks) if self.lay_names else named

        own = searched(self._parse(wording, None)[0]) if wording else None
        return _Search(query, searched(query), filters, backend, parts, own)

    def _finish(self, search: _Search, lists: list[list[Document]], k: int | None) -> Retrieval:
        """The searched lists fused (or BM25's alone, with the lexical refusal), each result
        carrying its article's whole abstract from the same build (``retrievers.articles``)."""
        query, filters, backend = search.query, search.filters, search.backend
        abstract_of = abstracts_from(backend.article_chunks)
        if search.lexical:
            searched = lexical_refusal_text(search.searched, backend)
            relevance = backend.bm25_relevance(searched, filters)
            # an engine without a dense index that cannot measure relevance refuses (none does)
            documents = self.fuse_lexical(lists[0], 0.0 if relevance is None else relevance, k,
                                          query, abstract_of)  # fmt: skip
        else:
            # BM25's relevance for the weak-BM25 rule; not measured while the rule is off
            measured = (self._relevance(search)
                        if self.weak_weights is not None else None)  # fmt: skip
            documents = self.fuse(lists, k, relevance=measured, question=query,
                                  abstract_of=abstract_of)  # fmt: skip
        return Retrieval(documents=with_article_texts(documents, backend.article_chunks),
                         filters=filters, query=query, searched=search.searched)  # fmt: skip

    @staticmethod
    def _relevance(search: _Search) -> float | None:
        """BM25's relevance for the weak-BM25 rule (:func:`fusion_weights`): the searched text's,
        or the user's own wording's where that is higher. A follow-up's context form glues the
        conversation's words together, so no abstract covers most of them and its relevance is
        low whatever the wording; whether the user wrote in the abstracts' words is read from
        what the user wrote (measured: docs/conversations.md "Stop 59")."""
        texts = [search.searched] + ([search.wording] if search.wording else [])
        found = [r for t in texts
                 if (r := search.backend.bm25_relevance(t, search.filters)) is not None]
        return max(found) if found else None

    def snapshot(self) -> SearchBackend:
        """The search backend for one retrieval (a live index's build of the moment)."""
        return self.backend.snapshot()

    @property
    def hybrid(self) -> bool:
        """Whether the build loaded now has a dense index (False while it is still being built);
        a newly published build is loaded by the next search, not here."""
        return self.backend.loaded.dense_ready

    def article_chunks(self, pmid: str) -> list[Document]:
        """Every chunk of one article, in chunk order (from the search backend both halves
        share; the yes/no verdict reads the last one, where an abstract's conclusion is)."""
        return list(self.backend.article_chunks(pmid))

    @property
    def embedder(self) -> Embedder | None:
        """The backend's query embedder (grounding embeds abstract sentences with it)."""
        return self.backend.embedder

    @property
    def corpus(self) -> CorpusWords | None:
        """The corpus-wide word counts, when the backend keeps them (for essential concepts)."""
        return self.backend.corpus

    # -- the EnsembleRetriever hooks (invoke / ainvoke go through these) ------------------------
    def rank_fusion(
        self,
        query: str,
        run_manager: CallbackManagerForRetrieverRun,
        *,
        config: RunnableConfig | None = None,
    ) -> list[Document]:
        config = patch_config(config, callbacks=run_manager.get_child())
        return self.retrieve(query, config=config).documents

    async def arank_fusion(
        self,
        query: str,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        *,
        config: RunnableConfig | None = None,
    ) -> list[Document]:
        config = patch_config(config, callbacks=run_manager.get_child())
        return (await self.aretrieve(query, config=config)).documents

    # -- fusion ---------------------------------------------------------------------------------
    def _prepare(self, question: str, filters: Filters | None) -> tuple[str, Filters]:
        query, found = self._parse(question, filters)
        return query, with_request_filters(found)  # and a caller's own (the HTTP API's)

    def _parse(self, question: str, filters: Filters | None) -> tuple[str, Filters]:
        if filters is not None:
            return question, filters
        if not self.parse_filters:
            return question, Filters()
        query, parsed = parse_filters(question)
        return (query or question), parsed

    @property
    def score_threshold(self) -> float:
        """The cosine a dense hit needs (``retrieval.score_threshold``)."""
        return self.dense_retriever.score_threshold

    def fuse(self, lists: list[list[Document]], k: int | None = None,
             relevance: float | None = None, question: str = "",
             abstract_of: AbstractOf = passage) -> list[Document]:
        """[BM25 hits, dense hits] fused, best first (``k`` or ``topk_rrf`` of them), weighted by
        :func:`fusion_weights` of BM25's ``relevance`` for the question (None: ``weights``); when
        ``question`` names one age group, the articles that studied only the other come last
        (:mod:`retrievers.asked_age`, reading each one's abstract with ``abstract_of``)."""
        weights = fusion_weights(relevance, self.weights, self.weak_weights,
                                 self.lexical_threshold, self.weak_ramp)
        bm25, dense = (best_chunk_per_article(docs) for docs in lists)
        best = max((float(d.metadata["score"]) for d in dense), default=None)
        if refuses(best, self.score_threshold):
            return []
        if len(dense) < self.k:
            bm25 = bm25[: len(dense)]
        if self.fusion == "convex":
            fused = convex_combination(
                [bm25, dense],
                weights=weights,
                floors=[0.0, self.score_threshold],
                names=NAMES,
            )
        else:
            fused = reciprocal_rank_fusion(
                [bm25, dense], c=self.c, weights=weights, names=NAMES, key="pmid"
            )
        fused = asked_age_first(fused, question, abstract_of)
        top = retracted_last(prefer_designs(fused, self.prefer_design)[: k or self.topk])
        return [self._annotate(doc, bm25, dense, weights) for doc in top]

    def fuse_lexical(self, docs: list[Document], relevance: float, k: int | None = None,
                     question: str = "", abstract_of: AbstractOf = passage) -> list[Document]:
        """BM25 alone (no dense index yet): refused below the lexical threshold, else its top
        articles, annotated as :meth:`fuse` annotates (dense scores and ranks None)."""
        bm25 = best_chunk_per_article(docs)
        if refuses_lexical(relevance, self.lexical_threshold):
            return []
        ranked = prefer_designs(asked_age_first(reciprocal_rank_fusion(
            [bm25, []], c=self.c, weights=self.weights, names=NAMES, key="pmid"),
            question, abstract_of), self.prefer_design)  # fmt: skip
        top = float(bm25[0].metadata["score"]) if bm25 else 0.0
        out = []
        for doc in retracted_last(ranked[: k or self.topk]):
            annotated = self._annotate(doc, bm25, [])
            share = float(doc.metadata["score"]) / top if top > 0 else 0.0
            span = max(LEXICAL_FULL_CONFIDENCE - self.lexical_threshold, 1e-6)
            lexical_part = min(1.0, max(0.0, (relevance * share - self.lexical_threshold) / span))
            fused_part = 2 * annotated.metadata["confidence"]  # its dense half is 0 here
            annotated.metadata["confidence"] = round(0.5 * fused_part + 0.5 * lexical_part, 4)
            out.append(annotated)
        return out

    def _annotate(self, doc: Document, bm25: list[Document], dense: list[Document],
                  weights: list[float] | None = None) -> Document:
        weights = list(weights or self.weights)
        pmid = ChunkMeta.pmid_of(doc.metadata)
        scores = {
            name: next((d.metadata["score"] for d in docs if ChunkMeta.pmid_of(d.metadata) == pmid),
                       None)
            for name, docs in zip(NAMES, (bm25, dense), strict=True)
        }
        if "fused_score" in doc.metadata:  # convex: 1.0 = first in both lists
            fused_part = min(1.0, doc.metadata["fused_score"] / sum(weights))
        else:
            best_possible = sum(weights) / (self.c + 1)
            fused_part = min(1.0, doc.metadata["rrf_score"] / best_possible)
        cosine = scores["dense"]
        threshold = self.score_threshold
        dense_part = 0.0
        if cosine is not None:
            span = max(COSINE_FULL_CONFIDENCE - threshold, 1e-6)
            dense_part = min(1.0, max(0.0, (cosine - threshold) / span))
        meta = {k: v for k, v in doc.metadata.items() if k != "score"}
        meta["scores"] = scores
        meta["confidence"] = round(0.5 * fused_part + 0.5 * dense_part, 4)
        return Document(page_content=doc.page_content, metadata=meta, id=doc.id)
