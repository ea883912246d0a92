"""What the user sees of one answer, written from its :class:`~chains.decision.Decision`:
the opening at once, then the model's sentences as the support check passes them (``auto``:
the findings when none survived; ``generative``: the abstention), and the final record."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from chains.policy import AnswerPolicy
from chains.result import CitedSentence, DroppedSentence
from chains.turn import Decision
from grounding.compose import ComposedAnswer, compose_answer
from grounding.consensus import Judgement
from grounding.lead import finding_clause
from grounding.stream import GroundedStream
from grounding.support import SupportChecker
from settings.grounding import GroundingSettings


class AnswerWriter:
    """Turns one question's generated pieces into what the user sees, and the final record,
    from its :class:`~chains.decision.Decision` (read, never changed).

    ``opening()`` is shown first; ``feed(piece)`` / ``finish()`` return display text (possibly
    "") to append; afterwards ``composed`` is the answer and ``dropped`` what was not shown. The
    concatenation of everything returned equals ``composed.text``.
    """

    def __init__(self, decision: Decision, settings: GroundingSettings, policy: AnswerPolicy
                 ) -> None:  # fmt: skip
        self.decision = decision
        self.policy = policy
        self.uses_llm = decision.uses_llm
        self._stream = (
            GroundedStream(SupportChecker(decision.pool, settings)) if self.uses_llm else None
        )
        quoted = decision.judgement.lead_quotes
        if self._stream is not None and quoted:  # the model does not say the lead's finding again
            for claim in (quoted, finding_clause(quoted)):
                self._stream.checker.shown_already(claim)
        self._shown = ""
        self.composed: ComposedAnswer = decision.extractive

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
        extractive = self.decision.extractive
        texts = [extractive.verdict_text] if self.uses_llm else list(_texts(extractive))
        return [shown for shown in (self._show(t) for t in texts) if shown]

    def feed(self, piece: str) -> str:
        return self._show(self._stream.feed(piece)) if self._stream else ""

    def finish(self) -> str:
        """End of generation: the last sentence, then the findings (``auto``'s fallback) or the
        abstention (``generative``) when no generated sentence survived; the opening already
        showed the verdict."""
        if self._stream is None:
            return ""
        out = self._show(self._stream.flush())
        self.composed = compose_answer(
            self._stream.decisions, self.decision.extractive, writes=self.policy.writes,
            falls_back_to_extractive=self.policy.falls_back_to_extractive,
            titles=self.decision.titles,
        )  # fmt: skip
        if self.composed.style != "generative":
            out += "".join(self._show(s.text) for s in self.composed.sentences)
        return out

    @property
    def shown(self) -> str:
        return self._shown

    @property
    def dropped(self) -> list[DroppedSentence]:
        lead = [self.decision.lead_dropped] if self.decision.lead_dropped is not None else []
        if self._stream is None:
            return lead
        return lead + [
            DroppedSentence(text=d.raw.strip(), reason=d.reason)
            for d in self._stream.decisions
            if not d.kept and any(c.isalnum() for c in d.raw)  # not a stray "." or "[1]."
        ]

    def record(self) -> dict[str, Any]:
        """The grounding fields of the :class:`~chains.result.AnswerResult`."""
        verdict = self.decision.verdict
        return {
            "style": self.composed.style,
            "sentences": [
                CitedSentence(text=s.claim, citations=list(s.citations))
                for s in self.composed.sentences
            ],
            "verdict": verdict if self.composed.verdict else None,
            "verdict_sources": list(self.composed.verdict_sources) if verdict else [],
            "dropped": self.dropped,
            **judgement_record(self.decision.judgement),
        }


def _texts(answer: ComposedAnswer) -> Iterator[str]:
    if answer.verdict_text:
        yield answer.verdict_text
    for s in answer.sentences:
        yield s.text


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
