"""The one entry point that decides the model-based yes/no verdict ``eval answers`` measures (the
chat's verdict is the sources' stances': :func:`grounding.consensus.judge`).

``VerdictDecider.decide(llm, question, documents)`` fits the documents into the yes/no prompt's
budget, then decides by the configured method: ``classifier`` (the top article's conclusion, its
wording cues and the model's channel scores), ``score`` (calibrated option log-probs after the
yes/no prompt) or ``json`` (the model writes ``{"draft", "answer"}``; broken JSON is scored).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel

from chains.budget import TokenCounter, fit_prompt
from chains.prompts import Prompts
from eval.verdict.calibration import Calibration, Method
from eval.verdict.cues import CHANNEL_FEATURES, LLM_FEATURES
from eval.verdict.evidence import ArticleTails, verdict_evidence
from eval.verdict.scoring import (
    VerdictOutcome,
    classify_verdict,
    generate_verdict,
    load_channel_template,
    load_evidence_template,
    score_verdict,
    verdict_features,
    yes_no_messages,
)
from ingest.metadata import ChunkMeta
from llms.capabilities import as_scorer
from retrievers.service import SearchService

# room left for the verdict's few generated/scored tokens in the yes/no prompt's budget
VERDICT_TOKENS = 80


@dataclass
class VerdictDecider:
    method: Method
    calibration: Calibration
    yes_no_template: str
    evidence_template: str
    channel_template: str
    article_tail: Callable[[Document], str | None] | None = None
    max_words: int | None = 160  # words of each passage in the yes/no prompt (None: all)
    context_window: int = 2048

    @classmethod
    def from_prompts(
        cls,
        prompts: Prompts,
        calibration: Calibration,
        *,
        context_window: int,
        retriever: SearchService | None = None,
        method: Method | None = None,
        max_words: int | None = 160,
    ) -> VerdictDecider:
        """The decider for these prompts; with a ``retriever``, the verdict reads the top
        article's last chunk (where an abstract's conclusion is)."""
        return cls(
            method=method or calibration.method,
            calibration=calibration,
            yes_no_template=prompts.yes_no,
            evidence_template=load_evidence_template(prompts.yes_no_path),
            channel_template=load_channel_template(prompts.yes_no_path),
            article_tail=ArticleTails(retriever) if retriever is not None else None,
            max_words=max_words,
            context_window=context_window,
        )

    def usable_with(self, llm: BaseChatModel) -> bool:
        """Whether this model can serve the method (scoring needs a model that scores)."""
        if self.method == "json":
            return True
        if self.method == "classifier":
            return self.calibration.classifier_for(as_scorer(llm) is not None) is not None
        return as_scorer(llm) is not None

    def fit(
        self, question: str, documents: Sequence[Document], count_tokens: TokenCounter
    ) -> list[Document]:
        """The documents that fit the yes/no prompt (lowest-ranked dropped first)."""
        fitted = fit_prompt(
            lambda d, _h: yes_no_messages(self.yes_no_template, question, d, self.max_words),
            documents,
            [],
            count_tokens,
            self.context_window - VERDICT_TOKENS,
        )
        return fitted.documents

    def decide(
        self,
        llm: BaseChatModel,
        question: str,
        documents: Sequence[Document],
        count_tokens: TokenCounter,
    ) -> VerdictOutcome:
        """The verdict, naming the documents it read (``sources``: 1-based positions in
        ``documents``): the classifier reads the top one, the other methods all that fit.
        Retracted articles are never read: a retraction must not decide a verdict."""
        positions = [i for i, d in enumerate(documents, 1)
                     if not ChunkMeta.from_metadata(d.metadata).retracted]
        if not positions:
            return VerdictOutcome(None, {})
        docs = self.fit(question, [documents[i - 1] for i in positions], count_tokens)
        outcome = self._decide(llm, question, docs)
        read = 1 if self.method == "classifier" else len(docs)
        outcome.sources = positions[: min(read, len(docs))]
        return outcome

    def _decide(
        self, llm: BaseChatModel, question: str, docs: list[Document]
    ) -> VerdictOutcome:
        if self.method == "classifier":
            clf = self.calibration.classifier_for(as_scorer(llm) is not None)
            return classify_verdict(
                llm, question, docs, replace(self.calibration, classifier=clf),
                template=self.evidence_template, article_tail=self.article_tail,
                channel_template=self.channel_template,
            )  # fmt: skip
        if self.method == "score":
            scorer = as_scorer(llm)
            if scorer is None:
                raise ValueError("method score needs a model that scores (see usable_with)")
            return score_verdict(
                scorer, self.yes_no_template, question, docs, self.calibration,
                max_words=self.max_words,
            )  # fmt: skip
        return generate_verdict(
            llm, self.yes_no_template, question, docs, self.calibration, max_words=self.max_words
        )

    def features(
        self,
        llm: BaseChatModel,
        question: str,
        documents: Sequence[Document],
        count_tokens: TokenCounter,
        wanted: Sequence[str],
    ) -> VerdictOutcome:
        """The classifier's inputs only (for fitting it: ``eval answers --calibrate``)."""
        docs = self.fit(question, documents, count_tokens)
        evidence = verdict_evidence(question, docs, self.article_tail)
        feats, lps = verdict_features(
            llm, question, evidence, self.evidence_template,
            with_llm=bool(set(wanted) & set(LLM_FEATURES)),
            with_channel=bool(set(wanted) & set(CHANNEL_FEATURES)),
            channel_template=self.channel_template,
        )  # fmt: skip
        return VerdictOutcome(None, lps, features=feats, evidence=evidence.text)
