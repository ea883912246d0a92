"""Issue #35 "Meaning, not words", for real: real MiniLM, the small real index, the shipped
config. A brand name is matched to the generic name an abstract uses; a question in a user's
own words finds its paper and gets a verdict."""

from __future__ import annotations

from typing import Any

import pytest

from app.config import Config
from grounding.concepts import check_coverage, question_concepts

LAY = "Do kids who score high on IQ tests end up living longer?"
LAY_GOLD = "29025063"  # Intelligence and all-cause mortality in the 6-Day Sample ... (vd022's)


@pytest.fixture(scope="module")
def encoder(small_index_cfg: Config) -> Any:
    from grounding.sources import load_encoder

    return load_encoder(small_index_cfg)


def test_a_brand_name_is_matched_to_the_generic_name_in_an_abstract(encoder: Any) -> None:
    # mutation caught: check_coverage without the MiniLM step (_similar_words skipped) -> the
    # abstract "does not mention prozac"
    from grounding.sources import SourcePool

    question = "Does Prozac improve memory in older adults with depression?"
    abstract = (
        "Older adults with major depression were randomised to fluoxetine or placebo for 12 "
        "weeks. Fluoxetine improved delayed recall compared with placebo."
    )
    pool = SourcePool.build(question, [abstract], encoder)
    coverage = check_coverage(question_concepts(question), pool, encoder)
    assert coverage.addressed and coverage.addressing == [1], coverage.gaps


def test_a_question_in_lay_words_finds_its_paper_and_gets_a_verdict(
    small_index_cfg: Config, small_retriever: Any
) -> None:
    # mutation caught: cfg.yaml's retrieval.weights_when_bm25_weak null (BM25 leads the
    # fusion and the paper falls out of the three sources: no verdict from it)
    from chains.assistant import Assistant

    if not small_retriever.snapshot().article_chunks(LAY_GOLD):
        pytest.skip(f"PMID {LAY_GOLD} is not in the small index (shared data changed?)")
    assistant = Assistant.from_config(small_index_cfg, retriever=small_retriever)
    result = assistant.ask(LAY, mode="plain")
    assert LAY_GOLD in [s.pmid for s in result.sources], [s.pmid for s in result.sources]
    assert result.addresses_question, result.answer
    assert result.verdict == "yes", result.answer


STIMULANT_Q = "Does taking methylphenidate (or Ritalin) help kids with ADHD focus better?"
# the same drug, other questions: its adverse events in children (a Cochrane review of
# non-randomised studies) and a framework for prescribing it off-label to ADULTS
SAME_DRUG_OTHER_QUESTION = ("29744873", "30122296")


def _judged(question: str, pmids: tuple[str, ...], articles: Any, encoder: Any) -> Any:
    from pathlib import Path

    from grounding.classifier import load_stance_classifier
    from grounding.concepts import question_stems
    from grounding.consensus import judge
    from grounding.sources import SourcePool
    from grounding.stance import source_stance

    by_pmid = {a.pmid: a for a in articles}
    missing = [p for p in pmids if p not in by_pmid]
    if missing:
        pytest.skip(f"PMIDs {missing} are not in the shared corpus (shared data changed?)")
    chosen = [by_pmid[p] for p in pmids]
    pool = SourcePool.build(question, [a.abstract for a in chosen], encoder,
                            pmids=list(pmids), titles=[a.title for a in chosen])  # fmt: skip
    coverage = check_coverage(question_concepts(question), pool, encoder)
    classify = load_stance_classifier(Path(__file__).resolve().parents[1] / "prompts")
    stems = question_stems(question)
    stances = [source_stance(pool.sources[n - 1], question, stems, (), classify)
               for n in coverage.complete]  # fmt: skip
    return judge(coverage, stances, yes_no=True)


def test_papers_on_the_same_drug_about_another_outcome_or_group_give_no_yes(
    shared_articles: Any, encoder: Any
) -> None:
    # Seen in the chat: "Yes (2 of 2 studies)" from "... adverse events ... led to withdrawal"
    # and "this framework could also help the monitoring of other off-label treatments".
    # mutations caught: the own-words "yes" without the outcome check (names_outcome -> True)
    # -> "yes" from the withdrawal sentence; without the other-age-group title check -> "yes"
    # from the adult paper's "help"
    j = _judged(STIMULANT_Q, SAME_DRUG_OTHER_QUESTION, shared_articles, encoder)
    assert j.verdict is None, j.lead
    assert "yes" not in [s.stance for s in j.stances], [(s.stance, s.sentence) for s in j.stances]



