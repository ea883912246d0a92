"""Grounding, fast: splitting, numbers, citations, support check, streaming release, composition.

A hashing bag-of-words encoder stands in for MiniLM here; ``test_grounding_real.py`` runs the real
model on real abstracts.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from langchain_core.runnables import RunnableGenerator

from chains.policy import AnswerPolicy
from grounding.compose import ABSTAIN, compose_answer, compose_extractive
from grounding.consensus import Judgement, lead_sentence
from grounding.evidence import EvidenceSentence, select_evidence
from grounding.sentences import split_answer
from grounding.sources import SourcePool
from grounding.stance import SourceStance
from grounding.stream import GroundedStream, filter_answer, grounded_runnable
from grounding.support import SupportChecker, with_citations
from grounding.terms import citation_numbers, content_terms, numbers, strip_citations
from ingest.sentences import split_sentences
from settings.grounding import AnswerStyle, GroundingSettings


class HashEncoder:
    """Bag of words hashed into 256 dims, L2-normalised: similar words -> similar vectors."""

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), 256), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"[a-z0-9]+", t.lower()):
                out[i, int(hashlib.md5(w.encode()).hexdigest(), 16) % 256] += 1
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.clip(norms, 1e-9, None)


ABSTRACT_1 = (
    "BACKGROUND: Statins lower cholesterol. Their effect on dementia is unclear (e.g. in "
    "Smith et al. 2010).\n"
    "METHODS: We followed 1,200 adults aged 65 years or older for 8 years.\n"
    "RESULTS: Statin use was associated with lower dementia risk (OR 0.78, 95% CI 0.61-0.99; "
    "p < 0.05) vs. non-use. Of users, 73% took simvastatin.\n"
    "CONCLUSIONS: Statin use may reduce dementia risk in older adults."
)
ABSTRACT_2 = (
    "Sleep duration was measured by actigraphy in 310 adolescents. Short sleep predicted "
    "poorer grades in mathematics. Longer sleep improves school performance."
)


def make_pool(question: str = "Do statins reduce dementia risk in older adults?") -> SourcePool:
    return SourcePool.build(question, [ABSTRACT_1, ABSTRACT_2], HashEncoder())


# ---- splitting ---------------------------------------------------------------------------------


def test_split_keeps_effect_sizes_abbreviations_and_offsets() -> None:
    sents = split_sentences(ABSTRACT_1)
    texts = [s.text for s in sents]
    assert texts == [
        "Statins lower cholesterol.",
        "Their effect on dementia is unclear (e.g. in Smith et al. 2010).",
        "We followed 1,200 adults aged 65 years or older for 8 years.",
        "Statin use was associated with lower dementia risk (OR 0.78, 95% CI 0.61-0.99; "
        "p < 0.05) vs. non-use.",
        "Of users, 73% took simvastatin.",
        "Statin use may reduce dementia risk in older adults.",
    ]
    assert [s.section for s in sents] == [
        "BACKGROUND",
        "BACKGROUND",
        "METHODS",
        "RESULTS",
        "RESULTS",
        "CONCLUSIONS",
    ]
    assert all(ABSTRACT_1[s.start : s.end] == s.text for s in sents)
    assert [s.kind for s in sents][-3:] == ["result", "result", "conclusion"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Mean age was 54.3 years. The rest", ["Mean age was 54.3 years.", "The rest"]),
        ("See Fig. 2 for details. Next one.", ["See Fig. 2 for details.", "Next one."]),
        ("It was high vs. Low group. Ok.", ["It was high vs. Low group.", "Ok."]),
        ("Patients had MS. The cohort.", ["Patients had MS.", "The cohort."]),
        ("It held (n = 12. Pooled) overall. Next.", ["It held (n = 12. Pooled) overall.", "Next."]),
        ("Risk rose. 95% of cases were mild.", ["Risk rose.", "95% of cases were mild."]),
        ("One. TWO PARTS: inline label here.", ["One.", "inline label here."]),
        ("", []),
    ],
)
def test_split_edge_cases(text: str, expected: list[str]) -> None:
    assert [s.text for s in split_sentences(text)] == expected


def test_inline_label_becomes_section() -> None:
    sents = split_sentences("Aim stated. RESULTS: It worked. CONCLUSION: Use it.")
    assert [(s.section, s.text) for s in sents] == [
        (None, "Aim stated."),
        ("RESULTS", "It worked."),
        ("CONCLUSION", "Use it."),
    ]


def test_split_answer_keeps_trailing_citation_with_its_sentence() -> None:
    assert split_answer("A rose. [1] [2] B fell [3]. C (n = 3. D") == [
        "A rose. [1] [2]",
        "B fell [3].",
        "C (n = 3. D",
    ]


# ---- terms -------------------------------------------------------------------------------------


def test_numbers_are_normalised_and_citations_ignored() -> None:
    s = "OR 1.80 (95% CI 1.2-2.4; p < .05) in 1,000 COVID-19 cases [1, 3] [Source 4-5]."
    assert numbers(s) == {"1.8", "95", "1.2", "2.4", "0.05", "1000", "19"}
    assert citation_numbers(s) == [1, 3, 4, 5]
    assert "[" not in strip_citations(s)
    assert not any(t[0].isdigit() for t in content_terms(s))
    # a compound counts as its words, once: one shared compound cannot outvote the other words
    assert content_terms("Attention-deficit/hyperactivity disorder in adults") == {
        "attention", "deficit", "hyperactivity", "disorder", "adults"
    }
    assert "covid" in content_terms(s) and "covid-19" not in content_terms(s)
    # generic words are left out of the overlap with the best sentences, not out of the words
    assert "study" not in content_terms("The study found lower risk")
    assert "study" in content_terms("The study found lower risk", generic=True)


def test_the_one_content_word_rule() -> None:
    """grounding.terms.content_words, which the question and verdict words use too."""
    from grounding.terms import content_words

    words = ["The", "'Stroke'", "risk", "in", "AF", "af", "UK", "ox", "2019", "IQ-", "of", "x"]
    # lower-cased, trimmed, once each, in order; stopwords out
    assert content_words(words) == ["stroke", "risk", "af", "uk", "ox", "2019", "iq"]
    # short words only in capitals (an acronym)
    assert content_words(words, min_len=3) == ["stroke", "risk", "af", "uk", "2019", "iq"]
    # words without a letter only when numbers count
    assert "2019" not in content_words(words, numbers=False)
    assert content_words(words, stopwords={"risk"}) == [
        "the", "stroke", "in", "af", "uk", "ox", "2019", "iq", "of"
    ]  # fmt: skip


# ---- evidence ----------------------------------------------------------------------------------


def test_evidence_prefers_answering_results_and_conclusions() -> None:
    pool = make_pool()
    ev = select_evidence(pool)
    assert [e.source for e in ev[0]] == [1] * len(ev[0]) and ev[1][0].source == 2
    first = ev[0]
    assert any("Statin use may reduce dementia risk" in e.text for e in first)
    for e in first:
        assert ABSTRACT_1[e.start : e.end] == e.text
        assert e.section in ("RESULTS", "CONCLUSIONS")


def test_evidence_prior_outweighs_a_background_sentence_echoing_the_question() -> None:
    pool = make_pool("Is the effect of statins on dementia unclear?")
    sections = {e.section for e in select_evidence(pool)[0]}
    assert sections <= {"RESULTS", "CONCLUSIONS"}, sections


# ---- support check -----------------------------------------------------------------------------


def test_supported_sentence_kept_with_its_citation() -> None:
    checker = SupportChecker(make_pool())
    d = checker.check("Statin use may reduce dementia risk in older adults [1].")
    assert d.kept and d.citations == [1] and d.reason == "supported"
    assert d.text == "Statin use may reduce dementia risk in older adults [1]."


def test_uncited_sentence_gets_the_supporting_citation() -> None:
    d = SupportChecker(make_pool()).check("Short sleep predicted poorer grades in mathematics.")
    assert d.kept and d.citations == [2] and d.reason == "citation added"


def test_wrongly_cited_sentence_is_re_cited() -> None:
    d = SupportChecker(make_pool()).check("Short sleep predicted poorer grades [1].")
    assert d.kept and d.citations == [2] and d.reason == "re-cited"


def test_unsupported_sentence_dropped() -> None:
    d = SupportChecker(make_pool()).check(
        "A study at the University of California, Davis, of surgical residents found burnout [1]."
    )
    assert not d.kept and d.text == "" and d.reason == "unsupported"


def test_sentence_mostly_of_foreign_words_dropped_despite_some_overlap() -> None:
    d = SupportChecker(make_pool()).check(
        "Statin use lowered dementia risk in older pilots, sailors, welders and miners [1]."
    )
    s = d.support[0]
    assert s.coverage >= 0.3  # the tuned best-two-sentences coverage alone would pass
    assert s.abstract_coverage <= 0.5 and not d.kept  # half is not "mostly"


class CountingEncoder(HashEncoder):
    def __init__(self) -> None:
        self.calls = 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        return super().encode(texts)


def test_claim_embedded_only_when_the_words_cannot_decide() -> None:
    enc = CountingEncoder()
    pool = SourcePool.build("Do statins reduce dementia?", [ABSTRACT_1, ABSTRACT_2], enc)
    checker = SupportChecker(pool)
    assert enc.calls == 1  # the pool: question and every sentence in one batch
    assert checker.check("Statin use may reduce dementia risk in older adults [1].").kept
    assert not checker.check("Davis surgical residents reported burnout [1].").kept
    assert enc.calls == 1  # both decided by their words
    # its words are spread over the abstract (one per sentence): only MiniLM can decide
    spread = checker.check(
        "Cholesterol, Smith, followed, simvastatin, reduce: words, not findings."
    )
    assert spread.support[0].abstract_coverage >= 0.5 and spread.support[0].coverage < 0.3
    assert enc.calls == 2 and spread.support[0].similarity is not None


def test_number_absent_from_the_cited_source_drops_the_sentence() -> None:
    checker = SupportChecker(make_pool())
    assert checker.check("Of users, 73% took simvastatin [1].").kept
    bad = checker.check("Of users, 81% took simvastatin [1].")
    assert not bad.kept and not bad.support[0].numbers_ok


def test_filler_and_repeats_dropped() -> None:
    checker = SupportChecker(make_pool())
    assert checker.check("No.").reason == "no checkable claim"
    assert checker.check("Statin use may reduce dementia risk [1].").kept
    assert checker.check("Statin use may reduce dementia risk [1].").reason == "repeat"


def test_with_citations_goes_before_the_stop() -> None:
    assert with_citations("It rose (p < 0.05).", [1, 2]) == "It rose (p < 0.05) [1, 2]."
    assert with_citations("No stop", [3]) == "No stop [3]."


# ---- streaming ---------------------------------------------------------------------------------

ANSWER = (
    "Statin use may reduce dementia risk in older adults [1]. "
    "A study at the University of California, Davis, found burnout in residents [2]. "
    "Short sleep predicted poorer grades in mathematics. [1] "
    "Of users, 81% took simvastatin [1]. Of users, 73% took simvastatin."
)
EXPECTED = (
    "Statin use may reduce dementia risk in older adults [1]. "
    "Short sleep predicted poorer grades in mathematics [2]. "
    "Of users, 73% took simvastatin [1]."
)


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


@pytest.mark.parametrize("size", [1, 3, 7, 1000])
def test_stream_releases_only_passing_sentences_in_order(size: int) -> None:
    stream = GroundedStream(SupportChecker(make_pool()))
    out = list(stream.run(_pieces(ANSWER, size)))
    assert "".join(out) == EXPECTED
    assert filter_answer(ANSWER, SupportChecker(make_pool())).text == EXPECTED
    assert [d.kept for d in stream.decisions] == [True, False, True, False, True]


def test_stream_holds_a_sentence_until_the_next_one_starts() -> None:
    stream = GroundedStream(SupportChecker(make_pool()))
    assert stream.feed("Statin use may reduce dementia risk in older adults.") == ""
    assert stream.feed(" [") == ""  # a citation may still come
    assert stream.feed("1] ") == ""
    shown = stream.feed("Short")
    assert shown == "Statin use may reduce dementia risk in older adults [1]."
    assert stream.flush() == ""  # "Short" alone is no claim


def test_stream_async_and_as_lcel_step() -> None:
    async def tokens():
        for p in _pieces(ANSWER, 5):
            yield p

    async def collect() -> str:
        stream = GroundedStream(SupportChecker(make_pool()))
        return "".join([x async for x in stream.arun(tokens())])

    assert asyncio.run(collect()) == EXPECTED

    def llm_tokens(_inputs):  # noqa: ANN001, ANN202 - stands in for ``llm | StrOutputParser()``
        yield from _pieces(ANSWER, 4)

    chain = RunnableGenerator(llm_tokens) | grounded_runnable(SupportChecker(make_pool()))
    assert "".join(chain.stream("question")) == EXPECTED

    async def allm_tokens(_inputs):  # noqa: ANN001, ANN202
        for p in _pieces(ANSWER, 4):
            yield p

    async def astream() -> str:
        llm = RunnableGenerator(llm_tokens, allm_tokens)
        chain = llm | grounded_runnable(SupportChecker(make_pool()))
        return "".join([x async for x in chain.astream("question")])

    assert asyncio.run(astream()) == EXPECTED


# ---- composition -------------------------------------------------------------------------------


def _ev(source: int, text: str, score: float, sim: float = 0.6) -> EvidenceSentence:
    return EvidenceSentence(source, text, 0, len(text), score, sim)


def _judged(verdict: str, deciding: dict[int, str]) -> Judgement:
    """A judgement whose addressing sources all take ``verdict``, each with its sentence."""
    stances = [SourceStance(n, verdict, text, 0, len(text), 0.9)  # type: ignore[arg-type]
               for n, text in deciding.items()]  # fmt: skip
    j = Judgement(True, stances=stances, verdict=verdict, reason="agree",  # type: ignore[arg-type]
                  addressing=list(deciding))  # fmt: skip
    j.lead = lead_sentence(j)
    return j


def test_extractive_verdict_first_then_findings_each_cited() -> None:
    evidence = [
        [_ev(1, "Statins lowered risk.", 0.9)],
        [_ev(2, "Sleep helped grades.", 0.8), _ev(2, "Sleep was measured.", 0.75)],
        [_ev(3, "Off-topic padding.", 0.4)],  # far below the best finding: not shown
    ]
    judged = _judged("yes", {1: "Statins lowered risk."})
    judged.addressing = [1, 2]  # source 2 addresses the question too, with no stance
    ans = compose_extractive(evidence, judgement=judged)
    assert ans.text == (
        "Yes (1 study) [1]. Statins lowered risk [1]. Sleep helped grades [2]. "
        "Sleep was measured [2]."
    )
    # in a follow-up searched with its conversation, a source that does not address the
    # question adds no finding beside one that does; a plain question's still does
    only_one = _judged("yes", {1: "Statins lowered risk."})
    alone = compose_extractive(evidence, judgement=only_one, in_context=True)
    assert alone.text == "Yes (1 study) [1]. Statins lowered risk [1]."
    assert compose_extractive(evidence, judgement=only_one).text == ans.text
    short = compose_extractive(evidence, settings=GroundingSettings(extractive_findings=2))
    assert short.text == "Statins lowered risk [1]. Sleep helped grades [2]."
    led = compose_extractive(evidence, judgement=_judged("no", {2: "Sleep was measured."}))
    assert led.text.startswith(
        "No (1 study) [2]. Sleep was measured [2]. Sleep helped grades [2]."
    )


def test_the_answer_opens_with_the_top_source_not_a_higher_scoring_other_article() -> None:
    """The position prior can score another article's conclusion far above the top-ranked
    article's relevant finding; the answer still opens with [1] (or the verdict's source)."""
    evidence = [
        [_ev(1, "The homicide rate was about 40% lower after the truce.", 0.55, sim=0.6)],
        [_ev(2, "Mortality declined across almost all age groups.", 0.9, sim=0.35)],
    ]
    plain = compose_extractive(evidence)
    assert plain.text.startswith("The homicide rate was about 40% lower after the truce [1].")
    voted = compose_extractive(evidence, judgement=_judged("yes", {1: "The homicide fell."}))
    assert voted.text.startswith(
        "Yes (1 study) [1]. The homicide fell [1]. The homicide rate was about 40% lower"
    )
    # the lead must still be about the question: below the relevance bar it does not open
    weak = [[_ev(1, "Methods were described.", 0.55, sim=0.1)], evidence[1]]
    assert compose_extractive(weak).text.startswith("Mortality declined")


def test_a_sentence_leaning_on_the_one_before_it_does_not_open_the_answer() -> None:
    """ "Finally, ..." or "However, this pattern ..." opens nothing: the answer opens with the
    best finding that stands alone, and the other still follows (issue #36's third stimulant
    turn opened with "Finally, ...")."""
    evidence = [
        [_ev(1, "Finally, adherence fell after one year.", 0.9),
         _ev(1, "Stimulants improved ADHD symptoms in adults.", 0.8)],
        [_ev(2, "However, this pattern was not seen in women.", 0.85)],
    ]
    # mutations caught: _leans_back always False -> "Finally, ..." opens the
    # plain answer and the lead source's findings alike
    plain = compose_extractive(evidence)
    assert plain.text.startswith("Stimulants improved ADHD symptoms in adults [1]. Finally,")
    # the lead source [1] opens with its own finding that stands alone, not [2]'s better one
    other = [evidence[0], [_ev(2, "Adherence was measured by pill counts.", 0.95)]]
    assert compose_extractive(other).text.startswith("Stimulants improved ADHD symptoms")
    led_by_and = [[_ev(1, "And this improvement had no link to symptoms.", 0.9),
                   _ev(1, "Stimulants improved ADHD symptoms in adults.", 0.8)]]
    assert compose_extractive(led_by_and).text.startswith("Stimulants improved")
    # when every finding leans back, the best still opens
    only = [[_ev(1, "However, this pattern was not seen in women.", 0.85)]]
    assert compose_extractive(only).text.startswith("However, this pattern")
    assert not compose_extractive(
        [[_ev(1, "In contrast to earlier trials, stimulants helped adults.", 0.9)],
         evidence[0]]).text.startswith("Stimulants")  # "In contrast to X" stands alone


def test_an_aim_a_recommendation_or_future_work_neither_opens_nor_precedes_a_finding() -> None:
    """11% of the answers on the question files opened with such a sentence ("More research is
    warranted ...", "The main purpose of this paper is ..."); they state no finding."""
    evidence = [
        [_ev(1, "Larger long-term studies are necessary to confirm this.", 0.9),
         _ev(1, "Memantine improved memory scores during ECT.", 0.7)],
        [_ev(2, "Future studies should test other doses.", 0.85),
         _ev(2, "Cognition declined less with memantine.", 0.68)],
    ]
    # mutations caught: states_finding always True -> the future-work sentence opens and the
    # recommendation comes before [2]'s finding
    assert compose_extractive(evidence).text == (
        "Memantine improved memory scores during ECT [1]. Cognition declined less with "
        "memantine [2]. Larger long-term studies are necessary to confirm this [1]."
    )
    only = [[_ev(1, "Future studies should test other doses.", 0.85)]]
    assert compose_extractive(only).text.startswith("Future studies")  # nothing else to say
    # the top source [1] has no finding: another source's finding opens, not its future work
    # (mutation caught: _opening_sentence trying only the lead's -> "More research ..." opens)
    lead_without = [[_ev(1, "More research is warranted on this tool.", 0.9)],
                    [_ev(2, "Trainees reported inadequate training.", 0.8)]]
    assert compose_extractive(lead_without).text.startswith("Trainees reported")


def test_a_source_the_retrieval_rates_low_adds_no_finding_after_the_first() -> None:
    evidence = [
        [_ev(1, "Trait EI predicted burnout in resident doctors.", 0.9)],
        [_ev(2, "Disgust faces are read later in adolescence.", 0.85)],  # passes every floor
    ]
    assert "[2]" in compose_extractive(evidence).text
    assert compose_extractive(evidence, weak_sources=[2]).text == (
        "Trait EI predicted burnout in resident doctors [1]."
    )
    # a weak source may still open the answer when it is the lead
    assert compose_extractive(evidence, weak_sources=[1]).text.startswith("Trait EI predicted")


def test_a_study_of_another_age_group_neither_opens_nor_pads_the_findings() -> None:
    """Asked about adults, the children's studies that retrieval ranked first give way to the
    adults' study (issue #36: "what about adults?" was answered with a sentence about children);
    when every source studied the other group, they still answer."""
    evidence = [
        [_ev(1, "Stimulants were started in 15 of 146 children.", 0.9)],
        [_ev(2, "Outcome in pediatric ADHD was predicted by EEG.", 0.85)],
        [_ev(3, "Methylphenidate helped adults with ADHD.", 0.6)],
    ]
    assert compose_extractive(evidence, other_age=[1, 2]).text == (
        "Methylphenidate helped adults with ADHD [3]."
    )
    judged = _judged("yes", {3: "Methylphenidate helped adults with ADHD."})
    judged.addressing = [1, 3]
    assert "[1]" not in compose_extractive(evidence, judgement=judged, other_age=[1, 2]).text
    # nothing else left: the other group's studies are what there is
    alone = [evidence[0], evidence[1]]
    assert compose_extractive(alone, other_age=[1, 2]).text.startswith("Stimulants were started")


def test_a_translated_abstract_sentence_is_never_evidence() -> None:
    """A record's second-language abstract (here Spanish, last, where the position prior is
    highest) is not quoted; with ``evidence_language: null`` it would be."""
    spanish = ("El impacto de la tregua fue especialmente significativo en los municipios con un "
               "número relativamente alto de miembros encarcelados por cada 100 000 habitantes.")
    abstract = ("A national gang truce was agreed in 2012. We compared homicide rates before and "
                "after the truce in every municipality. The homicide rate was about 40% lower "
                "in the 22 months after the truce. " + spanish)
    pool = SourcePool.build("Did the gang truce lower the homicide rate?", [abstract],
                            HashEncoder())  # fmt: skip
    chosen = [e.text for e in select_evidence(pool, GroundingSettings())[0]]
    assert chosen and spanish not in chosen
    anything = GroundingSettings(evidence_language=None)
    assert spanish in [e.text for e in select_evidence(pool, anything)[0]]


def test_abstains_when_no_evidence_clears_the_bar() -> None:
    evidence = [[_ev(1, "Unrelated.", 0.9, sim=0.05)], [_ev(2, "Also unrelated.", 0.8, sim=0.1)]]
    ans = compose_extractive(evidence, titles=["Title one", "Title two?"])
    assert ans.abstained
    assert ans.text == (
        f"{ABSTAIN} Related reading: Title one [1]. Related reading: Title two [2]."
    )


def test_auto_falls_back_to_extractive_only_when_nothing_survives() -> None:
    evidence = [[_ev(1, "Statin use may reduce dementia risk in older adults.", 0.9)]]
    checker = SupportChecker(make_pool())
    good = filter_answer("Statin use may reduce dementia risk in older adults [1].", checker)
    bad = filter_answer("Davis residents had burnout.", SupportChecker(make_pool()))
    def compose(style: AnswerStyle, generated: list) -> Any:
        policy = AnswerPolicy.resolve(style)
        return compose_answer(generated, compose_extractive(evidence), writes=policy.writes,
                              falls_back_to_extractive=policy.falls_back_to_extractive)  # fmt: skip

    assert compose("auto", good.sentences).style == "generative"
    assert compose("auto", bad.sentences).style == "extractive"
    assert compose("generative", bad.sentences).abstained
    assert compose("extractive", good.sentences).style == "extractive"


def test_a_last_sentence_cut_off_by_the_token_limit_is_not_shown() -> None:
    stream = GroundedStream(SupportChecker(make_pool()))
    text = ("Statin use may reduce dementia risk in older adults [1]. "
            "Statin use may reduce dementia risk in older")  # max_new_tokens hit mid-sentence
    shown = "".join(stream.run([text[i : i + 4] for i in range(0, len(text), 4)]))
    assert shown == "Statin use may reduce dementia risk in older adults [1]."
    assert [d.reason for d in stream.decisions] == ["supported", "incomplete"]
    # a finished last sentence is shown, also when its citation follows the full stop
    done = GroundedStream(SupportChecker(make_pool()))
    assert "".join(done.run(["Statin use may reduce dementia risk in older adults. [1]"]))


def test_a_restated_title_or_a_question_is_no_finding() -> None:
    pool = SourcePool.build(
        "Do statins reduce dementia risk in older adults?",
        [ABSTRACT_1, ABSTRACT_2],
        HashEncoder(),
        titles=["Statin use and dementia risk in older adults", "Sleep and grades"],
    )
    checker = SupportChecker(pool)
    title = checker.check("Statin use and dementia risk in older adults [1].")
    assert not title.kept and title.reason == "restates a title"
    asked = checker.check("Does statin use lower dementia risk in older adults [1]?")
    assert not asked.kept and asked.reason == "a question, not a claim"
    # a finding that shares the title's words but says something is still checked and kept
    finding = checker.check("Statin use may reduce dementia risk in older adults [1].")
    assert finding.kept and finding.citations == [1]


def test_only_a_follow_up_searched_with_its_conversation_keeps_to_addressing_sources() -> None:
    from chains.decision import in_context

    for path in ("resolved", "fused", "llm", "fallback"):
        assert in_context({"rewrite": path}), path  # type: ignore[typeddict-item]
    for path in ("unchanged", "standalone"):
        assert not in_context({"rewrite": path}), path  # type: ignore[typeddict-item]
    assert not in_context({})  # type: ignore[typeddict-item]
