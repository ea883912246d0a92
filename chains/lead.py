"""Who writes a yes/no answer's lead sentence, decided in one place (:func:`decide_lead`).

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
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.runnables import Runnable, RunnableLambda

from chains.policy import AnswerPolicy
from chains.prompts import render
from chains.result import DroppedSentence
from chains.steps import ModelProvider
from chains.turn import Turn
from grounding.concepts import question_stems
from grounding.consensus import Judgement, agreeing
from grounding.lead import choose_lead
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


async def decide_lead(
    turn: Turn,
    model: ModelProvider,
    template: str,
    settings: GroundingSettings,
    policy: AnswerPolicy,
    timeout_s: float | None = None,
) -> Turn:
    """The turn with its judgement's lead decided (see the module docstring): unchanged unless
    the model may write it and its sentence passes the checks; a rejected sentence is kept in
    ``lead_dropped``."""
    judgement: Judgement | None = turn.get("judgement")
    if turn.get("refused") or turn.get("abstain") or not turn.get("verdict"):
        return turn
    if not asks_model(policy, judgement) or not template:
        return turn
    assert judgement is not None
    llm: BaseChatModel = model()
    if not policy.model_writes_lead(llm):
        return turn
    messages = lead_messages(template, turn["question"], judgement)
    chain = with_max_tokens(llm, LEAD_MAX_TOKENS) | StrOutputParser()
    try:
        written = await asyncio.wait_for(chain.ainvoke(messages), timeout_s)
    except TimeoutError:
        log.warning("the model's lead took over %ss: the lead composed from the stances", timeout_s)
        return turn
    searched = turn.get("searched_question") or turn["question"]
    choice = choose_lead(
        judgement, written, SupportChecker(turn["pool"], settings), question_stems(searched)
    )
    out: Turn = {**turn, "judgement": choice.judgement}
    if choice.written is not None and not choice.written.accepted:
        out["lead_dropped"] = DroppedSentence(
            text=choice.written.sentence or written.strip(),
            reason=f"lead: {choice.written.reason}",
        )
    return out


def make_lead_step(
    model: ModelProvider,
    template: str,
    settings: GroundingSettings,
    policy: AnswerPolicy,
    timeout_s: float | None = None,
) -> Runnable[Any, Any]:
    """Turn -> Turn: :func:`decide_lead` as a chain step (after ``find_evidence``)."""

    async def decide(turn: Turn) -> Turn:
        return await decide_lead(turn, model, template, settings, policy, timeout_s)

    def decide_sync(turn: Turn) -> Turn:
        return asyncio.run(decide(turn))

    return RunnableLambda(decide_sync, afunc=decide).with_config(run_name="decide_lead")
