"""Issue #35 "Meaning, not words", fast: a sentence decides only when it states the question's
relation, negation scoped to it; recommendations never decide; the final guard; the corpus's own
abbreviations cover a concept; phrasing fragments are not concepts; the fusion weights ramp; a
question's opening scope is not its exposure."""

from __future__ import annotations

import pytest

from grounding.concepts import SCARCE_CHUNKS, check_coverage, question_concepts, question_stems
from grounding.sources import SourcePool, SourceText
from grounding.stance import (
    clauses,
    question_relation,
    relation_stance,
    sentence_stance,
    source_stance,
)
from indexing.aliases import AliasTable
from ingest.ages import other_age_group
from retrievers.hybrid import fusion_weights
from tests.test_grounding_unit import HashEncoder
from tests.test_judgement_unit import Vocabulary

HIRSCHSPRUNG_Q = (
    "Are people with Hirschsprung disease at increased risk of being diagnosed with ADHD?"
)
HIRSCHSPRUNG = "There is no increased risk of ADHD in patients with Hirschsprung disease."


def _stance(question: str, abstract: str, title: str = "") -> str:
    source = SourceText.build(1, abstract, title=title)
    return source_stance(source, question, question_stems(question)).stance


def test_no_increased_risk_says_no() -> None:
    # mutation caught: the "no increased ... risk" null-finding pattern dropped (it read "Yes")
    stems = question_stems(HIRSCHSPRUNG_Q)
    assert sentence_stance(HIRSCHSPRUNG, stems).stance == "no"
    assert _stance(HIRSCHSPRUNG_Q, f"We studied 2,000 children. {HIRSCHSPRUNG}") == "no"
    q = "Is disconnection syndrome more likely after anterior callosotomy?"
    said = "Anterior callosotomy was unlikely to result in disconnection syndrome."
    assert sentence_stance(said, question_stems(q)).stance == "no"


def test_a_yes_never_stands_on_a_clause_with_an_unexplained_negation() -> None:
    # mutation caught: the final guard (_guarded) removed -> "yes" read from "associated with"
    # in a sentence that says the opposite in words no null-finding rule knows ("never")
    q = "Is hearing loss linked to dementia?"
    said = relation_stance(
        "Hearing loss was never associated with dementia in this cohort.",
        question_relation(q), question_stems(q),
    )
    assert said.stance == "unclear"


def test_a_recommendation_never_decides() -> None:
    # mutation caught: the RECOMMENDATION check dropped -> "yes" from "improve"
    q = "Does community-based care improve cognitive outcomes of children with HIV?"
    abstract = (
        "We followed 300 children with HIV. CONCLUSIONS: We must develop integrated "
        "community-based care packages that improve cognitive outcomes of children with HIV."
    )
    assert _stance(q, abstract) == "unclear"
    future = "Future studies should test whether community-based care improves cognitive outcomes."
    assert relation_stance(future, question_relation(q), question_stems(q)).stance is None


def test_whether_trials_can_be_run_is_the_research_agenda_not_a_finding() -> None:
    """Seen in the chat (PMID 24025628, iodine in pregnancy): "the conduct of such RCTs may not
    be feasible" decided "No" for "Does iodine supplementation in pregnancy improve children's
    IQ?". A sentence about whether trials can or should be run never decides. Mutations
    caught: the two research-agenda RECOMMENDATION patterns removed -> "no" read from "not";
    "clearly ... indicated" removed from the "is needed" pattern -> "yes" from "improve"."""
    q = "Does iodine supplementation in pregnancy improve children's IQ?"
    relation, stems = question_relation(q), question_stems(q)
    agenda = ("Conduct of such RCTs of iodine supplementation in pregnancy on children's IQ may "
              "not be feasible.")
    assert relation_stance(agenda, relation, stems).stance is None
    indicated = ("Contemporary RCTs of iodine supplementation in pregnancy that improve "
                 "children's IQ are clearly indicated.")
    assert relation_stance(indicated, relation, stems).stance is None
    # a finding about the same relation still decides
    finding = "Iodine supplementation in pregnancy did not improve children's IQ."
    assert relation_stance(finding, relation, stems).stance == "no"


def test_a_missing_evidence_base_reads_as_doubt() -> None:
    """The same abstract's conclusion: "there is a lack of quality evidence of the effect of
    iodine supplementation" says the evidence is missing, so it reads "unclear", never "no".
    Mutation caught: the "lack|absence|paucity ... of evidence" DOUBT pattern removed -> None
    (the sentence gives no reading, and a later sentence decides alone)."""
    q = "Does iodine supplementation in pregnancy improve children's IQ?"
    stems = question_stems(q)
    said = ("There is a lack of quality evidence of the effect of iodine supplementation in "
            "pregnancy on children's IQ.")
    assert sentence_stance(said, stems).stance == "unclear"
    assert sentence_stance("Scant clinical evidence links iodine supplementation in pregnancy "
                           "with children's IQ.", stems).stance == "unclear"


def test_what_predicts_the_response_to_a_treatment_is_no_verdict_on_it() -> None:
    """Seen in the chat: "Are stimulant medications effective for ADHD in children?" opened
    "Yes" on the labelled conclusion "The clinical outcome of stimulant medication was best
    predicted by electrophysiological parameters." (the treatment sits in the outcome's place;
    the sentence says who responds, not whether it works). Mutation caught: the
    PREDICTS_RESPONSE check dropped from ``Relation.no_finding`` -> "yes" from "predicted"."""
    q = "Are stimulant medications effective for ADHD in children?"
    conclusion = ("We treated 60 children with ADHD with stimulant medication. CONCLUSION: The "
                  "clinical outcome of stimulant medication was best predicted by "
                  "electrophysiological parameters.")
    assert _stance(q, conclusion) == "unclear"
    # asked about prediction, the same sentence answers it
    asked = "Do electrophysiological parameters predict the outcome of stimulant medication?"
    assert _stance(asked, conclusion) == "yes"


def test_a_conclusion_sharing_no_word_decides_only_for_a_study_asking_the_question() -> None:
    """The stimulant abstract's next conclusion sentence, "The brain dysfunctions of the REs
    appear to be primarily associated with prefrontal lobe hypoactivation.", shares no word with
    the question and was read as the study's own answer ("yes" from "associated"). Such a
    sentence decides only when the source's title asks the user's question, and a
    predictor-of-response title does not ask whether the treatment works. Mutations caught:
    ``_asks_it`` made to return True -> "yes" (both titles below); its predictor check dropped
    -> "yes" for the first; "every concept" made "any" -> "yes" for the second; made to return
    False -> the trial's "Differences ... were not found" loses its "no"."""
    q = "Are stimulant medications effective for ADHD in children?"
    conclusion = ("We treated 60 children. CONCLUSION: The brain dysfunctions of the REs appear "
                  "to be primarily associated with prefrontal lobe hypoactivation.")
    predictor = ("Predicting the clinical outcome of stimulant medication in children with ADHD: "
                 "data from quantitative electroencephalography")
    assert _stance(q, conclusion, title=predictor) == "unclear"
    # a study of something else: its title does not state the question's relation
    assert _stance(q, conclusion, title="Brain function of children with ADHD") == "unclear"
    # a trial of the question's own relation: its conclusion answers it in words of its own
    trial = "We treated 60 children. CONCLUSION: Differences related to treatment were not found."
    assert _stance(q, trial, title="Stimulant medication for ADHD in children: a trial") == "no"


def _stance_of_findings(question: str, abstract: str, title: str = "") -> str:
    """A source's stance as the chat reads it: every sentence a key finding."""
    source = SourceText.build(1, abstract, title=title)
    spans = [(s.start, s.end) for s in source.sentences]
    return source_stance(source, question, question_stems(question), spans).stance


def test_a_source_never_naming_the_exposure_answers_nothing_about_it() -> None:
    """Stop 61's walk: "Do babies born really early end up with lower IQ as kids?" read "Yes"
    from a study of infant motor milestones ("Later acquisition of infant developmental
    milestones was associated with lower subsequent IQ"). The abstract never names the
    question's exposure, so its relation kept only the outcome, and any sentence naming IQ
    "stated" it. A study naming the exposure by another English name of it (WordNet's
    "preterm" for "preemies") still answers. Mutations caught: the exposure check dropped from
    ``source_stance`` -> "yes" for the milestones study; ``_lay_stems`` returning nothing ->
    "unclear" for the preterm study."""
    milestones = ("Mothers of 9125 children recorded 12 developmental milestones. Later "
                  "acquisition of infant developmental milestones was associated with lower "
                  "subsequent IQ.")
    title = "Infant developmental milestones and adult intelligence: a 34-year follow-up"
    q = "Do babies born really early end up with lower IQ as kids?"
    assert _stance_of_findings(q, milestones, title) == "unclear"
    preterm = ("We followed 300 infants from birth to age 8. Preterm birth was associated with "
               "lower IQ at age 8.")
    assert _stance_of_findings("Do preemies end up with lower IQ?", preterm,
                               "Preterm birth and IQ at age 8") == "yes"


