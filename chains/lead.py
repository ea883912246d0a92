"""Who writes a yes/no answer's lead sentence, decided in one place (:class:`LeadWriter`, asked
by ``decide``: :mod:`chains.decision`).

The lead composed from the stances (:func:`grounding.lead.with_finding`, in ``find_evidence``) is
the default for every model. The model writes it instead only when all of these hold:

- ``answer.style`` lets the model write (``auto`` or ``generative``; ``extractive`` never asks:
  :attr:`chains.policy.AnswerPolicy.asks_for_lead`);
- the stances gave a verdict (the sources agree, plainly): the model states it, never decides it;
- the model's capabilities say it writes leads (``writes_lead``, granted in cfg.yaml by
  ``llm.writes_lead``; no backend class grants it, so the 135M default is never asked).

Its sentence (``prompts/lead.txt``: the verdict, the counts and the deciding sentences) is shown
only when :func:`grounding.lead.check_written_lead` accepts it: it states the stances' verdict,
and the support check passes it. Otherwise the composed lead stays, and the model's sentence is
reported among the dropped ones. The verdict is the stances' whatever the model writes.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.output_parsers import StrOutputParser

from chains.policy import AnswerPolicy
from chains.prompts import render
from chains.result import DroppedSentence
from chains.steps import ModelProvider
from grounding.concepts import question_stems
from grounding.consensus import Judgement, agreeing
from grounding.lead import choose_lead
from grounding.sources import SourcePool
from grounding.support import SupportChecker
from llms.llm import with_max_tokens
from settings.grounding import GroundingSettings

log = logging.getLogger(__name__)

LEAD_MAX_TOKENS = 64  # one sentence


def asks_model(policy: AnswerPolicy, judgement: Judgement | None) -> bool:
    """Whether the answer could use a model-written lead at all (no model needed to tell)."""
    return (
        policy.asks_for_lead
        and judgement is not None
        and judgement.reason == "agree"
        and judgement.verdict is not None
    )


def lead_messages(template: str, question: str, j: Judgement) -> list[BaseMessage]:
    """The lead prompt: the verdict, the counts and the verdict sources' deciding sentences."""
    findings = "\n".join(
        f"[{s.source}] {s.sentence.strip()}"
        for s in j.stances
        if s.stance == j.verdict and s.sentence
    )
    counts = agreeing(j)  # "3 of 3 studies"
    verdict = (j.verdict or "").capitalize()
    text = render(template, question=question, verdict=verdict, counts=counts, findings=findings)
    return [HumanMessage(text)]


@dataclass(frozen=True)
class LeadWriter:
    """The model's lead for a shown verdict (see the module docstring): called by ``decide``
    (:mod:`chains.decision`) only when a verdict is shown; the judgement comes back unchanged
    unless the model may write the lead and its sentence passes the checks, with a rejected
    sentence as a :class:`DroppedSentence`."""

    model: ModelProvider
    template: str
    settings: GroundingSettings
    policy: AnswerPolicy
    timeout_s: float | None = None

    async def __call__(
        self, question: str, searched: str, judgement: Judgement, pool: SourcePool
    ) -> tuple[Judgement, DroppedSentence | None]:
        if not asks_model(self.policy, judgement) or not self.template:
            return judgement, None
        llm: BaseChatModel = self.model()
        if not self.policy.model_writes_lead(llm):
            return judgement, None
        messages = lead_messages(self.template, question, judgement)
        chain = with_max_tokens(llm, LEAD_MAX_TOKENS) | StrOutputParser()
        try:
            written = await asyncio.wait_for(chain.ainvoke(messages), self.timeout_s)
        except TimeoutError:
            log.warning("the model's lead took over %ss: the lead composed from the stances",
                        self.timeout_s)  # fmt: skip
            return judgement, None
        checker = SupportChecker(pool, self.settings)
        choice = choose_lead(judgement, written, checker, question_stems(searched))
        if choice.written is None or choice.written.accepted:
            return choice.judgement, None
        dropped = DroppedSentence(
            text=choice.written.sentence or written.strip(),
            reason=f"lead: {choice.written.reason}",
        )
        return choice.judgement, dropped