def test_a_null_finding_on_another_outcome_does_not_undo_the_starter_questions_yes(
    shared_articles: Any, encoder: Any
) -> None:
    # The chat's first starter chip, with the three abstracts the full index gives it: the
    # Korean fitness study concludes "Our findings support the effectiveness of MPH treatment
    # for improving IQ, attention ..." and ends "MPH was not associated with growth delays".
    # Rules and classifier once disagreed on it ("unclear"): that null finding was counted near
    # the question through the last words of the sentence before it. (The verdict stays "No
    # clear answer": the classifier's yes, 0.45, is below the verdict bar; docs/verdicts.md.)
    # mutation caught: _near_question over the joined answer sentences -> "unclear"
    j = _judged("Does methylphenidate improve attention in children with ADHD?",
                ("29744873", "26756111", "25237119"), shared_articles, encoder)
    stances = [(s.stance, s.sentence[:60]) for s in j.stances]
    assert [s for s, _ in stances] == ["unclear", "yes", "unclear"], stances
    assert j.verdict != "no", j.lead


# Abstracts whose last sentences state a sibling relation "in contrast" to the question's own
# finding, a null one (verdict_traps_dev's "other relation" trap), each with its question
CONTRASTED = (
    ("Do habitat generalist bird species have larger brains?", "24910268"),
    ("Is general intelligence associated with the number or size of modules in resting-state "
     "brain networks?", "29167455"),
)  # fmt: skip


@pytest.mark.parametrize(("question", "pmid"), CONTRASTED)
def test_a_sibling_finding_stated_in_contrast_does_not_answer_the_question(
    question: str, pmid: str, shared_articles: Any, encoder: Any
) -> None:
    # Both once answered "Yes (1 study)" from the contrasted sibling ("diet generalist species
    # had ... larger brains"; "associations between intelligence and node-specific measures").
    # mutations caught: source_stance without _contrasted -> "yes" for both; SCOPED_NOT
    # negating only a list's first item -> "yes" for the birds
    j = _judged(question, (pmid,), shared_articles, encoder)
    assert j.verdict == "no", j.lead


def test_a_null_finding_about_a_serial_list_answers_for_each_item(
    shared_articles: Any, encoder: Any
) -> None:
    # "Measures of cognitive flexibility, orienting, and conflict executive control were not
    # associated with driving performance": the list's ", and" once split the null finding off
    # the concept it is about (verdict_traps_dev td022's gold abstract, then no verdict)
    # mutation caught: clauses() without _joined_lists -> no "no" from this abstract
    question = (
        "Is cognitive flexibility associated with young drivers' performance in a driving "
        "simulator?"
    )
    j = _judged(question, ("27013272",), shared_articles, encoder)
    assert j.verdict == "no", j.lead


def test_a_finding_about_who_takes_the_exposure_does_not_answer_for_its_outcome(
    shared_articles: Any, encoder: Any
) -> None:
    # Seen in the chat and the OpenAI endpoint: "Yes (1 of 3 studies)" to whether music training
    # improves children's IQ, from "Children's personality traits predicted duration of music
    # training even when demographic variables and intelligence were held constant".
    # mutation caught: group words counted in Relation.names_outcome -> "yes" from it
    j = _judged("Does music training improve children's IQ?", ("25852601",), shared_articles,
                encoder)
    assert "yes" not in [s.stance for s in j.stances], [(s.stance, s.sentence) for s in j.stances]


def test_an_abstract_on_an_intelligent_machine_says_nothing_of_intelligent_people(
    shared_articles: Any, encoder: Any
) -> None:
    # Seen in the chat: "Yes (1 of 3 studies)" to whether being very intelligent is linked to
    # depression, from a chatbot abstract (PMID 36514712): "an intelligent assistant for ...
    # depression, could become a very helpful information system", and "capable to diagnose
    # people's negative, depressive, and anxious emotions".
    # mutations caught: the prospect pattern removed from RECOMMENDATION -> "yes" (could become);
    # bare positive/negative among the AFFIRMATIVE cues -> "yes" (negative emotions)
    j = _judged("Is being very intelligent linked to depression?", ("36514712",),
                shared_articles, encoder)
    assert j.verdict != "yes"
    assert "yes" not in [s.stance for s in j.stances], [(s.stance, s.sentence) for s in j.stances]