def test_a_title_stating_the_finding_decides_when_no_sentence_does() -> None:
    """"No evidence of intelligence improvement after working memory training" is the study's
    answer, but its abstract words the finding as "no positive transfer to any of the
    cognitive ability tests", and the source read unclear. The title decides when no sentence
    does; a title that is a question never does. Mutations caught: the title fallback removed
    -> "unclear"; its question check dropped -> "no" from a title asking "No ...?"; a "yes"
    title let decide -> "yes"."""
    q = "Does working memory training improve intelligence?"
    abstract = ("Young adults received 20 sessions of working memory training or visual search "
                "practice. Despite improvements on both tasks with practice, there was no "
                "positive transfer to any of the cognitive ability tests.")
    stated = ("No evidence of intelligence improvement after working memory training: a "
              "randomized, placebo-controlled study")
    assert _stance_of_findings(q, abstract, stated) == "no"
    asked = "No intelligence improvement after working memory training?"
    assert _stance_of_findings(q, abstract, asked) == "unclear"
    # a title read as "yes" decides nothing: on verdict_traps td030 one read "yes" from another
    # relation (a mediator of birth weight and cognition, asked about overweight) and
    # contradicted its gold; a wrong "yes" is the worst answer
    said = "Working memory training is associated with higher intelligence"
    assert _stance_of_findings(q, abstract, said) == "unclear"


def test_a_finding_on_the_opposite_level_of_the_exposure_decides_nothing() -> None:
    """verdict_traps td005: asked whether LOW maternal ferritin goes with children's cognitive
    abilities, "HIGH maternal ferritin was associated with poorer child cognitive abilities" is
    a finding about another exposure, and it made the source "unclear" beside the sentence on
    low ferritin. Mutations caught: ``other_level`` left out of ``Relation.no_finding`` ->
    "unclear"; the question's level not read (``levels`` empty) -> "unclear"."""
    q = "Was low maternal ferritin in pregnancy associated with child cognitive abilities?"
    abstract = ("We followed 2479 mother-child pairs. High maternal ferritin was associated with "
                "poorer child cognitive abilities. Low maternal ferritin was not associated "
                "with child cognitive abilities.")
    assert _stance_of_findings(q, abstract) == "no"
    relation = question_relation(q)
    assert relation.other_level("Higher maternal ferritin levels predicted lower IQ.")
    assert not relation.other_level("Low and high maternal ferritin predicted lower IQ.")


def test_a_comparison_in_the_opposite_direction_says_no() -> None:
    """verdict_traps td034 (comparative direction): asked whether oxcarbazepine gives HIGHER
    vitamin D levels than valproic acid, "Those taking oxcarbazepine had significantly LOWER
    vitamin D levels than patients taking valproic acid" read "yes" ("significantly") and the
    source "unclear". Mutations caught: the comparison read dropped from ``relation_stance``
    -> "yes"; the direction test inverted -> "yes"/"no" swapped; arms named the other way
    round not turning it -> "no" for the reversed sentence; "more than 2 years" taken for a
    comparison -> a direction for it."""
    q = ("Do children with epilepsy taking oxcarbazepine have higher vitamin D levels than "
         "those taking valproic acid?")
    stems = question_stems(q)
    relation = question_relation(q)
    lower = ("Those taking oxcarbazepine had significantly lower vitamin D levels than patients "
             "taking valproic acid (p=0.01).")
    assert relation_stance(lower, relation, stems).stance == "no"
    reversed_arms = ("Those taking valproic acid had lower vitamin D levels than "
                     "oxcarbazepine users.")
    assert relation_stance(reversed_arms, relation, stems).stance == "yes"
    assert _stance_of_findings(q, f"We studied 143 children with epilepsy. {lower}") == "no"
    assert relation.comparison_stance("Vitamin D levels were lower in those treated for more "
                                      "than 2 years with valproic acid.") is None


def test_an_association_reported_found_says_yes() -> None:
    """PubMedQA 26163474: "An association was found between sublingual varices and
    hypertension." read no stance at all (no verb of relation), and the source's "yes" came from
    "causes no harm" in a sentence about examining the tongue, which stopped deciding when a
    conclusion naming its own things no longer decides alone. Mutation caught: FOUND_RELATION
    left out of ``sentence_stance`` -> None and "unclear"."""
    q = "Is there a connection between sublingual varices and hypertension?"
    stems = question_stems(q)
    found = "An association was found between sublingual varices and hypertension."
    assert sentence_stance(found, stems).stance == "yes"
    assert sentence_stance("We observed a significant correlation between sublingual varices "
                           "and hypertension.", stems).stance == "yes"
    assert _stance(q, f"We examined 431 dental patients. CONCLUSIONS: {found}") == "yes"
    # the same noun, negated, is a null finding
    assert sentence_stance("No association was found between sublingual varices and "
                           "hypertension.", stems).stance == "no"
    assert sentence_stance("An association between sublingual varices and hypertension was "
                           "not found.", stems).stance == "no"


def test_the_papers_own_discussion_and_future_work_never_decide() -> None:
    """Seen in the chat: "We discuss these results in the context of previous working memory
    training research and address issues for future working memory training studies." gave a
    "yes" (the noun "results in" read as "X results in Y") over an abstract titled "No evidence
    of intelligence improvement after working memory training". Mutations caught: the noun
    guard on "results in" removed, with the discussion and long future-work patterns removed ->
    "yes"; the noun guard alone removed -> the plain sentence check says "yes"."""
    q = "Does working memory training improve intelligence?"
    relation, stems = question_relation(q), question_stems(q)
    discussion = ("We discuss these results in the context of previous working memory training "
                  "research and address issues for future working memory training studies.")
    assert relation_stance(discussion, relation, stems).stance is None
    assert sentence_stance("These results in the context of training research are discussed.",
                           stems).stance is None
    # the verb still counts: "X results in Y" is a finding
    assert relation_stance("Working memory training results in higher intelligence scores.",
                           relation, stems).stance == "yes"


def test_a_null_finding_about_another_relation_decides_nothing() -> None:
    # mutation caught: relation_stance reading the whole sentence (no relation check) -> "no"
    q = "Does regional cortical thinning predict worsening apathy?"
    other = "CSF biomarkers were not related to severity of apathy."
    assert relation_stance(other, question_relation(q), question_stems(q)).stance is None
    # the clause that states the question's relation decides, the other clause does not
    both = ("CSF biomarkers were not related to severity of apathy, but regional cortical "
            "thinning predicted worsening apathy.")
    assert relation_stance(both, question_relation(q), question_stems(q)).stance == "yes"


def test_a_finding_in_another_population_decides_nothing() -> None:
    q = "Is childhood IQ associated with later dementia in men?"
    women = "Childhood IQ was associated with later dementia in women."
    assert relation_stance(women, question_relation(q), question_stems(q)).stance is None


def test_a_finding_only_in_another_population_says_no_for_the_one_asked() -> None:
    """verdict_traps td037: "... significantly predicted ... depressed mood 5 years later, but
    only in women", asked about men, read "unclear" (a finding about women decides nothing
    about men). Scoped to one group alone, a finding says the relation does not hold in the
    group it leaves out: "no" for men, never a yes. Mutations caught: ``ONLY_IN``'s "restricted
    to" form dropped -> None; ``_left_out_population`` returning the sentence's own stance ->
    "yes"; the rule not tried in ``_whole_statement`` -> "unclear"."""
    q = "Did somatic complaints predict depressive symptoms five years later in men?"
    relation, stems = question_relation(q), question_stems(q)
    only = ("Baseline somatic complaint scores significantly predicted depressive symptoms 5 "
            "years later, but only in women.")
    assert relation_stance(only, relation, stems).stance == "no"
    # a finding "in women" alone, or one that also holds in men, says nothing of the kind
    assert relation_stance(only.replace("but only in women", "in women"), relation,
                           stems).stance is None
    limited = ("Somatic complaints significantly predicted depressive symptoms 5 years later, "
               "an effect restricted to women.")
    assert relation_stance(limited, relation, stems).stance == "no"
    # a null finding in one group alone says nothing about the other
    null = "Somatic complaints did not predict depressive symptoms, only in women."
    assert relation_stance(null, relation, stems).stance is None
    # asked about the group it names, the rule does not apply
    asked_women = question_relation(q.replace("in men", "in women"))
    assert relation_stance(only, asked_women, question_stems(q)).stance != "no"
    # in a results section the sentence decides when the conclusions speak of women only
    abstract = ("OBJECTIVE: We asked whether somatic complaints predict depression. METHODS: "
                "A community cohort was followed for five years. RESULTS: " + only
                + " CONCLUSIONS: Somatic complaints may be a risk factor for depressive "
                "symptoms in women.")
    assert _stance(q, abstract) == "no"


