"""The answer as a whole, fast: essential concepts, coverage, stance per source, the verdict that
follows from the stances, and what the user reads first. A hashing encoder stands in for MiniLM
(``test_judgement_real.py`` runs the real pipeline on the real index)."""

from __future__ import annotations

from collections.abc import Sequence

from grounding.compose import compose_extractive
from grounding.concepts import check_coverage, question_concepts, question_stems
from grounding.consensus import Judgement, cite, judge
from grounding.evidence import select_evidence
from grounding.sameness import asks_sameness
from grounding.sources import SourcePool
from grounding.stance import SourceStance, sentence_stance, source_stance
from tests.test_grounding_unit import HashEncoder

TRAINING_NULL = (
    "BACKGROUND: Working memory training is popular. METHODS: 120 adults trained for 20 days. "
    "RESULTS: Trained participants improved on the trained task. CONCLUSIONS: Working memory "
    "training did not improve fluid intelligence."
)
TRAINING_YES = (
    "We randomised 80 students. Working memory training improved fluid intelligence scores "
    "significantly compared with controls."
)
HEART = (
    "Diabetic heart disease and heart failure were imaged with MRI in 60 patients. "
    "Cardiovascular death was rare. Myocardial fibrosis was associated with lower ejection "
    "fraction."
)


class Vocabulary:
    """The whole index's words, as :class:`grounding.concepts.CorpusTerms` sees them."""

    def __init__(self, texts: Sequence[str]) -> None:
        from grounding.concepts import stems_of

        self.chunks = [stems_of(t) for t in texts]

    @property
    def size(self) -> int:
        return 1000  # as if the texts were a few of a large corpus's chunks

    def chunks_with_stems(self, stems: Sequence[str]) -> int:
        return sum(all(s in chunk for s in stems) for chunk in self.chunks)


def test_concepts_are_the_rare_content_runs_not_the_question_frame() -> None:
    concepts = question_concepts(
        "Does dapagliflozin reduce cardiovascular death in heart failure?"
    )
    texts = [c.text for c in concepts]
    assert "dapagliflozin" in texts and "heart failure" in texts
    assert not any(w in ("does", "reduce") for c in concepts for w in c.words)
    drug = concepts[texts.index("dapagliflozin")]
    assert drug.essential == ("dapagliflozin",)
    # a verb between two concepts ends the first one
    split = [c.text for c in question_concepts("Does vonoprazan heal erosive esophagitis?")]
    assert split[0] == "vonoprazan"


def test_a_drug_no_abstract_mentions_is_named_and_gets_no_verdict() -> None:
    question = "Does dapagliflozin reduce cardiovascular death in heart failure?"
    corpus = Vocabulary([HEART, TRAINING_NULL])
    pool = SourcePool.build(question, [HEART], HashEncoder())
    coverage = check_coverage(question_concepts(question, corpus), pool)
    assert not coverage.addressed and coverage.addressing == []
    assert [(g.name, g.absent_from_index) for g in coverage.gaps] == [("dapagliflozin", True)]
    j = judge(coverage, [], yes_no=True)
    assert j.verdict is None and j.reason == "not_addressed"
    assert j.lead == "No indexed abstract mentions dapagliflozin."
    answer = compose_extractive(select_evidence(pool), titles=["Heart MRI"], judgement=j)
    assert answer.abstained and answer.verdict is None
    assert answer.sentences[0].claim == j.lead
    assert answer.sentences[1].text == "Related reading: Heart MRI [1]."


def test_a_concept_in_the_index_but_not_the_sources_is_named_as_such() -> None:
    question = "Does working memory training improve fluid intelligence in dementia?"
    corpus = Vocabulary([TRAINING_NULL, "Dementia care in nursing homes."])
    pool = SourcePool.build(question, [TRAINING_NULL], HashEncoder())
    j = judge(check_coverage(question_concepts(question, corpus), pool), [], yes_no=True)
    assert not j.addressed and j.absent_from_index == [] and j.missing == ["dementia"]
    assert j.lead == "None of the closest abstracts mentions dementia."


def test_negation_scoped_to_what_the_question_does_not_ask_is_set_aside() -> None:
    stems = question_stems("Does testosterone improve attention and psychomotor speed?")
    said = sentence_stance(
        "Testosterone improved attention and psychomotor speed, but not emotional state.", stems
    )
    assert said.stance == "yes"
    asked = sentence_stance("Testosterone improved mood, but not attention.", stems)
    assert asked.stance == "no"
    # the negation is about the word right after it, not the noun it shares with the question
    ears = question_stems("Is hearing loss in both ears associated with lower nonverbal IQ?")
    contrast = sentence_stance(
        "Bilateral but not unilateral hearing loss is associated with decreased nonverbal "
        "intelligence.", ears,
    )
    assert contrast.stance == "yes"