def test_a_source_off_the_conversations_topic_adds_no_finding(
    shared_articles: Any, encoder: Any
) -> None:
    # Seen in the chat: the stimulant conversation's third turn ("any long-term side effects?",
    # searched as below) quoted "Opioid medications have the potential to produce long-lasting
    # neuropsychological side effects" from an opioid review its as-written search found.
    # mutation caught: compose_extractive lets non-addressing sources pad a follow-up's findings
    from chains.grounded import judge_sources
    from grounding.compose import compose_extractive
    from grounding.evidence import select_evidence
    from grounding.sources import SourcePool
    from settings.grounding import GroundingSettings

    asked = "any long-term side effects?"
    searched = "stimulant medications effective for ADHD in adults: long-term side effects?"
    # the adults' methylphenidate framework, which names its side effects (a study of
    # stimulants' effects on children's IQ names none, so it does not address harms:
    # grounding.harms); an opioid review in children
    pmids = ("30122296", "24658471")
    by_pmid = {a.pmid: a for a in shared_articles}
    if any(p not in by_pmid for p in pmids):
        pytest.skip(f"PMIDs {pmids} are not in the shared corpus (shared data changed?)")
    chosen = [by_pmid[p] for p in pmids]
    pool = SourcePool.build(searched, [a.abstract for a in chosen], encoder, pmids=list(pmids),
                            titles=[a.title for a in chosen])  # fmt: skip
    settings = GroundingSettings()
    evidence = select_evidence(pool, settings)
    assert any(e.source == 2 for e in evidence[1]), "the opioid review has findings to offer"
    j = judge_sources(asked, searched, pool, evidence, settings, encoder, None)
    assert j.addressing == [1], j.addressing
    answer = compose_extractive(evidence, titles=[a.title for a in chosen], judgement=j,
                                settings=settings, in_context=True)  # fmt: skip
    cited = {n for s in answer.sentences for n in s.citations}
    assert cited == {1}, answer.text
    assert "pioid" not in answer.text, answer.text
    # nor does the review show key findings under the answer (it stays listed, its abstract
    # one click away); mutation caught: numbered_sources ignores ``beside``
    from langchain_core.documents import Document

    from chains.answer import numbered_sources
    from chains.turn import Decision

    docs = [Document(page_content=a.abstract, metadata={"pmid": a.pmid, "title": a.title})
            for a in chosen]  # fmt: skip
    decision = Decision(pool, evidence, j, None, answer, uses_llm=False)
    sources = numbered_sources(docs, decision, settings)
    assert [bool(s.evidence) for s in sources] == [True, False], [s.evidence for s in sources]


def test_a_lay_word_is_matched_by_the_words_of_the_real_index(small_retriever: Any) -> None:
    # mutation caught: FaissBM25Backend.alias_stems without the lay names -> "preemies" has no
    # other name
    from indexing.aliases import name_stems

    backend = small_retriever.snapshot()
    if backend.chunks_with_name("preterm infant") <= backend.chunks_with_name("preemies"):
        pytest.skip("the small index holds no 'preterm infant' chunk (shared data changed?)")
    # known by its most specific word: "born preterm" names it as well as "preterm infants"
    assert name_stems("preterm") in backend.alias_stems("preemies")
    assert backend.alias_stems("intelligence") == []  # the index's own word: no WordNet sense


def test_an_abstract_on_infants_walking_does_not_address_a_question_on_baby_walkers(
    encoder: Any, small_retriever: Any
) -> None:
    # mutation caught: rare_compound returning "" -> "baby walker" has no essential word, and an
    # abstract on infants' walking and IQ addresses it (the held-out question ah010 got "Yes
    # (2 of 3 studies)" from abstracts on neonatal growth)
    from grounding.sources import SourcePool

    question = "Does using a baby walker in infancy delay walking or lead to lower IQ scores?"
    abstracts = [
        "Infants in the highest quartile of weight gain had higher IQ scores, and infant "
        "walking began earlier in infancy among them.",
        "Baby walkers used in infancy delayed independent walking but did not lower IQ scores.",
    ]
    concepts = question_concepts(question, small_retriever.snapshot())
    pool = SourcePool.build(question, abstracts, encoder)
    coverage = check_coverage(concepts, pool, encoder)
    assert coverage.addressing == [2], coverage.per_source
    alone = SourcePool.build(question, abstracts[:1], encoder)
    assert [g.name for g in check_coverage(concepts, alone, encoder).gaps] == ["baby walker"]