def test_safety_is_the_question_not_a_concept() -> None:
    """The walk: "Is Zoloft safe to take while pregnant ...?" abstained naming "Zoloft safe"
    as the missing concept. Whether something is safe is what the question asks of it, like
    "effective": the concept is "Zoloft". Mutation caught: "safe" out of QUESTION_FRAME."""
    names = [c.text for c in question_concepts("Is Zoloft safe to take while pregnant?")]
    assert names == ["Zoloft", "pregnant"], names


def test_the_corpus_abbreviations_cover_a_concept() -> None:
    # mutation caught: check_coverage without _by_alias -> "osa" missing, not addressed
    texts = [
        "Obstructive sleep apnea (OSA) in children was studied with polysomnography.",
        "Adults with obstructive sleep apnea (OSA) were treated with CPAP.",
    ]

    class WithAliases(Vocabulary):
        table = AliasTable.build(texts)

        def alias_stems(self, name: str) -> list[frozenset[str]]:
            return self.table.stems_of(name)

    q = "Does OSA lower IQ in kids?"
    abstract = "Children with obstructive sleep apnea had lower IQ scores than controls."
    pool = SourcePool.build(q, [abstract], HashEncoder())
    coverage = check_coverage(question_concepts(q, WithAliases(texts + [abstract])), pool)
    assert coverage.addressed and coverage.addressing == [1]


def test_abbreviations_are_read_from_definitions_only() -> None:
    table = AliasTable.build(["attention-deficit/hyperactivity disorder (ADHD) and IQ",
                              "attention deficit hyperactivity disorder (ADHD) in adults",
                              "children (n = 40) and adults (NS) were seen"] * 2)  # fmt: skip
    assert "attention deficit hyperactivity disorder" in table.of("adhd")
    assert table.of("ns") == []


@pytest.mark.parametrize("fragment", ["restarting", "50s", "tied"])
def test_phrasing_fragments_are_not_concepts(fragment: str) -> None:
    # mutation caught: _verb_form / _DECADE / the lay frame words removed -> an essential word
    q = {
        "restarting": "Does restarting the defibrillator hurt their memory?",
        "50s": "Does statin use in your 50s raise dementia risk?",
        "tied": "Is snoring tied to lower IQ?",
    }[fragment]
    essential = {w for c in question_concepts(q) for w in c.essential}
    assert fragment not in essential, essential
    # the things studied stay essential
    assert essential & {"defibrillator", "statin", "snoring"}


def test_a_verb_form_inside_a_compound_stays_a_concept() -> None:
    # mutation caught: the verb-form rule applied inside a run ("alone" ignored) -> "chewing"
    # dropped, and "gum" alone let a dental-school abstract answer the chewing-gum question
    essential = {w for c in question_concepts("Does chewing gum improve test scores?")
                 for w in c.essential}  # fmt: skip
    assert "chewing" in essential


def test_fusion_weights_ramp_from_dense_to_bm25_leading() -> None:
    strong, weak = [0.75, 0.25], [0.25, 0.75]
    assert fusion_weights(0.30, strong, weak, 0.343, 0.2) == weak
    middle = fusion_weights(0.443, strong, weak, 0.343, 0.2)
    assert middle == pytest.approx([0.5, 0.5])
    assert fusion_weights(0.6, strong, weak, 0.343, 0.2) == strong
    assert fusion_weights(0.35, strong, weak, 0.343, 0.0) == strong  # no ramp: the step


def test_a_questions_opening_scope_is_not_its_exposure() -> None:
    # mutation caught: _side without the opening-scope rule ("Among adults assessed for ADHD or
    # autism, ..." read as the exposure) -> a null finding about autism and bullying decides "no"
    q = (
        "Among adults assessed for ADHD or autism, were those who had poor gross motor skills "
        "as children more likely to have been bullied by peers?"
    )
    other = (
        "Bully and victimisation rates did not differ between boys with autism spectrum "
        "disorder and typically developing boys."
    )
    rel = question_relation(q)
    assert relation_stance(other, rel, question_stems(q)).stance is None
    said = "Poor gross motor skills were a strong risk factor for being bullied by peers."
    assert relation_stance(said, rel, question_stems(q)).stance == "yes"


def test_a_concept_is_placed_as_a_whole_word() -> None:
    # mutation caught: _side finding the concept with str.find ("men" inside "women") -> "men"
    # counted with the exposure, before the relation word (it is the comparator, after "than")
    rel = question_relation("Are women more cognitively impaired than men?")
    sides = dict(zip([sorted(c)[0] for c in rel.concepts], rel.sides, strict=True))
    assert sides == {"women": 0, "cognit": 1, "men": 2}, sides


STIMULANT_Q = "Does methylphenidate help children with ADHD focus better?"


def test_an_affirmative_finding_about_another_outcome_decides_nothing() -> None:
    # mutation caught: _own_words_yes without Relation.names_outcome -> "yes" from a sentence
    # on withdrawals (seen in the chat: "Yes (2 of 2 studies)" for Ritalin and focus)
    other = (
        "Methylphenidate is the first-line treatment of ADHD. Withdrawal from methylphenidate "
        "occurred in 1.2% and adverse events of unknown severity led to withdrawal in 7.3%."
    )
    assert _stance(STIMULANT_Q, other) != "yes"
    # the control: a finding in the abstract's own words that names the outcome still says yes
    # (mutation caught: the own-words yes removed -> unclear)
    own = (
        "Methylphenidate was given to 120 children with ADHD for 12 weeks. The treatment "
        "improved attention in children with ADHD."
    )
    assert _stance(STIMULANT_Q, own) == "yes"


def test_a_paper_on_another_age_group_does_not_answer_in_its_own_words() -> None:
    # mutation caught: source_stance ignoring other_age_group -> "yes" from the adult paper's
    # "could also help" (seen in the chat for a question about kids)
    abstract = (
        "We describe a framework for prescribing methylphenidate. This framework could also "
        "help children with ADHD focus on the monitoring of other treatments."
    )
    adults = SourceText.build(1, abstract, title="Prescribing methylphenidate in adult ADHD")
    kids = SourceText.build(1, abstract, title="Prescribing methylphenidate in children")
    stems = question_stems(STIMULANT_Q)
    assert source_stance(adults, STIMULANT_Q, stems).stance != "yes"
    assert source_stance(kids, STIMULANT_Q, stems).stance == "yes"
    assert other_age_group("Methylphenidate in adult ADHD", STIMULANT_Q)
    assert not other_age_group("Methylphenidate in adult ADHD", "Does it help adults focus?")
    assert not other_age_group("Methylphenidate in ADHD", STIMULANT_Q)


def test_a_source_missing_one_concept_is_listed_but_never_decides() -> None:
    # The corpus's own titles with one concept swapped for another article's ("Does training in
    # FOSTER improve the patient-physician relationship ...?" over the empathic-skills trial)
    # got verdicts from such sources. mutation caught: Coverage.complete returning
    # self.addressing -> the source missing "mindfulness" is counted as deciding
    q = "Does mindfulness training improve hippocampal volume in firefighters?"
    missing_one = (
        "Firefighters were randomised to cognitive training or rest. "
        "Training improved hippocampal volume in firefighters."
    )
    whole = (
        "Firefighters were randomised to mindfulness training or rest. "
        "Mindfulness training improved hippocampal volume in firefighters."
    )
    class LargeCorpus(Vocabulary):
        size = 10_000  # each concept in 30 of 10,000 chunks: rare, but not scarce

    corpus = LargeCorpus(
        [missing_one, whole]
        + ["mindfulness", "hippocampal volume", "firefighters"] * (SCARCE_CHUNKS + 10)
    )
    pool = SourcePool.build(q, [missing_one, whole], HashEncoder())
    coverage = check_coverage(question_concepts(q, corpus), pool)
    assert coverage.addressing == [1, 2], coverage.per_source  # one gap is tolerated ...
    assert coverage.complete == [2], coverage.per_source  # ... but only the whole match decides


