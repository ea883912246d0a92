"""The answer policy (chains.policy.AnswerPolicy): ``answer.style`` and the model's capabilities
resolved once, in the Assistant, and read by the answer tail's steps (issue #26)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from chains.assistant import Assistant
from chains.policy import AnswerPolicy
from llms.capabilities import grant
from settings.config import Config
from tests.fake_retriever import FakeEncoder, FakeRetriever, make_doc

# style -> (writes, falls_back_to_extractive, asks_for_lead)
EXPECTED = {
    "extractive": (False, True, False),
    "generative": (True, False, True),
    "auto": (True, True, True),
}


@pytest.mark.parametrize("style", sorted(EXPECTED))
@pytest.mark.parametrize("writes_lead", [False, True])
def test_each_style_with_each_capability(style: Any, writes_lead: bool) -> None:
    policy = AnswerPolicy.resolve(style)
    writes, falls_back, asks = EXPECTED[style]
    assert (policy.writes, policy.falls_back_to_extractive, policy.asks_for_lead) == (
        writes, falls_back, asks,
    )  # fmt: skip
    model = grant(FakeListChatModel(responses=["x"]), writes_lead=writes_lead)
    # the model writes the lead only when the style asks AND the capability is granted
    assert policy.model_writes_lead(model) is (asks and writes_lead)


def test_an_unknown_style_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown answer style"):
        AnswerPolicy.resolve("poetic")  # type: ignore[arg-type]


def test_the_policy_is_frozen() -> None:
    policy = AnswerPolicy.resolve("auto")
    with pytest.raises(AttributeError):
        policy.writes = False  # type: ignore[misc]


DOCS = [
    make_doc("11", "Methylphenidate for ADHD in adults", "Methylphenidate improved ADHD symptoms."),
    make_doc("22", "Stimulants in children with ADHD", "Stimulant medication helped children."),
]


class NoModel(Assistant):
    """An Assistant whose model must not be loaded."""

    @property
    def llm(self) -> Any:
        raise AssertionError("the model was loaded")


@pytest.mark.parametrize("style", sorted(EXPECTED))
def test_the_assistant_resolves_it_once_and_the_tail_follows_it(style: Any) -> None:
    """The Assistant's policy is the style's; an extractive answer never touches the model, a
    writing one shows the model's (supported) sentence."""
    cfg = Config(answer={"style": style})
    retriever = FakeRetriever(list(DOCS), k=2)
    if AnswerPolicy.resolve(style).writes:
        llm = FakeListChatModel(responses=["Methylphenidate improved ADHD symptoms [1]."] * 4)
        a = Assistant(cfg, retriever, llm, count_tokens=lambda m: 10, encoder=FakeEncoder())
    else:
        a = NoModel(cfg, retriever, None, encoder=FakeEncoder())
    assert a.policy == AnswerPolicy.resolve(style)
    r = a.ask("What does methylphenidate do in ADHD?", mode="plain")
    assert r.style == ("generative" if a.policy.writes else "extractive"), r