# "what about adults?" after stimulants for ADHD in children, as the full index answers it: two
# children's studies ranked first (a DBPNet survey of pediatricians; qEEG outcome prediction
# "in pediatric ADHD") and a framework for methylphenidate "in adult ADHD" third
ADULTS_SEARCHED = "stimulant medications effective for ADHD in adults?"
ADULTS_FOUND = ("25441653", "24523588", "30122296")


def test_asked_about_adults_the_answer_quotes_the_adults_study_not_the_childrens(
    small_index_cfg: Config, shared_articles: Any, encoder: Any
) -> None:
    # Seen in the chat (issue #36): the answer opened "Among 146 children not medicated ...
    # stimulant medications were initiated in 15 children [1]". The real decide step on the
    # real abstracts, as the chat runs it after retrieval.
    # mutations caught: the decide step not passing other_age_sources -> [1] and [2] quoted;
    # studies_other_age_group reading the title only -> [1] quoted
    from chains.decision import make_decide_step
    from chains.policy import AnswerPolicy
    from grounding.evidence import select_evidence
    from grounding.sources import SourcePool

    by_pmid = {a.pmid: a for a in shared_articles}
    if any(p not in by_pmid for p in ADULTS_FOUND):
        pytest.skip(f"PMIDs {ADULTS_FOUND} are not all in the shared corpus (shared data changed?)")
    chosen = [by_pmid[p] for p in ADULTS_FOUND]
    pool = SourcePool.build(ADULTS_SEARCHED, [a.abstract for a in chosen], encoder,
                            pmids=list(ADULTS_FOUND), titles=[a.title for a in chosen])  # fmt: skip
    settings = small_index_cfg.answer
    turn = {"question": "what about adults?", "searched_question": ADULTS_SEARCHED,
            "rewrite": "resolved", "documents": [], "pool": pool,
            "evidence": select_evidence(pool, settings)}  # fmt: skip
    decide = make_decide_step(settings, AnswerPolicy.resolve(settings.style), lambda: encoder)
    answer = decide.invoke(turn)["decision"].extractive
    cited = {n for sentence in answer.sentences for n in sentence.citations}
    assert cited == {3}, answer.text


def _one_source(question: str, pmid: str, retriever: Any, articles: Any, encoder: Any) -> Any:
    """The question's concepts (with the small index's counts) checked against one real
    abstract of the shared corpus, as the chat checks its sources."""
    from grounding.sources import SourcePool

    by_pmid = {a.pmid: a for a in articles}
    if pmid not in by_pmid:
        pytest.skip(f"PMID {pmid} is not in the shared corpus (shared data changed?)")
    article = by_pmid[pmid]
    concepts = question_concepts(question, retriever.corpus)
    pool = SourcePool.build(question, [article.abstract], encoder, titles=[article.title])
    return concepts, check_coverage(concepts, pool, encoder)


PREGABALIN_Q = ("Do school-age children whose mothers took pregabalin or gabapentin during "
                "pregnancy have lower IQ?")
DHA_TRIAL = "27188814"  # DHA in pregnancy and IQ at 7: "n=97 born preterm"


def test_a_drug_name_no_abstract_holds_is_not_near_a_word_spelled_like_it(
    small_retriever: Any, shared_articles: Any, encoder: Any
) -> None:
    # Seen after the age-group ranking brought this trial into the three sources (abstain_dev):
    # MiniLM reads "pregabalin" as pre-ga-bal-in, 0.64 from "preterm", and the question was
    # taken as addressed. mutation caught: _similar_words without the absent words' spelling
    # guard (absent=()) -> source 1 addresses it
    concepts, coverage = _one_source(PREGABALIN_Q, DHA_TRIAL, small_retriever, shared_articles,
                                     encoder)  # fmt: skip
    assert "pregabalin" in [w for c in concepts for w in c.absent], concepts
    assert not coverage.addressed, coverage.per_source


PUBERTY_Q = ("The association of puberty and young adolescent alcohol use: do parents have a "
             "moderating role?")