def test_a_brand_named_exposure_is_checked_by_its_generic_name_clause_by_clause() -> None:
    # Seen in the chat: "Does taking Ritalin help kids ...?" got "Yes" from a sentence naming
    # ADHD alone, because the abstract names Ritalin only as methylphenidate and the exposure
    # fell out of the relation. mutation caught: question_relation without _generic_stems
    q = "Does taking Ritalin help kids with ADHD focus better?"
    relation = question_relation(q)
    assert any("methylphenid" in c for c in relation.concepts), relation.concepts
    abstract = (
        "We describe prescribing of methylphenidate. This framework could also help the "
        "monitoring of other off-label treatments for ADHD."
    )
    source = SourceText.build(1, abstract, title="Off-label methylphenidate in adult ADHD")
    assert source_stance(source, q, question_stems(q)).stance != "yes"


HABITAT_Q = "Do habitat generalist bird species have larger brains?"


def test_a_negated_list_negates_each_of_its_items() -> None:
    # mutation caught: SCOPED_NOT's group back to one run of words (the list's first item only)
    # -> "yes" from "positively related" (verdict_traps_dev td020's deciding sentence)
    sentence = (
        "Habitat generalism was positively related with food type innovation rate, but not "
        "technical innovation rate or brain size."
    )
    read = sentence_stance(sentence, question_stems(HABITAT_Q))
    assert (read.stance, read.cue) == ("no", "but not technical innovation rate or brain size")
    # the control: a negated list of things the question does not ask about is set aside
    other = "Habitat generalism was related to larger brains, but not to diet or body mass."
    assert sentence_stance(other, question_stems(HABITAT_Q)).stance == "yes"


def test_a_finding_stated_as_a_contrast_is_read_with_what_it_contrasts() -> None:
    # mutation caught: source_stance without _contrasted -> "yes" from the sibling relation
    # ("diet generalist") that the last sentences state in contrast to the question's own
    abstract = (
        "We compared 765 bird species. Generalism was measured by habitat and by diet. "
        "Habitat generalist species did not have larger brains than specialist species. "
        "This suggests that habitat breadth needs no extra cognition. In contrast, diet "
        "generalist species had larger brains. Our results separate two routes to generalism."
    )
    assert _stance(HABITAT_Q, abstract) == "no"


FLEXIBILITY_Q = (
    "Is cognitive flexibility associated with young drivers' performance in a driving simulator?"
)


def test_a_serial_list_is_one_clause() -> None:
    # mutation caught: clauses() without _joined_lists -> the list's ", and" splits off the
    # null finding from the concept it is about ("unclear" instead of "no")
    sentence = (
        "Measures of cognitive flexibility, orienting, and conflict executive control were not "
        "associated with driving performance under either condition."
    )
    assert _stance(FLEXIBILITY_Q, f"We tested 40 young drivers. {sentence}") == "no"
    # the control: a clause with its own verb still parts at ", and"
    assert len(clauses("X improved memory, attention was unchanged, and Y decreased.")) == 2


def _read(question: str, sentence: str) -> str | None:
    return relation_stance(sentence, question_relation(question), question_stems(question)).stance


ADJUSTED = ("Longer breastfeeding predicted higher IQ in children after adjusting for maternal "
            "education and income.")
INDEPENDENT = "Childhood IQ predicted mortality independent of socioeconomic status."


def test_what_a_sentence_holds_constant_is_no_side_of_its_relation() -> None:
    # mutation caught: the covariate check removed from relation_stance (both read "yes")
    assert _read("Does maternal education predict children's IQ?", ADJUSTED) is None
    assert _read("Does socioeconomic status predict mortality?", INDEPENDENT) is None
    # the relation itself, stated with its covariates, still decides
    assert _read("Does breastfeeding increase children's IQ?", ADJUSTED) == "yes"
    assert _read("Does childhood IQ predict mortality?", INDEPENDENT) == "yes"
    # one word of a concept is not the concept (mutation caught: any shared word -> None)
    assert _read("Is motor control related to children's spatial reasoning?",
                 "After accounting for control variables, children's balance skills predicted "
                 "their spatial reasoning.") == "yes"
    # what the question itself holds constant may be held constant by the sentence too
    # (mutation caught: Relation.controlled ignored by held_constant -> None)
    assert _read("Does peer victimisation predict suicidal ideation even after accounting for "
                 "mental health problems?", "Peer victimisation predicted suicidal ideation over "
                 "and above prior mental health problems.") == "yes"


# PMID 26014827's sentence, read "no" to "Does childhood intelligence predict health in later
# life?" from its "were not explained" (seen in the chat: "Mixed evidence (2 yes, 1 no)")
EXPLAINED = ("The associations between intelligence and biological age were not explained by "
             "differences in childhood health or parental socioeconomic status, and intelligence "
             "remained a significant predictor of biological age.")


def test_what_a_finding_is_not_explained_by_is_held_constant() -> None:
    # mutations caught: EXPLAINED_AWAY's spans left in relation_stance's text -> the
    # biological-age question "unclear" (its first clause reads "no"); left out of
    # held_constant -> the SES question reads "yes" from the intelligence finding
    assert _read("Does childhood intelligence predict health in later life?", EXPLAINED) is None
    assert _read("Does intelligence predict biological age?", EXPLAINED) == "yes"
    assert _read("Does parental socioeconomic status predict biological age?", EXPLAINED) is None
    effects = ("The effects of bilingualism on executive function were not attributable to "
               "socioeconomic status.")
    # the effects are presupposed, not stated: no finding either way, never "no" (as before)
    assert _read("Does bilingualism improve executive function?", effects) is None
    # a question about what explains a finding gets the negation as written (mutation caught:
    # ASKS_EXPLANATION ignored -> None)
    assert _read("Is the association between intelligence and biological age explained by "
                 "parental socioeconomic status?", EXPLAINED) == "no"
    # a subject that names no finding: the relation itself is denied (mutation caught: the
    # subject requirement dropped from EXPLAINED_AWAY -> None)
    assert _read("Is fatigue in Sjogren's syndrome associated with fibromyalgia?",
                 "Fatigue in Sjogren's syndrome was not explained by fibromyalgia.") == "no"
    # nor one reported after "that" (PMID 11053064; mutation caught: the reporting verbs
    # allowed between the finding word and the negation -> None)
    assert _read("Is fatigue in Sjogren's syndrome associated with fibromyalgia?",
                 "The results show that fatigue in patients with Sjogren's syndrome is not due to "
                 "the coexistence of fibromyalgia in most cases.") == "no"


def test_naming_the_group_is_not_naming_its_outcome() -> None:
    # mutation caught: group words counted in Relation.names_outcome (the sentence about who
    # takes music lessons read "yes" to whether music training raises children's IQ)
    sentence = ("Children's personality traits predicted duration of music training even when "
                "demographic variables and intelligence were held constant.")
    assert _read("Does music training improve children's IQ?", sentence) is None
    assert _read("Do children's personality traits predict music training?", sentence) == "yes"


def test_what_something_could_become_is_a_prospect_not_a_finding() -> None:
    """Seen in the chat: "Is being very intelligent linked to depression?" got "Yes" from "an
    intelligent assistant for ... depression, could become a very helpful information system"
    (PMID 36514712). Mutation caught: the prospect pattern removed from RECOMMENDATION -> "yes"."""
    q = "Does music training improve children's IQ?"
    prospect = "Music training could become a helpful tool to improve children's IQ."
    assert _read(q, prospect) is None
    # a change of state is still a finding
    assert _read(q, "Children's IQ may become higher with music training.") == "yes"


def test_positive_or_negative_is_a_finding_only_of_a_relation() -> None:
    """Seen in the chat: "capable to diagnose people's negative, depressive, and anxious
    emotions" read as a "yes" to whether intelligence is linked to depression, its cue the
    adjective "negative". Mutations caught: bare positive(ly)/negative(ly) back among the
    AFFIRMATIVE cues -> "yes" from the emotions sentence; ``affect\\w*`` back -> "yes" from
    "affective disorders"."""
    q = "Is loneliness linked to depression?"
    stems = question_stems(q)
    emotions = "Lonely people described negative, depressive and anxious emotions during chatting."
    assert sentence_stance(emotions, stems).stance is None
    # the same for a cue word's adjective: "affective" names an illness, "affected" an effect
    assert sentence_stance("Lonely people had affective disorders and depression.",
                           stems).stance is None
    assert sentence_stance("Loneliness affected depression.", stems).stance == "yes"
    for finding in ("Loneliness was positively associated with depression.",
                    "Loneliness had a negative effect on depression scores.",
                    "Depression correlated negatively with loneliness."):
        assert sentence_stance(finding, stems).stance == "yes", finding