def test_wording_that_only_looks_negative_is_affirmative() -> None:
    stems = question_stems("Does childhood intelligence predict lower mortality among siblings?")
    said = sentence_stance(
        "The longevity associated with higher intelligence cannot be explained by "
        "within-family factors.",
        stems,
    )
    assert said.stance == "yes"
    assert sentence_stance("Intelligence did not predict mortality.", stems).stance == "no"


def test_source_stance_reads_the_conclusion_and_names_its_sentence() -> None:
    question = "Does working memory training improve fluid intelligence?"
    pool = SourcePool.build(question, [TRAINING_NULL, TRAINING_YES], HashEncoder())
    stems = question_stems(question)
    first = source_stance(pool.sources[0], question, stems)
    assert first.stance == "no"
    assert first.sentence == "Working memory training did not improve fluid intelligence."
    assert TRAINING_NULL[first.start : first.end] == first.sentence
    assert source_stance(pool.sources[1], question, stems).stance == "yes"


def test_a_yes_stands_only_when_the_classifier_also_finds_it_most_likely() -> None:
    """The rules' "yes" is gated by the stance classifier (a confident wrong yes is the worst
    answer); a plainly stated null finding stands on the rules alone."""
    question = "Does working memory training improve fluid intelligence?"
    pool = SourcePool.build(question, [TRAINING_YES, TRAINING_NULL], HashEncoder())
    stems = question_stems(question)

    def says(label: str):
        def classify(_features: dict[str, float]) -> dict[str, float]:
            return {k: (0.7 if k == label else 0.15) for k in ("yes", "no", "maybe")}
        return classify

    doubted = source_stance(pool.sources[0], question, stems, classify=says("no"))
    assert doubted.stance == "unclear" and doubted.strength == 0.15
    agreed = source_stance(pool.sources[0], question, stems, classify=says("yes"))
    assert agreed.stance == "yes" and agreed.strength == 0.7
    null = source_stance(pool.sources[1], question, stems, classify=says("yes"))
    assert null.stance == "no" and null.strength == 0.9


def _stances(*said: str, strength: float = 0.9) -> list[SourceStance]:
    return [SourceStance(n, s, f"finding {n}.", 0, 1, strength) for n, s in enumerate(said, 1)]


def _addressed(n: int):
    question = "Does working memory training improve fluid intelligence?"
    pool = SourcePool.build(question, [TRAINING_NULL] * n, HashEncoder())
    return check_coverage(question_concepts(question), pool)


def test_verdict_only_when_the_addressing_sources_agree_plainly() -> None:
    agree = judge(_addressed(3), _stances("no", "no", "no"), yes_no=True)
    assert agree.verdict == "no" and agree.reason == "agree"
    assert agree.lead == "No (3 of 3 studies) [1–3]."
    assert agree.summary == "3 studies: 3 no"
    mixed = judge(_addressed(3), _stances("yes", "no", "yes"), yes_no=True)
    assert mixed.verdict is None and mixed.reason == "mixed"
    assert mixed.lead == "Mixed evidence (2 yes [1, 3], 1 no [2])."
    weak = judge(_addressed(1), _stances("yes", strength=0.55), yes_no=True)
    assert weak.verdict is None and weak.reason == "weak"
    assert weak.lead == "No clear answer (1 study, not plainly yes or no) [1]."
    unclear = judge(_addressed(2), _stances("unclear", "no"), yes_no=True)
    assert unclear.verdict == "no" and unclear.lead == "No (1 of 2 studies) [2]."
    assert judge(_addressed(2), _stances("no", "no"), yes_no=False).verdict is None


def test_the_lead_and_its_deciding_sentences_open_the_answer() -> None:
    question = "Does working memory training improve fluid intelligence?"
    pool = SourcePool.build(question, [TRAINING_NULL], HashEncoder())
    stems = question_stems(question)
    stance = source_stance(pool.sources[0], question, stems)
    j = judge(check_coverage(question_concepts(question), pool), [stance], yes_no=True)
    answer = compose_extractive(select_evidence(pool), titles=["t"], judgement=j)
    assert answer.text.startswith(
        "No (1 study) [1]. Working memory training did not improve fluid intelligence [1]."
    )