OFFENDERS = "24839197"  # team sports and hazardous drinking in young offenders, 13-18 years old


def test_a_word_the_question_uses_for_another_concept_stands_in_for_none(
    small_retriever: Any, shared_articles: Any, encoder: Any
) -> None:
    # Seen in PubMedQA's test split (gold "no"): this abstract, its only link to "puberty" the
    # "adolescent" the question names too (MiniLM 0.67), answered "Yes" from its team-sport
    # conclusion. mutation caught: _similar_words keeping the question's own words -> addressed
    _, coverage = _one_source(PUBERTY_Q, OFFENDERS, small_retriever, shared_articles, encoder)
    assert not coverage.addressed, coverage.per_source
    # the same abstract for a question that does not name adolescents is let through by
    # MiniLM's nearness ("adolescent" for "puberty"), as before
    alone = "Is puberty associated with alcohol use?"
    _, coverage = _one_source(alone, OFFENDERS, small_retriever, shared_articles, encoder)
    assert coverage.addressed, coverage.per_source


LAY_MORPHINE_Q = "Do preemies given painkillers in intensive care end up with a lower IQ?"
NEONATAL_MORPHINE = "23352760"  # neonatal morphine and IQ at 8-9 years: "newborns", "morphine"


def test_a_lay_class_word_is_covered_by_the_kind_the_abstract_names(
    small_retriever: Any, shared_articles: Any, encoder: Any
) -> None:
    # paraphrase_dev's lay wording of this trial abstained, "None of the closest abstracts
    # mentions painkillers". mutation caught: lay_name_stems without the WordNet relatives ->
    # "painkillers" (and "preemies") are gaps over the morphine trial
    concepts, coverage = _one_source(LAY_MORPHINE_Q, NEONATAL_MORPHINE, small_retriever,
                                     shared_articles, encoder)  # fmt: skip
    assert coverage.addressing == [1], (concepts, coverage.per_source)


def test_a_finding_only_in_women_answers_for_men_and_a_finding_past_the_key_ones_decides(
    shared_articles: Any, encoder: Any
) -> None:
    """The real abstracts of two verdict traps (stop 65), asked in other words: the somatic
    complaints study finds its effect "but only in women" (asked about men: "no"); the
    guineafowl study, with its plain-language digest after it, reports "having more young in
    the group reduced home-range size" in its first half, without the species' name. Both read
    "unclear" before. Mutations caught: ``_left_out_population`` returning the sentence's own
    stance -> "yes" for men; ``REPORTED_FINDING`` never matching -> no verdict on the birds;
    ``_confirmed_yes`` reading the answer sentences always -> the birds' "yes" too weak."""
    men = _judged("Did somatic complaints predict depressive symptoms years later in men?",
                  ("12920330",), shared_articles, encoder)
    assert men.verdict == "no", men.lead
    birds = _judged("In vulturine guineafowl, does having more young in a group reduce the "
                    "group's home range?", ("33168135",), shared_articles, encoder)
    assert birds.verdict == "yes", birds.lead


HARMS_Q = "Does methylphenidate have long-term side effects in children with ADHD?"
# the Cochrane review of methylphenidate's adverse events in children, and a study of the
# long-term effects of stimulants on children's neurocognitive performance (no harm named)
HARMS_REVIEW, LONG_TERM_EFFECTS = "29744873", "24305033"


def test_side_effects_are_addressed_by_an_abstract_on_adverse_events_not_by_one_on_effects(
    shared_articles: Any, encoder: Any
) -> None:
    # the walk's third turn ("any long-term side effects?") was answered from an abstract on
    # stimulants for adult ADHD that names no harm: "side" is a stop word and "effects" a
    # frame word, so "side effects" was no concept. mutations caught: no harms run in
    # grounding.concepts._runs (asked_spans -> []) -> the effects study addresses the question;
    # grounding.harms.NAMED without "adverse events" -> the review does not
    from grounding.sources import SourcePool

    by_pmid = {a.pmid: a for a in shared_articles}
    chosen = [by_pmid.get(p) for p in (HARMS_REVIEW, LONG_TERM_EFFECTS)]
    if None in chosen:
        pytest.skip("the harms review or the long-term effects study is not in the shared corpus")
    pool = SourcePool.build(HARMS_Q, [a.abstract for a in chosen], encoder,
                            titles=[a.title for a in chosen])  # fmt: skip
    coverage = check_coverage(question_concepts(HARMS_Q), pool, encoder)
    assert coverage.addressing == [1], coverage.per_source
    alone = SourcePool.build(HARMS_Q, [chosen[1].abstract], encoder, titles=[chosen[1].title])
    gaps = check_coverage(question_concepts(HARMS_Q), alone, encoder).gaps
    assert [g.name for g in gaps] == ["side effects"], gaps