def test_a_cue_is_near_the_question_only_in_its_own_sentence() -> None:
    """Seen on the starter question "Does methylphenidate improve attention in children with
    ADHD?": "MPH was not associated with growth delays in height, weight, and BMI." counted as a
    null finding near the question through "children with ADHD", the last words of the sentence
    before it, and the classifier turned the abstract's yes into "unclear". Mutation caught:
    ``_near_question`` over the joined sentences -> null_near_question > 0."""
    from grounding.stance import stance_features

    q = "Does methylphenidate improve attention in children with ADHD?"
    stems = question_stems(q)
    first = "MPH improved attention in Korean children with ADHD."
    other = "MPH was not associated with growth delays in height, weight, and BMI."
    apart = stance_features([first, other], q, stems)
    assert apart["null"] > 0
    assert apart["null_near_question"] == 0
    assert apart["affirm_near_question"] > 0
    # within its own sentence the same cue is near the question
    near = stance_features(["Methylphenidate was not associated with attention in children."],
                           q, stems)
    assert near["null_near_question"] > 0


def test_drugs_asked_as_alternatives_are_answered_by_either() -> None:
    """Seen in the phone walk: "If I stay on Zoloft or Prozac while expecting, will my kid end up
    with a lower IQ?" got "No indexed abstract mentions Zoloft" though its sources are on
    antidepressants in pregnancy and the index has fluoxetine: the user asks about either drug.
    Mutation caught: _by_alternative skipped -> not addressed, "Zoloft" the gap."""
    q = "If I stay on Zoloft or Prozac while expecting, will my kid end up with a lower IQ?"
    abstract = "Children exposed to Prozac before birth had the same IQ as unexposed siblings."
    coverage = check_coverage(question_concepts(q), SourcePool.build(q, [abstract], HashEncoder()))
    assert coverage.addressed and coverage.complete == [1], coverage.gaps
    # asked which is better, the "or" is the choice: each drug needs its source
    which = "Is Zoloft or Prozac better for the baby's IQ?"
    choice = check_coverage(question_concepts(which),
                            SourcePool.build(which, [abstract], HashEncoder()))
    assert not choice.complete
    # alternatives that are not drugs each need their source
    outcomes = "Does Prozac in pregnancy lower IQ or motor coordination?"
    apart = check_coverage(question_concepts(outcomes),
                           SourcePool.build(outcomes, [abstract], HashEncoder()))
    assert not apart.complete


def test_a_name_read_as_pieces_is_spelled_like_a_word_sharing_only_its_first_piece() -> None:
    from grounding.concepts import _spelled_alike

    pieces = {"pregabalin": ["pre", "##ga", "##bal", "##in"], "preterm": ["pre", "##ter", "##m"],
              "heatwave": ["heat", "##wave"], "heat wave": ["heat", "wave"],
              "walking": ["walking"], "strolling": ["stroll", "##ing"]}.__getitem__  # fmt: skip
    assert _spelled_alike("pregabalin", "preterm", pieces)
    assert not _spelled_alike("heatwave", "heat wave", pieces)  # the same pieces, spaced
    assert not _spelled_alike("strolling", "walking", pieces)  # near in meaning, not spelling
    assert not _spelled_alike("walking", "walking", pieces)  # a word the model knows whole


def test_the_comparator_is_not_the_outcome_a_finding_must_name() -> None:
    # mutation caught: _side without the _COMPARATOR check -> "placebo" is the outcome, the
    # trial's null finding names no outcome, and the source reads "unclear"
    q = ("For patients with cancer-related fatigue, does low-dose sustained-release "
         "methylphenidate reduce their worst fatigue compared with placebo?")
    assert question_relation(q).sides == (2, 0, 2)
    abstract = (
        "Methods: 148 patients were randomised to methylphenidate or placebo for 6 weeks. "
        "Results: Low-dose methylphenidate did not improve cancer-related fatigue. "
        "Patients taking methylphenidate were able to work more hours."
    )
    assert _stance(q, abstract) == "no"
    # "than" opens the comparator too; the arm before the relation word stays the exposure
    q2 = "Do coil-treated patients perform better on language tests than clip-treated patients?"
    assert question_relation(q2).sides[-1] == 2


def test_a_finding_in_the_middle_of_an_unlabelled_abstract_decides_when_the_end_does_not() -> None:
    """verdict_traps td008: the finding that states the question's relation whole ("Wider
    venular caliber was associated with poorer neuropsychological functioning at midlife") sits
    mid-abstract; the last sentences and the key findings (picked with a prior for the end)
    speak of childhood IQ and of what imaging may be for, and the source read "unclear". A
    sentence elsewhere that names every concept of the question in its relation decides when
    they do not, where an abstract reports results (a results section, or the second half of an
    unlabelled abstract). Mutations caught: ``_whole_statement`` not called -> "unclear"; its
    every-concept check dropped -> "yes" from a partial sentence (below); ``_reports_results``
    always true -> "yes" from the abstract's first sentence."""
    q = ("Is wider retinal venular caliber associated with poorer neuropsychological "
         "functioning at midlife?")
    finding = ("Wider venular caliber was associated with poorer neuropsychological functioning "
               "at midlife, independently of potentially confounding factors.")
    tail = ("This association was not limited to any specific test domain. Moreover, wider "
            "venular caliber was associated with lower childhood IQ tested 25 years earlier. "
            "The findings indicate that retinal imaging may be a useful investigative tool.")
    opening = ("Why do more intelligent people live longer? Retinal imaging may reflect "
               "vascular conditions in the brain. We studied the Dunedin birth cohort. Retinal "
               "imaging was done at age 38.")
    assert _stance(q, f"{opening} {finding} {tail}") == "yes"
    # a middle sentence naming only part of the question (no "midlife") decides nothing
    partial = "Wider venular caliber was associated with poorer neuropsychological functioning."
    assert _stance(q, f"{opening} {partial} {tail}") == "unclear"
    # nor does one in the first half of an unlabelled abstract: background, aims and methods
    assert _stance(q, f"{finding} {opening} {tail}") == "unclear"


def test_what_the_authors_set_out_to_do_is_no_finding() -> None:
    """llm_questions_dev: "Is artificial intelligence being used in dermatology research?" read
    "Yes" from "We tried to analyze the advantages ... with the potential use of AI in our
    practices"; PubMedQA 11867487 from its objective "To examine the attitudes ... to the
    prevention of concussion". What a paper tries, aims or focuses on is no finding. Mutations
    caught: the aims/tried pattern or the infinitive objective dropped from RECOMMENDATION."""
    relation = question_relation("Is artificial intelligence used in dermatology research?")
    for said in ("We tried to analyze the opportunities of artificial intelligence in "
                 "dermatology research.",
                 "This article aims to present artificial intelligence in dermatology research.",
                 "This review focuses on artificial intelligence in dermatology research.",
                 "To examine the use of artificial intelligence in dermatology research."):
        assert relation.no_finding(said), said
    assert not relation.no_finding("Artificial intelligence was used in dermatology research.")


GUINEAFOWL_Q = ("In vulturine guineafowl, does having more young in a group reduce the group's "
                "home-range size?")
GUINEAFOWL_OPENING = ("Group living demands cohesion while groups move through landscapes. "
                      "Larger groups pool information but face costs of coordination. "
                      "We tracked vulturine guineafowl from 21 social groups with GPS tags.")
GUINEAFOWL_FINDING = ("Intermediate-sized groups also had higher reproductive success, but having "
                      "more young in the group reduced home-range size.")
GUINEAFOWL_TAIL = ("Our study suggests an optimal group size for collective movement. Many "
                   "social animals live in stable groups. Being in a group offers benefits such "
                   "as safety from predators. But these benefits come at a cost. Understanding "
                   "how social groups interact with their environment can aid conservation "
                   "planning. Future work should focus on how this changes with the seasons.")


