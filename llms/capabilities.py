"""What a chat model can do beyond chatting, declared on its class and asked, never guessed.

Our local models declare :data:`Capabilities` as a class attribute ``capabilities``; a model
without one (a test double, a third-party chat model) can do none of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from langchain_core.messages import BaseMessage


@dataclass(frozen=True)
class Capabilities:
    scores_likelihoods: bool = False  # implements LikelihoodScorer (yes/no option scores)
    continues_prefix: bool = False  # accepts ``assistant_prefix=`` (continues a begun turn)
    counts_tokens: bool = False  # ``encode_messages``: exact prompt token counts
    max_tokens_kwarg: str | None = None  # the per-call generation cap, for ``.bind(...)``


NONE = Capabilities()


@runtime_checkable
class LikelihoodScorer(Protocol):
    """A model that gives log-probabilities of given continuations."""

    def score_continuations(
        self, messages: Sequence[BaseMessage], continuations: Sequence[str], *, prefix: str = ""
    ) -> list[float]:
        """log P(continuation | prompt, the assistant turn opened with ``prefix``), each."""
        ...

    def score_after_prefixes(
        self,
        messages: Sequence[BaseMessage],
        prefixes: Sequence[str],
        continuation: str,
        *,
        max_tokens: int | None = None,
    ) -> list[float]:
        """log P(continuation's first ``max_tokens`` tokens | prompt, prefix), per prefix."""
        ...


@runtime_checkable
class TokenCountingModel(Protocol):
    def encode_messages(
        self, messages: Sequence[BaseMessage], *, add_generation_prompt: bool = True
    ) -> list[int]: ...


def capabilities(model: Any) -> Capabilities:
    """The model's declared capabilities (:data:`NONE` for a model that declares none)."""
    caps = getattr(type(model), "capabilities", None)
    return caps if isinstance(caps, Capabilities) else NONE


def as_scorer(model: Any) -> LikelihoodScorer | None:
    """The model as a :class:`LikelihoodScorer`, or None when it cannot score."""
    return model if capabilities(model).scores_likelihoods else None