LIFESTYLE_Q = "Do healthier lifestyles mean people use less healthcare?"
HEALTHCARE_USE = "28359277"  # PubMedQA (gold "no"): lifestyles and healthcare utilization
HEALTHY_AGEING = "29862589"  # a holistic approach to healthy ageing: "health", no healthcare use


def test_a_source_that_never_names_the_everyday_outcome_takes_no_stance(
    small_retriever: Any, shared_articles: Any, encoder: Any
) -> None:
    # Seen in a closing walk: "Mixed evidence (2 yes, 1 no)", the two "yes" from abstracts on
    # healthy ageing and fitness that never name healthcare use; MiniLM puts their "health"
    # 0.75 from "healthcare". mutation caught: _similar_words without the parts_of guard ->
    # the ageing review is complete (takes a stance); check_coverage ignoring ``outcome`` -> the
    # same
    from grounding.sources import SourcePool
    from grounding.stance import asked_outcome

    assert asked_outcome(LIFESTYLE_Q) == "healthcare"
    by_pmid = {a.pmid: a for a in shared_articles}
    if not {HEALTHCARE_USE, HEALTHY_AGEING} <= set(by_pmid):
        pytest.skip("the lifestyle abstracts are not in the shared corpus (shared data changed?)")
    articles = [by_pmid[HEALTHCARE_USE], by_pmid[HEALTHY_AGEING]]
    pool = SourcePool.build(LIFESTYLE_Q, [a.abstract for a in articles], encoder,
                            titles=[a.title for a in articles])  # fmt: skip
    concepts = question_concepts(LIFESTYLE_Q, small_retriever.corpus)
    coverage = check_coverage(concepts, pool, encoder, outcome=asked_outcome(LIFESTYLE_Q))
    assert coverage.addressing == [1, 2], coverage.per_source
    assert coverage.complete == [1], coverage.outcome_named


# Stop 73: the auto-labelled corpus set's contradictions from earlier work and "no other": each
# question is its article's own title, the answer the title's polarity (docs/verdicts.md)
EARLIER_WORK = [
    ("Does haploinsufficiency of HDAC4 cause intellectual disability in all affected "
     "individuals?", "24715439", "yes"),  # title: no; "has been reported to result in ..."
    ("Is breastfeeding associated with child intelligence even net of parental IQ?",
     "26389601", "no"),  # title: yes; "some previous studies may have failed to uncover ..."
    ("Does dual n-back training increase the capacity of the focus of attention?", "23184506",
     "no"),  # title: yes; "No other differential improvements were observed, suggesting ..."
]


@pytest.mark.parametrize(("question", "pmid", "wrong"), EARLIER_WORK)
def test_earlier_work_and_what_else_was_not_found_decide_nothing(
    question: str, pmid: str, wrong: str, shared_articles: Any, encoder: Any
) -> None:
    # mutations caught: PRIOR_WORK out of Relation.no_finding -> "yes" (HDAC4) and "no"
    # (breastfeeding); "no other" out of NON_FINDING_NEGATIONS -> "no" (dual n-back)
    j = _judged(question, (pmid,), shared_articles, encoder)
    assert wrong not in [s.stance for s in j.stances], [(s.stance, s.sentence) for s in j.stances]


def test_a_need_pointed_out_does_not_answer_whether_overweight_children_stay_overweight(
    shared_articles: Any, encoder: Any
) -> None:
    # PubMedQA pqal-18719011's second source (PMID 18607272, on physicians recognising
    # childhood overweight): "This study demonstrates the need to further educate physicians
    # ..." read "yes" to whether overweight children become overweight adults.
    # mutation caught: the need pattern out of RECOMMENDATION -> "yes" from it
    j = _judged("Do overweight children make overweight adults?", ("18607272",),
                shared_articles, encoder)
    assert "yes" not in [s.stance for s in j.stances], [(s.stance, s.sentence) for s in j.stances]