def test_a_reported_finding_decides_without_repeating_the_species_the_abstract_is_about() -> None:
    """verdict_traps td017: the finding ("having more young in the group reduced home-range
    size") stands in the first half of an abstract followed by its plain-language digest, and
    does not repeat "vulturine guineafowl", the question's opening scope, which the abstract
    names elsewhere; it read "unclear". A scope or comparator concept (side 2) may be named
    anywhere in the abstract, and a finding reported in the past tense past the opening
    sentences reports results wherever it stands. Mutations caught: ``scope_in`` ignored in
    ``names_every_concept`` -> "unclear"; ``REPORTED_FINDING`` never matching -> "unclear"."""
    abstract = f"{GUINEAFOWL_OPENING} {GUINEAFOWL_FINDING} {GUINEAFOWL_TAIL}"
    assert _stance(GUINEAFOWL_Q, abstract) == "yes"
    # an abstract about another species: the scope is named nowhere, nothing decides
    other = abstract.replace("vulturine guineafowl", "meerkats")
    assert _stance(GUINEAFOWL_Q, other) == "unclear"
    # in the present tense, the same sentence in the first half is background
    background = GUINEAFOWL_FINDING.replace("reduced", "may reduce").replace("had", "may have")
    assert _stance(GUINEAFOWL_Q, f"{GUINEAFOWL_OPENING} {background} {GUINEAFOWL_TAIL}") \
        == "unclear"
    # nor does an opening sentence decide, whatever its tense
    assert _stance(GUINEAFOWL_Q, f"{GUINEAFOWL_FINDING} {GUINEAFOWL_OPENING} "
                                 f"{GUINEAFOWL_TAIL}") == "unclear"


def test_the_classifier_confirms_the_sentence_that_decided() -> None:
    """td017 again, with the stance classifier: the rules' "yes" came from a finding that is not
    among the answer sentences (the abstract's last three, on future work), and the classifier,
    reading those, found no "yes" and made the source "unclear". It reads what decided.
    Mutation caught: ``_confirmed_yes`` reading the answer sentences always -> "unclear"."""
    abstract = f"{GUINEAFOWL_OPENING} {GUINEAFOWL_FINDING} {GUINEAFOWL_TAIL}"

    def affirmed(features: dict[str, float]) -> dict[str, float]:
        yes = 0.9 if features["affirm_near_question"] > 0 else 0.1
        return {"yes": yes, "no": 0.05, "unclear": 1.0 - yes - 0.05}

    source = SourceText.build(1, abstract)
    read = source_stance(source, GUINEAFOWL_Q, question_stems(GUINEAFOWL_Q), (), affirmed)
    assert read.stance == "yes" and read.sentence == GUINEAFOWL_FINDING, read


HARMS_Q = "Does methylphenidate cause side effects in children with ADHD?"
TREATED = "Children with ADHD were treated with methylphenidate for one year. "


def test_side_effects_are_one_concept_that_a_finding_on_adverse_events_decides() -> None:
    """The walk's "any long-term side effects?" named no concept: "side" is a stop word and
    "effects" a frame word. Harms asked in one of their names are one concept, which a
    sentence states in any of them. Mutations caught: no harms run in
    grounding.concepts._runs -> no "side effects" concept; the relation's harms concept
    built from "side effects" stems (not grounding.harms.STEMS) -> "unclear" for both."""
    concepts = question_concepts("Do statins cause adverse events or side-effects in the elderly?")
    assert [(c.text, c.essential) for c in concepts if c.harms] == [
        ("adverse events", ("adverse events",))], concepts
    assert _stance(HARMS_Q, TREATED + "Methylphenidate was associated with an increased risk "
                   "of adverse events, mostly insomnia and decreased appetite.") == "yes"
    assert _stance(HARMS_Q, TREATED + "Methylphenidate did not increase the risk of adverse "
                   "events compared with placebo.") == "no"
    # a finding on what the drug does for the condition says nothing of its harms
    assert _stance(HARMS_Q, TREATED + "Methylphenidate improved attention compared with "
                   "placebo.") == "unclear"


def test_a_change_of_the_outcome_the_other_way_than_asked_says_no() -> None:
    """PubMedQA "Do healthier lifestyles lead to less utilization of healthcare resources?"
    (gold no) got "Yes (2 of 2 studies)" from "Healthy lifestyles lead to an increase in the
    utilization of preventive health services": "lead to" read yes, though the finding changes
    the outcome the other way. Mutations caught: ``_against_the_question`` not called by
    ``relation_stance`` -> "yes"; the direction test inverted (same direction read as
    opposite) -> the decrease reads "no"; quantity words not passed over -> "increased risk
    of mortality" changes "risk", not mortality, and reads "yes"; the thing changed taken as
    any later word -> "increased survival after stroke" changes stroke and reads "no";
    ``Relation.for_source`` dropping the direction -> the source reads "yes"."""
    q = "Do healthier lifestyles lead to less utilization of healthcare resources?"
    relation = question_relation(q)
    stems = question_stems(q)
    more = ("Healthy lifestyles lead to an increase in the utilization of preventive health "
            "services.")
    less = "Healthy lifestyles lead to a decrease in the utilization of health services."
    assert relation_stance(more, relation, stems).stance == "no"
    assert relation_stance(less, relation, stems).stance == "yes"
    # as a source is read: the relation narrowed to the abstract's words keeps the direction
    assert _stance(q, f"We followed 2,000 adults for ten years. {more}") == "no"
    q = "Does aspirin reduce mortality after stroke?"
    relation = question_relation(q)
    stems = question_stems(q)
    worse = "Aspirin was associated with an increased risk of mortality after stroke."
    assert relation_stance(worse, relation, stems).stance == "no"
    survival = "Aspirin increased survival after stroke."
    assert relation_stance(survival, relation, stems).stance == "yes"
    # a question asking no direction of its outcome is read as before
    q = "Is aspirin associated with mortality after stroke?"
    assert relation_stance(worse, question_relation(q), question_stems(q)).stance == "yes"


def test_at_least_as_much_and_not_confined_to_are_findings_not_null_results() -> None:
    """PubMedQA (gold yes): "The risk ratio for CVD mortality associated with a low serum
    chloride level was comparable to or higher than those observed for well-established CVD risk
    factors" read "no" ("comparable ... to", a null finding's wording) and "... a protective
    effect of breast-feeding ... that is not confined to the period of breast-feeding but
    continues ..." read as negated. Mutations caught: "confined" out of
    ``AFFIRMING_NEGATIONS`` -> the breast-feeding sentence reads "no"; the "or
    higher than" pattern out of it -> the chloride sentence reads "no"."""
    chloride = ("The risk ratio for CVD mortality associated with a low serum chloride level was "
                "comparable to or higher than those observed for well-established CVD risk "
                "factors.")
    assert sentence_stance(chloride, set()).stance == "yes"
    q = "Is the breast best for children with a family history of atopy?"
    relation, stems = question_relation(q), question_stems(q)
    breast = ("Our results show a protective effect of breast-feeding among children with a "
              "family history of atopy that is not confined to the period of breast-feeding.")
    assert sentence_stance(breast, stems).stance == "yes"
    assert relation_stance(breast, relation, stems).stance == "yes"
    # a plain sameness is still a null finding
    assert sentence_stance("Outcomes were comparable to those of controls.", set()).stance == "no"


def test_not_good_enough_says_no_and_what_is_left_to_study_decides_nothing() -> None:
    """PubMedQA (gold no): "Do risk calculators accurately predict surgical site occurrences?"
    got "Yes" though its source says "All five existing predictive models have limited ability
    to risk-stratify patients ..."; "Can bedside assessment reliably exclude aspiration
    following acute stroke?" got "Yes" from "The relative importance of aspiration and bedside
    assessment in predicting complications and outcome needs to be studied", beside "Bedside
    assessment of swallowing lacks the necessary sensitivity ...". Mutations caught: the
    "limited ability to" pattern out of ``NULL_FINDING`` -> "yes"; the "lacks the necessary
    sensitivity" one out -> no stance; the "needs to be studied" pattern out of
    ``RECOMMENDATION`` -> the agenda sentence states a finding."""
    models = ("All five existing predictive models have limited ability to risk-stratify "
              "patients and accurately assess risk of SSO.")
    assert sentence_stance(models, set()).stance == "no"
    bedside = ("Bedside assessment of swallowing lacks the necessary sensitivity to be used as a "
               "screening instrument in acute stroke.")
    assert sentence_stance(bedside, set()).stance == "no"
    q = "Can bedside assessment reliably exclude aspiration following acute stroke?"
    agenda = ("The relative importance of aspiration and bedside assessment in predicting "
              "complications and outcome needs to be studied.")
    assert question_relation(q).no_finding(agenda)
    # a role found is still a finding, and a finding is not what is left to study
    assert sentence_stance("Bedside assessment had a major role in detecting aspiration.",
                           set()).stance != "no"
    assert not question_relation(q).no_finding("Bedside assessment predicted aspiration.")


