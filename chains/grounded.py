"""Evidence-first answers inside the answer tail: every displayed sentence cites a source that
supports it, whatever the model writes.

``find_evidence`` embeds the sources' whole abstracts once and picks each source's evidence
sentences (the key findings); ``decide`` (:mod:`chains.decision`) judges them once, with
:func:`judge_sources`. The write step then streams the answer through an
:class:`chains.writer.AnswerWriter`, which reads that decision and yields only display text:

- ``extractive`` (or abstention): the composed findings, no LLM call at all;
- ``generative`` / ``auto``: the verdict (naming its sources) at once, then each generated sentence
  as soon as the support check passes it (citations repaired, unsupported ones dropped); ``auto``
  falls back to the findings when no generated sentence survived.

The decisions are :mod:`grounding`'s (pure functions); this module only wires them to the stream.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from langchain_core.runnables import Runnable, RunnableLambda

from chains.result import EvidenceSpan
from chains.turn import Turn
from grounding.concepts import CorpusTerms, check_coverage, question_concepts
from grounding.consensus import Judgement, judge
from grounding.evidence import EvidenceSentence, select_evidence
from grounding.lead import support_check, with_finding
from grounding.sources import SentenceEncoder, SourcePool
from grounding.stance import StanceClassifier, asked_outcome, source_stance
from grounding.support import SupportChecker
from grounding.yes_no import is_yes_no_question
from indexing.stems import stem
from settings.grounding import GroundingSettings

log = logging.getLogger(__name__)

EncoderProvider = Callable[[], SentenceEncoder]


def make_evidence_step(
    encoder: EncoderProvider, settings: GroundingSettings
) -> Runnable[Any, Any]:
    """Turn -> Turn with ``pool`` (the whole abstracts the search results carry, split and
    embedded in one batch) and
    ``evidence`` (per source, its key findings; none from a retracted article)."""

    def find(turn: Turn) -> Turn:
        question = turn.get("searched_question") or turn["question"]
        pool = SourcePool.from_documents(question, turn["documents"], encoder())
        evidence = without_retracted(pool, select_evidence(pool, settings))
        return {**turn, "pool": pool, "evidence": evidence}

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
    yes_no: bool | None = None,
) -> Judgement:
    """Concept coverage of the question, then the stance of every source that covers every one
    of its essential concepts (:attr:`Coverage.complete`) and has a relevant sentence, then the
    verdict they support, and the lead sentence stating it with its deciding finding
    (:func:`grounding.lead.with_finding`).

    The concepts are the ``asked`` question's own; a follow-up searched in its conversation
    (``searched`` differs: "and does it hold when siblings are compared?" after "Is childhood IQ
    associated with mortality?") is about the conversation's topic too, so the ``searched`` text's
    concepts count, and a source on siblings alone does not address it."""
    concepts = question_concepts(searched if searched != asked else asked, corpus)
    coverage = check_coverage(concepts, pool, encoder, outcome=asked_outcome(searched))
    question_stems = {stem(w) for c in question_concepts(searched) for w in c.words}
    stances = [
        source_stance(
            pool.sources[n - 1],
            searched,
            question_stems,
            [(e.start, e.end) for e in evidence[n - 1]],
            classify,
        )
        for n in coverage.complete
        if any(e.similarity >= settings.relevance_bar for e in evidence[n - 1])
    ]
    j = judge(coverage, stances, yes_no=is_yes_no_question(asked) if yes_no is None else yes_no)
    # the lead states the deciding finding when the support check passes it for its source
    return with_finding(j, support_check(lambda: SupportChecker(pool, settings)))


def evidence_spans(evidence: list[EvidenceSentence]) -> list[EvidenceSpan]:
    return [
        EvidenceSpan(text=e.text, start=e.start, end=e.end, section=e.section) for e in evidence
    ]