def test_cite_writes_ranges() -> None:
    assert cite([3, 1, 2]) == "[1–3]" and cite([1, 3]) == "[1, 3]" and cite([2]) == "[2]"
    assert Judgement(True).summary == ""


def test_a_negation_that_only_defines_who_was_studied_is_no_finding() -> None:
    stems = question_stems("Does radiotherapy affect prognosis after pelvic exenteration?")
    said = sentence_stance(
        "Patients who previously received radiotherapy have worse outcomes than those who had "
        "not received radiotherapy after pelvic exenteration.",
        stems,
    )
    assert said.stance == "yes"
    graft = question_stems("Is there still a need for living-related liver transplantation?")
    conditional = sentence_stance(
        "Living-related transplantation provides a solution for urgent cases in which a graft "
        "is needed, if a cadaveric graft cannot be found in time.",
        graft,
    )
    assert conditional.stance != "no"
    # the finding itself, negated, still says no
    assert sentence_stance("Radiotherapy did not affect prognosis.", stems).stance == "no"


def test_a_question_asking_sameness_reads_a_difference_as_no() -> None:
    question = "Are interstitial fluid concentrations of meropenem equivalent to plasma levels?"
    stems = question_stems(question)
    assert asks_sameness(question)
    lower = sentence_stance(
        "Interstitial fluid concentrations of meropenem were significantly lower than plasma "
        "concentrations.",
        stems,
        asks_sameness=True,
    )
    assert lower.stance == "no"
    same = sentence_stance(
        "Residency sites provide patient care similar to that found in community practice.",
        question_stems("Does practice at residency sites reflect community practice?"),
        asks_sameness=True,
    )
    assert same.stance == "yes"
    assert not asks_sameness("Do elderly patients have different care needs?")
    # a sameness word that describes who was studied is not what the question asks
    assert not asks_sameness(
        "Does childhood intelligence predict mortality when siblings from the same family are "
        "compared?"
    )


def test_a_conclusion_that_plainly_says_both_is_no_plain_answer() -> None:
    question = "Is hearing loss in both ears associated with lower nonverbal intelligence?"
    abstract = (
        "BACKGROUND: Hearing loss is common in children. METHODS: We studied 1,200 children. "
        "CONCLUSIONS: There was no difference in nonverbal intelligence score based on "
        "unilateral hearing loss. Nonverbal intelligence is adversely affected by bilateral "
        "hearing loss even at mild levels."
    )
    pool = SourcePool.build(question, [abstract], HashEncoder())
    said = source_stance(pool.sources[0], question, question_stems(question))
    assert said.stance == "unclear"
    # one plain finding alone still decides
    single = SourcePool.build(question, [abstract.split(" Nonverbal intelligence is")[0]],
                              HashEncoder())  # fmt: skip
    assert source_stance(single.sources[0], question, question_stems(question)).stance == "no"


def test_a_follow_up_searched_in_its_conversation_keeps_the_conversations_concepts() -> None:
    from chains.grounded import judge_sources
    from settings.grounding import GroundingSettings

    asked = "and does it hold when siblings are compared?"
    searched = "Is childhood intelligence associated with adult mortality? " + asked
    siblings_only = (
        "CONCLUSIONS: Unaffected siblings of patients with schizophrenia performed poorly on "
        "tests of verbal memory compared with controls."
    )
    mortality = (
        "CONCLUSIONS: The lower mortality associated with higher childhood intelligence was not "
        "explained by factors shared by siblings."
    )
    corpus = Vocabulary([siblings_only, mortality, HEART, TRAINING_NULL, TRAINING_YES])
    pool = SourcePool.build(searched, [siblings_only, mortality], HashEncoder())
    evidence = select_evidence(pool)
    j = judge_sources(asked, searched, pool, evidence, GroundingSettings(), None, corpus)
    assert j.addressing == [2]  # the siblings-only abstract is not about mortality


def test_a_sentence_sharing_no_word_with_the_question_decides_nothing() -> None:
    # abstain_dev's "class sizes" question: an unstructured growth study about pupils ended on a
    # sentence about something else ("explaining" read as a yes) and gave a confident "Yes"
    question = "Do smaller class sizes in the first years of school raise pupils' later IQ scores?"
    abstract = (
        "Cognitive ability of primary school pupils in Costa Rica was compared with Austria. "
        "Austrian children were also taller. Different causal hypotheses explaining these "
        "differences are compared."
    )
    pool = SourcePool.build(question, [abstract], HashEncoder())
    said = source_stance(pool.sources[0], question, question_stems(question))
    assert said.stance == "unclear" and said.sentence == ""
    # a labelled conclusion is about the study's own question: it still decides
    labelled = SourcePool.build(
        question, ["METHODS: We compared two groups. CONCLUSIONS: No differences were found."],
        HashEncoder(),
    )
    assert source_stance(labelled.sources[0], question, question_stems(question)).stance == "no"