def test_a_test_is_judged_by_its_figures_and_a_method_decides_nothing() -> None:
    """Stop 72: once "Can bedside assessment reliably exclude aspiration following acute
    stroke?" (gold no) is parted at its verb, two sentences naming both sides read "yes": one
    reporting the test's figures ("a sensitivity of 47%, ... positive predictive value (PPV) of
    50%": "predictive" was taken for a finding) and a method ("Multiple logistic regression was
    used to identify ... for predicting the presence of aspiration"). A measure's name is no
    finding; the figures answer by their size (one below 60%: no; all 80% or more: yes; a
    confidence interval's "95%" is no figure); what a study did is not what it found.
    Mutations caught: ``ACCURACY_MEASURE`` not removed before the yes cues -> the 47% sentence
    "yes"; ``accuracy_stance`` not consulted -> no stance from the figures; the CI guard
    dropped -> a confidence interval's "95%" read as the sensitivity; ``METHOD_STATEMENT`` out
    of ``no_finding`` -> the method states a finding; "positive" not allowed in
    ``POOR_MEASURE`` -> "a poor positive predictive value" takes no side."""
    figures = ("Bedside assessment by a speech and language therapist gave a sensitivity of 47%, "
               "a specificity of 86%, positive predictive value (PPV) of 50% and a negative "
               "predictive value (NPV) of 85% for the presence of aspiration.")
    assert sentence_stance(figures, set()).stance == "no"
    twin = ("The positive predictive value of cephalic presentation of twin A as determined by "
            "ultrasound for the persistence of cephalic presentation at delivery was 95%.")
    assert sentence_stance(twin, set()).stance == "yes"
    assert sentence_stance("The sensitivity was 92% (95% CI 80-97%) and the specificity 88%.",
                           set()).stance == "yes"
    assert sentence_stance("The area under the curve was 0.71 and the specificity 85%.",
                           set()).stance is None  # between the bars
    assert sentence_stance("Sensitivity was assessed in all patients, and 45% had the disease.",
                           set()).stance is None  # a share of patients, not the test's figure
    assert sentence_stance("Sensitivity (95% confidence interval) was estimated per reader.",
                           set()).stance is None
    # the figures evaluated take a side, and a prediction found is still a finding
    assert sentence_stance("The score had a poor positive predictive value for delirium.",
                           set()).stance == "no"
    assert sentence_stance("The score predicted delirium with a positive predictive value of "
                           "40%.", set()).stance == "yes"
    q = "Can bedside assessment reliably exclude aspiration following acute stroke?"
    method = ("Multiple logistic regression was used to identify the optimum elements of the "
              "bedside assessments for predicting the presence of aspiration.")
    assert question_relation(q).no_finding(method)
    assert not question_relation(q).no_finding(
        "Bedside assessment was used more often in older patients.")


def test_the_study_title_names_the_outcome_the_conclusion_changes() -> None:
    """"Do healthier lifestyles mean people use less healthcare?" got "Yes (3 of 3 studies)"
    from a study titled "Do healthier lifestyles lead to less utilization of healthcare
    resources?" concluding "Healthy lifestyles lead to an increase in the utilization of
    preventive health services": the user's outcome word ("healthcare") is not the one the
    conclusion changes ("utilization"), so the other direction went unseen. The title asks the
    user's question and names the outcome in the abstract's words. Mutations caught:
    ``with_outcome_named_as`` not called by ``source_stance`` -> "yes"; it keeping the user's
    outcome alone -> "yes"."""
    q = "Do healthier lifestyles mean people use less healthcare?"
    title = "Do healthier lifestyles lead to less utilization of healthcare resources?"
    abstract = ("BACKGROUND: The question is whether health behaviors have an impact on "
                "healthcare use. RESULTS: Health behaviors were correlated with healthcare "
                "utilization. CONCLUSIONS: Healthy lifestyles lead to an increase in the "
                "utilization of preventive health services.")
    assert _stance(q, abstract, title) == "no"
    fewer = abstract.replace("an increase in", "a decrease in")
    assert _stance(q, fewer, title) == "yes"


def test_a_conclusion_answers_the_users_question_only_when_the_study_asks_it() -> None:
    """PubMedQA (gold yes): "Does treatment duration affect outcome after radiotherapy for
    prostate cancer?" was answered "No (1 of 2 studies): Age should not be a barrier to
    treatment in this group [3]": a labelled one-clause conclusion was read whole as the
    answer, though that study's own question (its title) is another. Mutation caught:
    ``_candidate_stance`` reading such a conclusion whole without ``asks_it`` -> "no"."""
    q = "Does treatment duration affect outcome after radiotherapy for prostate cancer?"
    abstract = ("BACKGROUND: We modelled life expectancy after radiotherapy for prostate cancer "
                "in older men. CONCLUSIONS: Age should not be a barrier to treatment in this "
                "group.")
    title = "Life expectancy of older men treated for prostate cancer"
    assert _stance(q, abstract, title) != "no"
    # the study that asks the question is still answered by its conclusion
    asks = "Does treatment duration affect outcome after radiotherapy for prostate cancer?"
    own = abstract.replace("Age should not be a barrier to treatment in this group",
                           "Treatment duration did not affect outcome")
    assert _stance(q, own, asks) == "no"


def test_an_evaluation_denied_by_its_negative_form_and_not_enough_for_the_task_say_no() -> None:
    """PubMedQA (gold no): "Are UK radiologists satisfied with the training and support received
    in suspected child abuse?" got "Yes" from "The survey shows significant dissatisfaction
    amongst consultant radiologists ..."; "Sub-classification of low-grade cerebellar
    astrocytoma: is it clinically meaningful?" from "... insufficient for predicting prognosis";
    "Is late-night salivary cortisol a better screening test ...?" from "... has a poor
    specificity for cortisol excess". Mutations caught: ``_denied_evaluation`` returning "" ->
    the dissatisfaction sentence reads "yes"; ``NOT_ENOUGH`` or ``POOR_MEASURE`` matching
    nothing -> "yes"; ``_rule_only_null`` not passing over a measure the question names -> "low
    maternal sensitivity was related to ..." reads "no"; the prefixed form of an exposure
    counted as a denial -> "physical inactivity was associated with ..." reads "no";
    ``_stated_evaluation`` returning "" -> "radiologists were satisfied" reads no stance;
    ``_EVALUATION_NOUN`` matching nothing -> "attitudes towards patient safety were surveyed"
    reads "yes"."""
    q = "Are UK radiologists satisfied with the training and support received?"
    stems = question_stems(q)
    survey = ("The survey shows significant dissatisfaction amongst consultant radiologists with "
              "the current service.")
    assert sentence_stance(survey, stems).stance == "no"
    assert sentence_stance("Most radiologists were satisfied with the training.",
                           stems).stance == "yes"
    # naming the evaluation is not stating it (PubMedQA: "Can teaching medical students to
    # investigate medication errors change their attitudes towards patient safety?" lost its
    # right "Yes" to a "safety" cue the classifier did not confirm)
    assert sentence_stance("Satisfaction was measured with a questionnaire.", stems).stance is None
    safety = question_stems("Can teaching change attitudes towards patient safety?")
    assert sentence_stance("Attitudes towards patient safety were surveyed.",
                           safety).stance is None
    grading = ("Interobserver variability makes histological sub-classification insufficient for "
               "predicting prognosis.")
    assert sentence_stance(grading, set()).stance == "no"
    cortisol = ("Late-night salivary cortisol has a poor specificity for cortisol excess in obese "
                "patients.")
    assert sentence_stance(cortisol, set()).stance == "no"
    # a measure the question names is a trait there, not a test's failing (auto-labelled title,
    # gold yes)
    q = ("Is maternal sensitivity in mothers with mild intellectual disabilities related to "
         "experiences of maltreatment?")
    trait = ("Among mothers with intellectual disabilities, low sensitivity was related to "
             "maternal experiences of maltreatment.")
    assert sentence_stance(trait, question_stems(q)).stance == "yes"
    q = "Is physical activity associated with dementia?"
    inactive = "Physical inactivity was associated with dementia in older adults."
    assert sentence_stance(inactive, question_stems(q)).stance == "yes"


