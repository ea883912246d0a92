"""How an answer is made, decided once per :class:`~chains.assistant.Assistant` from
``answer.style`` and the model's capabilities, and passed to the steps of the answer tail
(:func:`chains.answer.build_answer_tail`), so no step reads the style itself:

- ``extractive``: the key findings only; the LLM is never asked (nor loaded to count tokens);
- ``generative``: the LLM's sentences that pass the support check (none passed: abstention);
- ``auto``: generative, falling back to the extractive findings when no sentence passed.

A yes/no answer's lead sentence is asked of the model only when the style lets it write and the
model's capabilities say it writes leads (``writes_lead``, granted by cfg ``llm.writes_lead``):
:meth:`AnswerPolicy.model_writes_lead`, read when the model is loaded (the model loads lazily, and
the extractive default never loads it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llms.capabilities import capabilities
from settings.grounding import AnswerStyle


@dataclass(frozen=True)
class AnswerPolicy:
    writes: bool  # the LLM writes the answer (its sentences, support-checked)
    falls_back_to_extractive: bool  # nothing written passed: the findings (else abstention)
    asks_for_lead: bool  # the model may be asked for a yes/no lead (if it writes leads)

    @classmethod
    def resolve(cls, style: AnswerStyle) -> AnswerPolicy:
        """The policy of an ``answer.style``; the one place the style string is read."""
        if style == "extractive":
            return cls(writes=False, falls_back_to_extractive=True, asks_for_lead=False)
        if style == "generative":
            return cls(writes=True, falls_back_to_extractive=False, asks_for_lead=True)
        if style == "auto":
            return cls(writes=True, falls_back_to_extractive=True, asks_for_lead=True)
        raise ValueError(f"unknown answer style {style!r}")

    def model_writes_lead(self, model: Any) -> bool:
        """Whether ``model`` writes the lead: the style asks, and its capabilities say it can."""
        return self.asks_for_lead and capabilities(model).writes_lead