def test_a_finding_on_another_outcome_is_no_answer_about_the_one_asked() -> None:
    """An abstract that never names the asked outcome (two words or more: "blood pressure") does
    not state it in other words: its finding on another outcome of the same exposure is no yes
    (a confident wrong "Yes" seen in the closing walk of stop 48)."""
    question = "Does tai chi lower blood pressure?"
    other = ("We followed 200 older adults for one year. CONCLUSIONS: Tai chi showed a positive "
             "effect on memory and attention.")
    asked = ("We randomised 90 adults with hypertension. CONCLUSIONS: Tai chi lowered blood "
             "pressure compared with usual care.")
    pool = SourcePool.build(question, [other, asked], HashEncoder())
    stems = question_stems(question)
    assert source_stance(pool.sources[0], question, stems).stance != "yes"
    assert source_stance(pool.sources[1], question, stems).stance == "yes"


def test_a_source_that_never_names_a_one_word_outcome_takes_no_stance() -> None:
    """The same for an everyday one-word outcome ("healthcare"), which the coverage check does
    not require: an abstract on healthy lifestyles and health that never names healthcare use
    is quoted, but its findings decide nothing (the closing walk of stop 68: "Mixed evidence (2
    yes, 1 no)" from two such abstracts). mutation caught: judge_sources not passing
    ``asked_outcome`` to check_coverage -> the health abstract decides ("yes", mixed)."""
    from chains.grounded import judge_sources
    from settings.grounding import GroundingSettings

    question = "Do healthier lifestyles mean people use less healthcare?"
    health = ("We followed 400 adults for ten years. CONCLUSIONS: Healthier lifestyles were "
              "associated with better health and fewer chronic diseases.")
    use = ("We linked lifestyle surveys to insurance claims. CONCLUSIONS: Healthier lifestyles "
           "did not reduce the use of healthcare.")
    # an index that uses the word widely: it is no essential concept
    corpus = Vocabulary([health, use, HEART, *[f"Healthcare costs study {i}." for i in range(30)]])
    pool = SourcePool.build(question, [health, use], HashEncoder())
    every_sentence = GroundingSettings(relevance_bar=0.0)  # the hash encoder's nearness is noise
    j = judge_sources(question, question, pool, select_evidence(pool), every_sentence, None,
                      corpus)  # fmt: skip
    assert j.addressing == [1, 2], (j.addressing, j.missing)  # both are quoted
    assert j.verdict == "no", (j.verdict, j.reason)


_ICE = ("Does moderately severe pain, such as from holding a hand in ice water, lower healthy "
        "volunteers' scores on WAIS-IV processing speed?")


def test_an_example_the_user_gives_is_not_a_concept_the_answer_must_name() -> None:
    # mutation caught: question_concepts ignoring ``_Run.example`` -> "ice water" (a rare
    # compound of this index) must be named, and the abstract on cold pressor pain, which
    # answers the question, "does not mention ice water" (held-out vh028 lost its right "No")
    abstracts = [
        "Cold pressor-induced pain did not lower WAIS-IV processing speed index scores in "
        "healthy volunteers.",
        *[f"Moderately severe pain study {i} in healthy volunteers." for i in range(30)],
        *[f"Ice water swim {i}." for i in range(3)],
    ]
    concepts = question_concepts(_ICE, Vocabulary(abstracts))
    ice = next(c for c in concepts if c.text == "ice water")
    assert ice.essential == () and not ice.compound
    assert "wais" in next(c for c in concepts if c.text.startswith("WAIS")).essential
    pool = SourcePool.build(_ICE, abstracts[:1], HashEncoder())
    assert check_coverage(concepts, pool, HashEncoder()).addressing == [1]


def test_an_example_opened_by_e_g_lasts_to_the_next_punctuation() -> None:
    # mutation caught: punctuation always ending the example -> the "." of "e.g." ends it at
    # once and "sertraline" must be named by an abstract on SSRIs
    concepts = question_concepts("Do SSRIs, e.g. sertraline, lower IQ in the child?")
    by_text = {c.text: c.essential for c in concepts}
    assert by_text["sertraline"] == () and by_text["SSRIs"] == ("ssris",)
    assert by_text["IQ"] == ("iq",)  # the comma after the example ends it