def test_explained_by_another_factor_says_no_to_an_independent_relation() -> None:
    """PubMedQA (gold no): "Is hypoalbuminemia an independent prognostic factor in patients with
    gastric cancer?" got "Yes" beside "... the relation between hypoalbuminemia and poor
    survival is secondary to that of the systemic inflammatory response". Mutations caught:
    ``Relation.explained_by_another`` not consulted -> "yes"; ``ASKS_INDEPENDENCE`` matching
    nothing -> "yes"; the negation left in ``EXPLAINED_BY_ANOTHER`` -> "not explained by"
    reads "no"; ``_explained_elsewhere`` not called by ``source_stance`` -> the source reads
    "yes" from its association sentence; the plain answer sentences passed to ``_settled``
    after it (``_says_both`` consulted) -> "unclear"."""
    q = "Is hypoalbuminemia an independent prognostic factor in patients with gastric cancer?"
    relation, stems = question_relation(q), question_stems(q)
    assert relation.asks_independence
    secondary = ("The prognostic value of hypoalbuminemia for poor survival in gastric cancer "
                 "is secondary to that of the systemic inflammatory response.")
    assert relation_stance(secondary, relation, stems).stance == "no"
    held = ("Hypoalbuminemia was associated with poor survival in gastric cancer, and the "
            "association was not explained by the systemic inflammatory response.")
    assert relation_stance(held, relation, stems).stance == "yes"
    # asked without "independent", the finding is read as before
    q2 = "Is hypoalbuminemia a prognostic factor in patients with gastric cancer?"
    assert not question_relation(q2).explained_by_another(secondary)
    # as a source is read: the association found, then explained by another factor
    abstract = ("CONCLUSIONS: Low albumin concentrations are associated with poorer survival in "
                "patients with gastric cancer. However, the strength of this relation with "
                "survival is dependent on the presence of a systemic inflammatory response. "
                "Therefore, it appears that the relation between hypoalbuminemia and poor "
                "survival is secondary to that of the systemic inflammatory response.")
    assert _stance(q, abstract, title=q) == "no"
    assert _stance(q2, abstract, title=q2) != "no"


def test_a_group_named_by_what_it_lacks_is_covered_by_the_thing_lacked() -> None:
    """verdict_heldout vh018 (gold no): "Do preschool children whose mothers took lithium for a
    mood disorder during pregnancy end up with lower full-scale IQ than unexposed children?"
    took no stance: its gold abstract compares "mothers' prenatal exposure to lithium" with
    controls and never writes "unexposed", the essential word of the comparison's other arm.
    Mutations caught: ``_by_what_it_lacks`` not called by ``check_coverage`` -> "unexposed"
    missing, the source not complete; its base compared whole ("exposed" against
    "exposure") -> missing."""
    q = ("Do children whose mothers took lithium during pregnancy have lower IQ than unexposed "
         "children?")
    abstract = ("The cohort showed no significant association between mothers' prenatal "
                "exposure to lithium and their offspring's IQ.")
    pool = SourcePool.build(q, [abstract], HashEncoder())
    concepts = question_concepts(q)
    assert "unexposed" in {w for c in concepts for w in c.essential}
    coverage = check_coverage(concepts, pool)
    assert coverage.complete == [1], coverage.per_source
    # a source naming neither the thing lacked nor the group does not cover it
    other = SourcePool.build(q, ["Lithium in pregnancy was studied in a registry of mothers."],
                             HashEncoder())
    assert check_coverage(concepts, other).per_source[0]["unexposed"] is False


def test_an_unlikely_explanation_and_not_dependent_on_deny_and_a_role_found_affirms() -> None:
    """PubMedQA: "Does gestational age misclassification explain the difference in birthweights
    for Australian aborigines and whites?" (gold no) got "Yes" from a hedged implication beside
    "Gestational age misclassification is an unlikely explanation for the reported divergence";
    "Does stress increase imitation of drinking behavior?" (gold no) and "Is trabecular bone
    related to primary stability of miniscrews?" (gold yes) took no stance though their
    conclusions say "... not dependent on individual stress levels" and "Cancellous bone plays
    an important role in primary stability". Mutations caught: ``DENIED_RELATION`` matching
    nothing -> "yes" / "yes"; the role pattern out of ``FOUND_RELATION`` -> no stance."""
    assert sentence_stance("Gestational age misclassification is an unlikely explanation for "
                           "the reported divergence in birth-weights.", set()).stance == "no"
    assert sentence_stance("Imitation of alcohol consumption is a robust phenomenon not "
                           "dependent on individual stress levels.", set()).stance == "no"
    assert sentence_stance("Cancellous bone plays an important role in primary stability of "
                           "mini-implants.", set()).stance == "yes"
    # a role denied or belittled is still a null finding
    assert sentence_stance("Cancellous bone plays no role in primary stability.",
                           set()).stance == "no"
    assert sentence_stance("Cancellous bone has a limited role in primary stability.",
                           set()).stance == "no"



def test_earlier_work_no_other_finding_and_a_negated_explanation() -> None:
    """Stop 73, from the contradictions of the auto-labelled corpus set (titles as questions,
    answered by the abstract without its title). "Does haploinsufficiency of HDAC4 cause
    intellectual disability in all affected individuals?" (title: no) got "Yes" from the
    background "... has been reported to result in ..."; "Is breastfeeding associated with child
    intelligence even net of parental IQ?" (yes) got "No" from "some previous studies may have
    failed to uncover the effect"; "Does dual n-back training increase the capacity of the
    focus of attention?" (yes) got "No" from "No other differential improvements were
    observed, suggesting that increases in the capacity ... underlie the benefits"; "Is ADHD an
    independent risk factor for lower resilience?" (yes) read "... which cannot be explained by
    depression, ..." as explained by another factor. Mutations caught: ``PRIOR_WORK`` out of
    ``no_finding`` -> the background and the earlier studies state a finding; "no other" out
    of ``NON_FINDING_NEGATIONS`` -> "no"; ``explained_by_another`` reading the text before
    ``AFFIRMING_NEGATIONS`` are removed -> the negated explanation is "explained by"."""
    hdac4 = question_relation("Does haploinsufficiency of HDAC4 cause intellectual disability?")
    assert hdac4.no_finding(
        "Haploinsufficiency of HDAC4 gene has been reported to result in brachydactyly-mental "
        "retardation syndrome, a condition with significant intellectual impairment.")
    breast = question_relation("Is breastfeeding associated with child intelligence?")
    assert breast.no_finding(
        "Further analyses suggest that some previous studies may have failed to uncover the "
        "effect of breastfeeding on child intelligence because of their reliance on one IQ test.")
    # this study's own finding, in the past or the perfect tense, is still a finding
    assert not breast.no_finding("Breastfeeding was associated with higher child intelligence.")
    assert not breast.no_finding("We have shown that breastfeeding is associated with child "
                                 "intelligence.")
    assert not breast.no_finding("Breastfeeding has been associated with child intelligence in "
                                 "this cohort.")
    other = ("No other differential improvements were observed, suggesting that increases in "
             "the capacity of the focus of attention underlie the benefits of adaptive dual "
             "n-back training.")
    stems = question_stems(
        "Does dual n-back training increase the capacity of the focus of attention?")
    assert sentence_stance(other, stems).stance != "no"
    assert sentence_stance("No differential improvements were observed.", set()).stance == "no"
    adhd = question_relation(
        "Is attention deficit hyperactivity disorder an independent risk factor for lower "
        "resilience in adolescents?")
    assert not adhd.explained_by_another(
        "ADHD seems to be associated with lower resilience, which cannot be explained by "
        "depression, anxiety, intelligence level, age, or socioeconomic status.")
    assert adhd.explained_by_another(
        "The association of ADHD with lower resilience was explained by depression.")


def test_a_need_pointed_out_is_no_finding_a_need_changed_is() -> None:
    """Stop 73: "This study demonstrates the need to further educate physicians to recognize
    obesity and overweight ..." read "yes" to PubMedQA's "Do overweight children necessarily
    make overweight adults?" (gold no) once its source addressed the question. What a study
    says should be done is no finding; a need it changed is one. Mutation caught: the
    need pattern out of ``RECOMMENDATION`` -> the first two sentences state a finding."""
    relation = question_relation("Do overweight children make overweight adults?")
    assert relation.no_finding(
        "This study demonstrates the need to further educate physicians to recognize obesity "
        "and overweight so that they can counsel children and their families.")
    assert relation.no_finding("Our findings highlight the urgent need for screening.")
    assert not relation.no_finding(
        "Early surfactant reduced the need for mechanical ventilation.")
    assert not relation.no_finding("Overweight children became overweight adults.")
