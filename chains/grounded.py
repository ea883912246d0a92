"""Evidence-first answers inside the answer tail: every displayed sentence cites a source that
supports it, whatever the model writes.

``find_evidence`` (a step before the verdict) embeds the sources' whole abstracts once, picks each
source's evidence sentences (the key findings) and decides honest abstention. The stream step then
writes the answer through an :class:`AnswerWriter`, which yields only display text:

- ``extractive`` (or abstention): the composed findings, no LLM call at all;
- ``generative`` / ``auto``: the verdict (naming its sources) at once, then each generated sentence
  as soon as the support check passes it (citations repaired, unsupported ones dropped); ``auto``
  falls back to the findings when no generated sentence survived.

The decisions are :mod:`grounding`'s (pure functions); this module only wires them to the stream.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

from langchain_core.runnables import Runnable, RunnableLambda

from chains.policy import AnswerPolicy
from chains.result import MEDIUM_CONFIDENCE, CitedSentence, DroppedSentence, EvidenceSpan
from chains.turn import Turn
from grounding.compose import ComposedAnswer, compose_answer, compose_extractive
from grounding.concepts import CorpusTerms, check_coverage, question_concepts
from grounding.consensus import Judgement, judge
from grounding.evidence import EvidenceSentence, answers_question, select_evidence
from grounding.lead import finding_clause, support_check, with_finding
from grounding.sources import ArticleTexts, SentenceEncoder, SourcePool
from grounding.stance import StanceClassifier, source_stance
from grounding.stream import GroundedStream
from grounding.support import SupportChecker
from grounding.yes_no import is_yes_no_question
from indexing.stems import stem
from settings.grounding import GroundingSettings

log = logging.getLogger(__name__)

EncoderProvider = Callable[[], SentenceEncoder]


def make_evidence_step(
    encoder: EncoderProvider,
    article_text: ArticleTexts | None,
    settings: GroundingSettings,
    corpus: CorpusTerms | None = None,
    classify: StanceClassifier | None = None,
) -> Runnable[Any, Any]:
    """Turn -> Turn with ``pool`` (whole abstracts, split and embedded in one batch),
    ``evidence`` (per source, its key findings), ``judgement`` (does any source address the
    question's essential concepts; each addressing source's stance; the verdict, if the
    stances agree plainly: :func:`judge_sources`), ``verdict`` / ``verdict_sources`` from it, and
    ``abstain`` (no source addresses the question, or no sentence is relevant enough)."""

    def find(turn: Turn) -> Turn:
        if turn.get("refused"):
            return turn
        question = turn.get("searched_question") or turn["question"]
        pool = SourcePool.from_documents(question, turn["documents"], encoder(), article_text)
        evidence = without_retracted(pool, select_evidence(pool, settings))
        judgement = judge_sources(
            turn["question"], question, pool, evidence, settings, encoder(), corpus, classify
        )
        relevant = answers_question(evidence, settings)
        return {
            **turn,
            "pool": pool,
            "evidence": evidence,
            "judgement": judgement,
            "verdict": judgement.verdict if relevant else None,
            "verdict_sources": judgement.verdict_sources if relevant else [],
            "abstain": not (relevant and judgement.addressed),
        }

    return RunnableLambda(find).with_config(run_name="find_evidence")


def without_retracted(
    pool: SourcePool, evidence: list[list[EvidenceSentence]]
) -> list[list[EvidenceSentence]]:
    """No evidence from a retracted article: it is listed with its warning, but no finding is
    quoted from it, it takes no stance, so it never decides the verdict nor leads the answer."""
    return [[] if source.retracted else found
            for source, found in zip(pool.sources, evidence, strict=True)]


def judge_sources(
    asked: str,
    searched: str,
    pool: SourcePool,
    evidence: list[list[EvidenceSentence]],
    settings: GroundingSettings,
    encoder: SentenceEncoder | None,
    corpus: CorpusTerms | None,
    classify: StanceClassifier | None = None,
) -> Judgement:
    """Concept coverage of the question, then the stance of every source that covers its
    essential concepts and has a relevant sentence, then the verdict they support, and the lead
    sentence stating it with its deciding finding (:func:`grounding.lead.with_finding`).

    The concepts are the ``asked`` question's own; a follow-up searched in its conversation
    (``searched`` differs: "and does it hold when siblings are compared?" after "Is childhood IQ
    associated with mortality?") is about the conversation's topic too, so the ``searched`` text's
    concepts count, and a source on siblings alone does not address it."""
    concepts = question_concepts(searched if searched != asked else asked, corpus)
    coverage = check_coverage(concepts, pool, encoder)
    question_stems = {stem(w) for c in question_concepts(searched) for w in c.words}
    stances = [
        source_stance(
            pool.sources[n - 1],
            searched,
            question_stems,
            [(e.start, e.end) for e in evidence[n - 1]],
            classify,
        )
        for n in coverage.addressing
        if any(e.similarity >= settings.relevance_bar for e in evidence[n - 1])
    ]
    j = judge(coverage, stances, yes_no=is_yes_no_question(asked))
    # the lead states the deciding finding when the support check passes it for its source
    return with_finding(j, support_check(lambda: SupportChecker(pool, settings)))


def evidence_spans(evidence: list[EvidenceSentence]) -> list[EvidenceSpan]:
    return [
        EvidenceSpan(text=e.text, start=e.start, end=e.end, section=e.section) for e in evidence
    ]


class AnswerWriter:
    """Turns one question's generated pieces into what the user sees, and the final record.

    ``opening()`` is shown first; ``feed(piece)`` / ``finish()`` return display text (possibly
    "") to append; afterwards ``composed`` is the answer and ``dropped`` what was not shown. The
    concatenation of everything returned equals ``composed.text``.
    """

    def __init__(self, turn: Turn, settings: GroundingSettings, policy: AnswerPolicy) -> None:
        self.settings = settings
        self.policy = policy
        pool: SourcePool = turn["pool"]
        self.evidence: list[list[EvidenceSentence]] = turn["evidence"]
        self.titles = [s.title for s in pool.sources]
        self.judgement: Judgement | None = turn.get("judgement")
        self.verdict = turn.get("verdict")
        self.weak_sources = [
            n
            for n, doc in enumerate(turn.get("documents") or [], start=1)
            if float(doc.metadata.get("confidence", 1.0)) < MEDIUM_CONFIDENCE
        ]
        self.extractive = compose_extractive(
            self.evidence,
            titles=self.titles,
            judgement=self.judgement,
            weak_sources=self.weak_sources,
            settings=settings,
        )
        self.uses_llm = policy.writes and not self.extractive.abstained
        self._stream = GroundedStream(SupportChecker(pool, settings)) if self.uses_llm else None
        self.lead_dropped: DroppedSentence | None = turn.get("lead_dropped")  # a model's lead
        quoted = self.judgement.lead_quotes if self.judgement is not None else ""
        if self._stream is not None and quoted:  # the model does not say the lead's finding again
            for claim in (quoted, finding_clause(quoted)):
                self._stream.checker.shown_already(claim)
        self._shown = ""
        self.composed: ComposedAnswer = self.extractive

    def _show(self, text: str) -> str:
        if not text.strip():
            return ""
        text = text.strip()
        out = (" " + text) if self._shown else text
        self._shown += out
        return out

    def opening(self) -> list[str]:
        """Shown before generation, piece by piece: the verdict naming its sources, or the whole
        extractive answer (or abstention), sentence by sentence, when no LLM text is used."""
        verdict = [self.extractive.verdict_text]
        texts = verdict if self.uses_llm else self._texts(self.extractive)
        return [shown for shown in (self._show(t) for t in texts) if shown]

    def feed(self, piece: str) -> str:
        return self._show(self._stream.feed(piece)) if self._stream else ""

    def finish(self) -> str:
        """End of generation: the last sentence, then the fallback if nothing survived."""
        if self._stream is None:
            return ""
        out = self._show(self._stream.flush())
        self.composed = compose_answer(
            self._stream.decisions,
            self.evidence,
            writes=self.policy.writes,
            falls_back_to_extractive=self.policy.falls_back_to_extractive,
            titles=self.titles,
            judgement=self.judgement,
            weak_sources=self.weak_sources,
            settings=self.settings,
        )
        if self.composed.style != "generative":  # auto's fallback, or generative's abstention
            shown_verdict = bool(self.extractive.verdict_text)
            texts = self._texts(self.composed, with_verdict=not shown_verdict)
            if shown_verdict and not self.composed.verdict_text:
                self.composed.verdict = self.extractive.verdict  # it was shown: it stays
                self.composed.verdict_sources = self.extractive.verdict_sources
                self.composed.lead = self.extractive.lead
            out += "".join(self._show(t) for t in texts)
        return out

    @staticmethod
    def _texts(answer: ComposedAnswer, *, with_verdict: bool = True) -> Iterator[str]:
        if with_verdict and answer.verdict_text:
            yield answer.verdict_text
        for s in answer.sentences:
            yield s.text

    @property
    def shown(self) -> str:
        return self._shown

    @property
    def dropped(self) -> list[DroppedSentence]:
        lead = [self.lead_dropped] if self.lead_dropped is not None else []
        if self._stream is None:
            return lead
        return lead + [
            DroppedSentence(text=d.raw.strip(), reason=d.reason)
            for d in self._stream.decisions
            if not d.kept and any(c.isalnum() for c in d.raw)  # not a stray "." or "[1]."
        ]

    def record(self) -> dict[str, Any]:
        """The grounding fields of the :class:`~chains.result.AnswerResult`."""
        return {
            "style": self.composed.style,
            "sentences": [
                CitedSentence(text=s.claim, citations=list(s.citations))
                for s in self.composed.sentences
            ],
            "verdict_sources": list(self.composed.verdict_sources) if self.verdict else [],
            "dropped": self.dropped,
            **judgement_record(self.judgement),
        }


def judgement_record(judgement: Judgement | None) -> dict[str, Any]:
    """The judgement's fields of the :class:`~chains.result.AnswerResult`."""
    if judgement is None:
        return {}
    return {
        "addresses_question": judgement.addressed,
        "missing_concepts": judgement.missing,
        "absent_concepts": judgement.absent_from_index,
        "verdict_reason": judgement.reason,
        "stance_summary": judgement.summary if judgement.reason != "not_yes_no" else "",
        "lead": judgement.lead,
        "lead_by": judgement.lead_by,
    }
