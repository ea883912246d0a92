"""What a chat model can do beyond chatting, declared on its class and asked, never guessed.

Our local models declare :data:`Capabilities` as a class attribute ``capabilities``; a model
without one (a test double, a third-party chat model) can do none of it.

What a backend class cannot know, because it depends on the weights it runs, is granted per model
from cfg.yaml (:data:`GRANTABLE`, e.g. ``llm.writes_lead``) by :func:`grant` when the model is
built, and read back by :func:`capabilities` like a declared one. No class grants it itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

from langchain_core.messages import BaseMessage


@dataclass(frozen=True)
class Capabilities:
    scores_likelihoods: bool = False  # implements LikelihoodScorer (yes/no option scores)
    continues_prefix: bool = False  # accepts ``assistant_prefix=`` (continues a begun turn)
    counts_tokens: bool = False  # ``encode_messages``: exact prompt token counts
    max_tokens_kwarg: str | None = None  # the per-call generation cap, for ``.bind(...)``
    # writes a yes/no answer's lead sentence well enough to be shown once the support check and
    # the stances' verdict pass it (chains.lead); granted in cfg.yaml, never to the 135M default
    writes_lead: bool = False


NONE = Capabilities()
# Capabilities of the weights, not of the backend: granted per model from cfg.yaml (llm.*).
GRANTABLE = frozenset({"writes_lead"})
_GRANTED = "granted_capabilities"  # where a model keeps its grants: its LangChain ``metadata``


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
    """The model's declared capabilities (:data:`NONE` for a model that declares none), with
    those granted to it from cfg.yaml (:func:`grant`)."""
    caps = getattr(type(model), "capabilities", None)
    caps = caps if isinstance(caps, Capabilities) else NONE
    metadata = getattr(model, "metadata", None)
    granted = metadata.get(_GRANTED) if isinstance(metadata, dict) else None
    if granted:
        on: dict[str, Any] = {name: True for name in granted if name in GRANTABLE}
        caps = replace(caps, **on)
    return caps


def grant(model: Any, **flags: bool) -> Any:
    """Grant ``model`` the capabilities of :data:`GRANTABLE` set true in ``flags`` (cfg.yaml's
    say about the weights); kept in the model's LangChain ``metadata`` (shown in traces)."""
    unknown = set(flags) - GRANTABLE
    if unknown:
        raise ValueError(f"not grantable from the config: {', '.join(sorted(unknown))}")
    names = sorted(name for name, on in flags.items() if on)
    if names:
        model.metadata = {**(getattr(model, "metadata", None) or {}), _GRANTED: names}
    return model


def as_scorer(model: Any) -> LikelihoodScorer | None:
    """The model as a :class:`LikelihoodScorer`, or None when it cannot score."""
    return model if capabilities(model).scores_likelihoods else None
