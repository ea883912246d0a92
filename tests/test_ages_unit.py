"""Which age group a question asks about and which one a source studied (ingest.ages), and
the ranking that follows (retrievers.asked_age)."""

from __future__ import annotations

from typing import Any

from ingest.ages import other_age_group, studies_other_age_group
from retrievers.asked_age import asked_age_first
from tests.fake_retriever import make_doc

ADULTS_Q = "stimulant medications effective for ADHD in adults?"
KIDS_Q = "Are stimulant medications effective for ADHD in children?"


def test_a_source_naming_only_children_did_not_study_the_adults_asked_about() -> None:
    abstract = "Among 146 children not medicated before the visit, stimulants were started."
    assert studies_other_age_group("Diagnosis of ADHD by developmental pediatricians", abstract,
                                   ADULTS_Q)  # fmt: skip
    # the abstract alone scopes it: the title names no age
    assert not other_age_group("Diagnosis of ADHD by developmental pediatricians", ADULTS_Q)


def test_a_source_naming_both_groups_or_a_question_naming_none_is_not_scoped_away() -> None:
    adult_study = "Adult ADHD often persists from childhood; adults were given methylphenidate."
    both = "Children and adults with ADHD were given methylphenidate."
    assert not studies_other_age_group("Methylphenidate in ADHD", both, ADULTS_Q)
    assert not studies_other_age_group("Methylphenidate in ADHD", both, KIDS_Q)
    # "childhood" is when, not who: the adults' study is about adults
    assert not studies_other_age_group("Methylphenidate in ADHD", adult_study, ADULTS_Q)
    assert studies_other_age_group("Methylphenidate in ADHD", adult_study, KIDS_Q)
    # a title naming children scopes the article, whatever its background says of adults
    opioids = "Opioids are prescribed to adults and children; we reviewed pediatric studies."
    assert studies_other_age_group("Opioid use in children: a review", opioids, ADULTS_Q)
    assert not studies_other_age_group("Opioid use: a review", opioids, ADULTS_Q)
    # "adult children" born during the poisoning: grown people, named as such
    niigata = ("We studied adult subjects exposed perinatally: the subjects were their adult "
               "children, born during the epidemic; some mothers breast fed their infants.")
    assert not studies_other_age_group("Methyl mercury in Niigata: adult outcomes", niigata,
                                       "mercury in the womb: deficits as adults?")  # fmt: skip
    bone_age = "Bone age predicts adult height; pubertal individuals were x-rayed."
    assert not studies_other_age_group("Bone age during puberty", bone_age, "bone age in teens?")
    lothian = "Intelligence measured in childhood predicted cognitive decline at age 79."
    assert not studies_other_age_group("IQ and decline", lothian, "Does IQ predict decline in "
                                       "the elderly?")  # fmt: skip
    children = "Stimulants helped children with ADHD."
    assert not studies_other_age_group("Stimulants in ADHD", children, "Do stimulants help ADHD?")
    # asked about both groups, neither is another group
    assert not studies_other_age_group("Stimulants in ADHD", children,
                                       "Do stimulants help children and adults with ADHD?")
    # the adults' study is another group for a question about children
    assert studies_other_age_group("Methylphenidate in adult ADHD", adult_study, KIDS_Q)
    # a title's period of life or measure scopes nothing: the Lothian cohort studied old people
    assert not studies_other_age_group("Childhood IQ and adult mortality", "In 1,091 people "
                                       "tested at age 11 ...", "Does IQ predict death in adults?")


def _fused(*rows: tuple[str, str, float]) -> list[Any]:
    return [make_doc(pmid, "", text, rrf_score=score) for pmid, text, score in rows]


def test_a_search_naming_adults_ranks_the_childrens_studies_lower() -> None:
    docs = _fused(("1", "Stimulants helped 80 children with ADHD.", 0.9),
                  ("2", "Adults with ADHD took methylphenidate.", 0.5),
                  ("3", "ADHD symptoms were rated by teachers.", 0.4))  # fmt: skip
    pmids = lambda ds: [d.metadata["pmid"] for d in ds]  # noqa: E731
    assert pmids(asked_age_first(docs, ADULTS_Q)) == ["2", "3", "1"]
    # naming no group leaves the ranking as it is; naming the children moves the adults' study
    assert pmids(asked_age_first(docs, "Do stimulants help ADHD?")) == ["1", "2", "3"]
    assert pmids(asked_age_first(docs, KIDS_Q)) == ["1", "3", "2"]
