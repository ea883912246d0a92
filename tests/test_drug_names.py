"""Issue #35: a drug's brand name ("Zoloft") is another name of its generic name ("sertraline"),
read from the pinned drug-named-entity-recognition lexicon (indexing/drug_names.py) without
trusting its pickle: the file's hash is checked and only plain data can be built."""

from __future__ import annotations

import bz2
import hashlib
import os
import pickle
from pathlib import Path

import pytest

from grounding.concepts import check_coverage, question_concepts
from grounding.sources import SourcePool
from indexing.aliases import AliasTable
from indexing.drug_names import data_path, drug_names, read_drug_names
from tests.test_grounding_unit import HashEncoder
from tests.test_judgement_unit import Vocabulary


class _WithDrugs(Vocabulary):
    """A corpus of the given texts whose only other names are the drug lexicon's."""

    table = AliasTable.build([], drugs=drug_names())

    def alias_stems(self, name: str) -> list[frozenset[str]]:
        return self.table.stems_of(name)


def _lexicon() -> Path:
    path = data_path()
    if path is None or not path.is_file():
        pytest.fail("drug-named-entity-recognition is not installed (requirements.txt)")
    return path


def test_the_pinned_lexicon_gives_brand_names_their_generic_names() -> None:
    # the real file, read through the hash check and the plain-data unpickler
    names = read_drug_names(_lexicon())
    assert names.generic_of("Zoloft") == ["sertraline"]
    assert names.generic_of("namenda") == ["memantine"]
    assert names.generic_of("Precedex") == ["dexmedetomidine"]
    assert names.generic_of("sertraline") == []  # a generic name has no other generic name
    assert names.generic_of("memory") == []  # a word that names no drug


def test_a_lexicon_file_other_than_the_pinned_one_is_refused(tmp_path: Path) -> None:
    # mutation caught: the SHA-256 check dropped -> this plain-data file is read and used
    other = tmp_path / "drug_ner_dictionary.pkl.bz2"
    other.write_bytes(bz2.compress(pickle.dumps(
        {"drug_variant_to_canonical": {"zoloft": ["chalk"]}})))
    with pytest.raises(ValueError, match="not the pinned release"):
        read_drug_names(other)


def test_a_pickle_that_names_any_class_or_function_is_never_run(tmp_path: Path) -> None:
    # mutation caught: pickle.loads instead of the plain-data unpickler -> os.getcwd is called
    # and the table is built; here the hash matches, so only the unpickler stands in the way
    class Calls:
        def __reduce__(self) -> tuple[object, tuple[()]]:
            return (os.getcwd, ())

    hostile = bz2.compress(pickle.dumps({"drug_variant_to_canonical": {"zoloft": [Calls()]}}))
    path = tmp_path / "drug_ner_dictionary.pkl.bz2"
    path.write_bytes(hostile)
    with pytest.raises(ValueError, match="plain data"):
        read_drug_names(path, sha256=hashlib.sha256(hostile).hexdigest())


def test_a_source_naming_the_generic_drug_addresses_a_brand_name_question() -> None:
    # mutation caught: AliasTable.of without the drug names -> "zoloft" is missing, the
    # question is not addressed (what paraphrase_dev's brand-name questions met)
    q = "If I stay on Zoloft while expecting, will my kid end up with a lower IQ?"
    abstract = ("Children prenatally exposed to sertraline did not differ in full scale IQ from "
                "their unexposed siblings.")
    pool = SourcePool.build(q, [abstract], HashEncoder())
    coverage = check_coverage(question_concepts(q, _WithDrugs([abstract])), pool)
    assert coverage.addressed and coverage.addressing == [1], coverage.gaps


def test_a_brand_name_is_searched_with_its_generic_name() -> None:
    from indexing.drug_names import with_generic_names

    assert (with_generic_names("Does Zofran added to Risperdal lift mood?")
            == "Does Zofran (ondansetron) added to Risperdal (risperidone) lift mood?")
    same = ["Does sertraline (Zoloft) lower IQ?", "Does focus training help?",
            "Can vitamin D pills make kids smarter?"]  # named already; common words; no brand
    assert [with_generic_names(q) for q in same] == same


def test_the_real_search_runs_the_generic_name(small_retriever: object) -> None:
    # mutation caught: HybridRetriever._plan without with_generic_names -> the engines search
    # the user's words alone; the question grounding reads stays as asked (a generic name added
    # there became a concept every source had to name: verdict_dev's LHRH question abstained)
    question = "Does taking Ritalin help children with ADHD pay attention?"
    found = small_retriever.retrieve(question)  # type: ignore[attr-defined]
    assert "Ritalin (methylphenidate)" in found.searched
    assert found.query == question and found.documents


def test_an_acid_is_also_named_by_its_salt() -> None:
    # mutation caught: generic_of without the "-ic acid" -> "-ate" name (abstracts on Depakote
    # write "valproate": fetal valproate syndrome)
    assert drug_names().generic_of("Depakote") == ["valproic acid", "valproate"]


def test_a_drug_found_by_its_generic_name_stands_for_its_whole_concept() -> None:
    # mutation caught: _by_alias marking only the drug's own word -> "nausea" and "pill" are
    # missing and the trial of ondansetron does not address the question
    q = "Does the anti-nausea pill Zofran lift low mood in schizophrenia?"
    abstract = ("Ondansetron added to risperidone did not improve depressive symptoms or low "
                "mood in patients with schizophrenia.")
    pool = SourcePool.build(q, [abstract], HashEncoder())
    coverage = check_coverage(question_concepts(q, _WithDrugs([abstract])), pool)
    assert coverage.addressed, coverage.gaps
