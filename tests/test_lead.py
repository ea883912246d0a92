"""The lead sentence of a yes/no answer (issue #25, "A lead sentence that answers"): composed from
the stances for every model, written by a model only where cfg.yaml says it can, and shown only
when it passes the support check and states the stances' verdict. Fake models, fake retrieval,
a bag-of-words encoder: no model, no index (``test_lead_real.py`` runs the real ones)."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import BaseMessage

from app.config import Config, HuggingFaceLLMConfig, load_config
from chains.assistant import Assistant
from grounding.compose import compose_extractive
from grounding.concepts import check_coverage, question_concepts, question_stems
from grounding.consensus import judge
from grounding.evidence import select_evidence
from grounding.lead import finding_clause, support_check, with_finding
from grounding.sources import SourcePool
from grounding.stance import source_stance
from grounding.support import SupportChecker
from llms.capabilities import Capabilities, capabilities, grant
from llms.gpt4all_chat import GPT4AllChatModel
from llms.hf_chat import LocalHFChatModel
from tests.fake_retriever import FakeEncoder, FakeRetriever, make_doc

QUESTION = "Does working memory training improve fluid intelligence?"
ABSTRACTS = [
    "BACKGROUND: We examined working memory training in 120 adults. RESULTS: Trained "
    "participants improved on the trained task. CONCLUSIONS: In conclusion, our results show "
    "that working memory training did not improve fluid intelligence.",
    "We randomised 80 students to adaptive working memory training or a control game. Working "
    "memory training did not transfer to fluid intelligence in young adults.",
]
TITLES = ["Working memory training and fluid intelligence", "Transfer of training"]
LEAD = (
    "No (2 of 2 studies) [1, 2]: Working memory training did not improve fluid intelligence [1]."
)


def judged(abstracts: list[str] = ABSTRACTS, supports: Any = None):  # noqa: ANN201
    """The judgement of the question over ``abstracts``, its lead stating the deciding finding
    (the pool's support check unless ``supports`` is given), the pool and the evidence."""
    pool = SourcePool.build(QUESTION, abstracts, FakeEncoder(), titles=TITLES[: len(abstracts)])
    stems = question_stems(QUESTION)
    evidence = select_evidence(pool)
    stances = [source_stance(s, QUESTION, stems) for s in pool.sources]
    j = judge(check_coverage(question_concepts(QUESTION), pool), stances, yes_no=True)
    check = supports or support_check(lambda: SupportChecker(pool))
    return with_finding(j, check), pool, evidence


# ---- the lead composed from the stances (every model) ------------------------------------------


def test_the_lead_states_the_verdict_how_many_agree_and_the_deciding_finding_cited() -> None:
    from eval.support_scorer import score_answer, sentences

    j, _, _ = judged()
    assert j.verdict == "no" and j.verdict_sources == [1, 2]
    assert j.lead == LEAD and j.lead_by == "stances"
    # the finding is the abstract's own sentence, less "In conclusion, our results show that"
    assert j.lead_quotes.startswith("In conclusion, our results show that working memory")
    # eval grounding's independent scorer leaves the count out and scores the finding
    assert sentences(j.lead) == ["Working memory training did not improve fluid intelligence [1]."]
    assert score_answer(j.lead, ABSTRACTS).rate == 1.0
    # one study: the count needs no citation of its own
    one, _, _ = judged(ABSTRACTS[1:])
    assert one.lead == (
        "No (1 study): Working memory training did not transfer to fluid intelligence in young "
        "adults [1]."
    )


def test_a_finding_the_support_check_does_not_pass_leaves_the_verdict_line_alone() -> None:
    j, _, _ = judged(supports=lambda claim, n: n == 2)  # [1]'s finding "unsupported"
    assert j.lead == (
        "No (2 of 2 studies) [1, 2]: Working memory training did not transfer to fluid "
        "intelligence in young adults [2]."
    )
    nothing, _, _ = judged(supports=lambda claim, n: False)
    assert nothing.lead == "No (2 of 2 studies) [1, 2]." and nothing.lead_quotes == ""


def test_the_finding_is_verbatim_less_a_frame_that_states_no_doubt() -> None:
    assert finding_clause("Overall, we found that X did not improve Y in adults.") == (
        "X did not improve Y in adults."
    )
    # a hedge is kept: the lead claims no more than the abstract
    hedged = "These results suggest that stimulants may not improve grades in children."
    assert finding_clause(hedged) == hedged
    # so is a scope: the lead claims it no more widely than the abstract
    scoped = "In the present study, the use of an endoscope did not increase infections."
    assert finding_clause(scoped) == scoped
    assert finding_clause("In conclusion, it did not.") == "In conclusion, it did not."
    assert finding_clause("Thus, mRNA levels did not change in any group.").startswith("mRNA")


def test_the_deciding_sentence_the_lead_states_is_not_quoted_again() -> None:
    j, _, evidence = judged()
    answer = compose_extractive(evidence, titles=TITLES, judgement=j)
    assert answer.text.startswith(
        LEAD + " Working memory training did not transfer to fluid intelligence in young "
        "adults [2]."
    )
    assert answer.text.count("did not improve fluid intelligence") == 1


def test_the_scorer_reads_citation_ranges_and_scores_a_lead_on_its_finding() -> None:
    from eval.support_scorer import cites, score_answer

    assert cites("Claim [1–3].") == [1, 2, 3] and cites("Claim [1, 3-4].") == [1, 3, 4]
    # a lead whose finding its cited source does not hold is unsupported, count or not
    wrong = "No (2 of 2 studies) [1, 2]: Statins cured dementia in older adults [1]."
    assert score_answer(wrong, ABSTRACTS).rate == 0.0


# ---- a lead the model writes -------------------------------------------------------------------


DOCS = [make_doc(str(10 + i), t, a) for i, (t, a) in enumerate(zip(TITLES, ABSTRACTS, strict=True))]


class LeadWriter(FakeListChatModel):
    """A chat model cfg.yaml trusts to write leads; records every prompt."""

    capabilities: ClassVar[Capabilities] = Capabilities(writes_lead=True)
    prompts: list[list[BaseMessage]] = []

    def _call(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> str:
        self.prompts.append(messages)
        return super()._call(messages, *args, **kwargs)

    def _stream(self, messages: list[BaseMessage], *args: Any, **kwargs: Any):  # noqa: ANN202
        self.prompts.append(messages)
        yield from super()._stream(messages, *args, **kwargs)

    async def _astream(self, messages: list[BaseMessage], *args: Any, **kwargs: Any):  # noqa: ANN202
        self.prompts.append(messages)
        async for chunk in super()._astream(messages, *args, **kwargs):
            yield chunk


class Default135M(LeadWriter):
    """The default model's declared capabilities (gpt4all's SmolLM2): no lead writing."""

    capabilities: ClassVar[Capabilities] = GPT4AllChatModel.capabilities


ANSWER = "Working memory training did not improve fluid intelligence [1]."


def ask(llm: LeadWriter, style: str = "auto"):  # noqa: ANN201
    a = Assistant(Config(answer={"style": style}), FakeRetriever(DOCS, k=2), llm,
                  count_tokens=lambda m: 10, encoder=FakeEncoder())  # fmt: skip
    return a.ask(QUESTION, mode="plain")


def lead_prompts(llm: LeadWriter) -> list[str]:
    return [str(m[0].content) for m in llm.prompts if "The studies' answer" in str(m[0].content)]


def test_a_supported_lead_stating_the_stances_verdict_is_the_models() -> None:
    written = ("No, 2 of 2 studies found that working memory training did not improve fluid "
               "intelligence [1].")  # fmt: skip
    llm = LeadWriter(responses=[written, ANSWER], prompts=[])
    r = ask(llm)
    assert r.verdict == "no" and r.lead_by == "model"
    assert r.lead == written and r.answer.startswith(written)
    # the model was given the verdict, the count and the deciding sentences
    (prompt,) = lead_prompts(llm)
    assert "No (2 of 2 studies)" in prompt and "[2] Working memory training did not transfer" in (
        prompt
    )
    assert not [d for d in r.dropped if d.reason.startswith("lead")]


@pytest.mark.parametrize(
    ("written", "why"),
    [
        # the opposite verdict, in words the abstracts hold
        ("Yes, 2 of 2 studies examined working memory training and fluid intelligence [1].",
         "states yes; the stances say no"),
        # the stances' word, then a finding that reads the other way
        ("No: trained participants improved on the trained task and fluid intelligence [1].",
         "its finding reads yes"),
        # a claim no source makes
        ("No, 2 of 2 studies found that aspirin did not reduce migraine frequency [1].",
         "unsupported"),
        # a count the stances do not give
        ("No, five of five studies found that working memory training did not improve fluid "
         "intelligence [1].", "counts"),
        ("Working memory training did not improve fluid intelligence [1].", "states no verdict"),
    ],
)  # fmt: skip
def test_a_lead_that_contradicts_the_stances_or_is_unsupported_is_not_shown(
    written: str, why: str
) -> None:
    llm = LeadWriter(responses=[written, ANSWER], prompts=[])
    r = ask(llm)
    assert lead_prompts(llm), "the model was asked"
    assert r.verdict == "no" and r.lead_by == "stances" and r.lead == LEAD
    assert r.answer.startswith(LEAD)
    (dropped,) = [d for d in r.dropped if d.reason.startswith("lead")]
    assert dropped.text == written and why in dropped.reason, dropped.reason


def test_the_135m_default_is_never_asked_for_a_lead() -> None:
    # nothing grants it: not its backend classes, not the config's default, not cfg.yaml
    assert not GPT4AllChatModel.capabilities.writes_lead
    assert not LocalHFChatModel.capabilities.writes_lead
    assert not HuggingFaceLLMConfig().writes_lead and not load_config().llm.writes_lead
    llm = Default135M(responses=[ANSWER], prompts=[])
    assert not capabilities(grant(llm, writes_lead=load_config().llm.writes_lead)).writes_lead
    r = ask(llm)
    assert not lead_prompts(llm) and len(llm.prompts) == 1  # the answer only
    assert r.lead == LEAD and r.lead_by == "stances"
    # the model's answer says the lead's finding again: not shown twice
    assert r.answer.count("did not improve fluid intelligence") == 1, r.answer
    # the extractive style asks no model anything, even one that could write the lead
    writer = LeadWriter(responses=[ANSWER], prompts=[])
    assert ask(writer, style="extractive").lead == LEAD and writer.prompts == []


def test_cfg_yaml_grants_lead_writing_to_the_model_it_builds() -> None:
    llm = grant(Default135M(responses=["x"], prompts=[]), writes_lead=True)
    assert capabilities(llm).writes_lead and capabilities(llm).continues_prefix
    with pytest.raises(ValueError, match="scores_likelihoods"):
        grant(llm, scores_likelihoods=True)  # what a backend implements is not the config's


def test_a_follow_ups_rewrite_prompt_keeps_the_leads_finding_not_its_count() -> None:
    from chains.prompts import format_history

    history = format_history([(QUESTION, LEAD + " Working memory training did not transfer.")])
    assert "No (2 of 2 studies)" not in history
    assert "Assistant: Working memory training did not improve fluid intelligence [1]." in history
    bare = format_history([(QUESTION, "No (2 of 2 studies) [1, 2]. Training failed [1].")])
    assert bare.endswith("Assistant: Training failed [1].")
