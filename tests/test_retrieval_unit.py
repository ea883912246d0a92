"""Fast unit tests of the retrieval pieces: RRF, the threshold patch, per-PMID fusion, filters."""

from __future__ import annotations

import asyncio
import datetime as dt

import numpy as np
import pytest
from langchain_core.documents import Document
from rank_bm25 import BM25Okapi

from app.config import load_config
from indexing.bm25 import BM25Index
from indexing.phrases import PhraseIndex
from indexing.tokenize import tokenize, word_sequence
from retrievers.filters import Filters, parse_filters
from retrievers.fusion import reciprocal_rank_fusion
from retrievers.hybrid import HybridRetriever
from retrievers.keywords import rare_keywords
from tests.fake_retriever import FakeBackendBase


def doc(pmid: str, chunk: int = 0, score: float = 1.0, year: int = 2020) -> Document:
    return Document(
        page_content=f"passage {pmid}-{chunk}",
        metadata={
            "pmid": pmid,
            "chunk_index": chunk,
            "score": score,
            "year": year,
            "title": f"title {pmid}",
            "authors": ["Ian Deary"],
        },
        id=f"{pmid}-{chunk}",
    )


class FakeBackend(FakeBackendBase):
    """Returns fixed ranked lists; records the filters it was asked to apply."""

    def __init__(self, bm25: list[Document], dense: list[Document]) -> None:
        self.bm25, self.dense, self.seen_filters = bm25, dense, []

    size = 100
    manifest = None

    def bm25_search(self, query, k, filters):
        self.seen_filters.append(filters)
        return [d for d in self.bm25 if filters.matches(d.metadata)][:k]

    def dense_search(self, query, k, threshold, filters):
        self.seen_filters.append(filters)
        return [
            d
            for d in self.dense
            if d.metadata["score"] >= threshold and filters.matches(d.metadata)
        ][:k]


def make(bm25, dense, **retrieval):
    cfg = load_config(overrides={"retrieval": {"k": 5, "topk_rrf": 3, **retrieval}})
    backend = FakeBackend(bm25, dense)
    return HybridRetriever.from_backend(backend, cfg), backend


def test_rrf_matches_a_hand_computed_example() -> None:
    a, b, c = doc("A"), doc("B"), doc("C")
    fused = reciprocal_rank_fusion(
        [[a, b, c], [c, a]], c=60, weights=[0.5, 0.5], names=["bm25", "dense"]
    )
    expected = {"A": 0.5 / 61 + 0.5 / 62, "B": 0.5 / 62, "C": 0.5 / 63 + 0.5 / 61}
    assert [d.metadata["pmid"] for d in fused] == ["A", "C", "B"]
    for d in fused:
        assert d.metadata["rrf_score"] == pytest.approx(expected[d.metadata["pmid"]])
    assert fused[1].metadata["ranks"] == {"bm25": 3, "dense": 1}
    assert fused[2].metadata["ranks"] == {"bm25": 2, "dense": None}


def test_fusion_counts_an_article_once_and_returns_its_best_chunk() -> None:
    lists = [[doc("A", 0), doc("A", 1), doc("B", 0)], [doc("A", 2), doc("B", 1)]]
    fused = reciprocal_rank_fusion(lists, c=60, names=["bm25", "dense"])
    assert [d.metadata["pmid"] for d in fused] == ["A", "B"]
    # A ranks 1 in both lists (its chunks 1 and 2 do not count again); B ranks 2 in both.
    assert fused[0].metadata["rrf_score"] == pytest.approx(2 / 61)
    assert fused[0].page_content == "passage A-0"


def test_threshold_cut_drops_low_similarity_hits() -> None:
    retriever, _ = make([doc("A")], [doc("A", score=0.9), doc("B", score=0.1)], score_threshold=0.5)
    out = retriever.retrieve("q")
    assert [d.metadata["pmid"] for d in out.documents] == ["A"]


def test_no_dense_hit_means_no_result_even_with_bm25_hits() -> None:
    retriever, _ = make([doc("A"), doc("B")], [doc("C", score=0.1)], score_threshold=0.5)
    assert retriever.retrieve("who won the world cup").empty


def test_bm25_contributes_no_more_articles_than_faiss_when_faiss_is_short() -> None:
    bm25 = [doc(p) for p in "BCDEF"]
    retriever, _ = make(bm25, [doc("A", score=0.9)], score_threshold=0.5, topk_rrf=5)
    pmids = [d.metadata["pmid"] for d in retriever.retrieve("q").documents]
    assert sorted(pmids) == ["A", "B"]  # FAISS had 1 hit: BM25 adds at most 1


def test_full_faiss_list_leaves_bm25_uncapped() -> None:
    dense = [doc(p, score=0.9) for p in "ABCDE"]
    retriever, _ = make([doc(p) for p in "FGHIJ"], dense, topk_rrf=10)
    assert len(retriever.retrieve("q").documents) == 10


def test_metadata_carries_scores_ranks_and_confidence() -> None:
    retriever, _ = make(
        [doc("A", score=12.0)], [doc("A", score=0.7)] + [doc(p, score=0.6) for p in "BCDE"]
    )
    top = retriever.retrieve("q").documents[0]
    assert top.metadata["ranks"] == {"bm25": 1, "dense": 1}
    assert top.metadata["scores"] == {"bm25": 12.0, "dense": 0.7}
    assert 0.0 <= top.metadata["confidence"] <= 1.0
    assert top.metadata["confidence"] > retriever.retrieve("q").documents[-1].metadata["confidence"]


def test_async_and_sync_paths_give_identical_results() -> None:
    retriever, _ = make([doc(p) for p in "ABCDE"], [doc(p, score=0.9) for p in "EDCBA"])
    sync = retriever.retrieve("q")
    asyn = asyncio.run(retriever.aretrieve("q"))
    assert [d.metadata for d in sync.documents] == [d.metadata for d in asyn.documents]
    assert [d.metadata["pmid"] for d in retriever.invoke("q")] == [
        d.metadata["pmid"] for d in asyncio.run(retriever.ainvoke("q"))
    ]


def test_filters_from_the_question_reach_both_retrievers() -> None:
    docs = [doc("OLD", year=2015), doc("NEW", year=2022)]
    dense = [doc("OLD", score=0.9, year=2015), doc("NEW", score=0.8, year=2022)]
    retriever, backend = make(docs, dense)
    out = retriever.retrieve("working memory after 2020")
    assert out.query == "working memory"
    assert out.filters.as_dict() == {"year_min": 2021}
    assert [d.metadata["pmid"] for d in out.documents] == ["NEW"]
    assert all(f.year_min == 2021 for f in backend.seen_filters)


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("COVID-19 outcomes", {"covid-19", "covid", "19", "outcomes"}),
        ("IL-6 levels", {"il-6", "il", "6", "levels"}),
        ("BRCA1 carriers", {"brca1", "carriers"}),
        ("the 5-HT2A receptor", {"5-ht2a", "5", "ht2a", "receptor"}),
        ("Intelligence, (IQ)!", {"intelligence", "iq"}),
    ],
)
def test_biomedical_tokenizer_keeps_names(text: str, terms: set[str]) -> None:
    assert set(tokenize(text)) == terms


def test_tokenizer_stopwords_are_optional() -> None:
    assert "the" not in tokenize("the brain")
    assert "the" in tokenize("the brain", stopwords=False)


def test_sparse_bm25_scores_equal_rank_bm25() -> None:
    texts = [
        "working memory in children",
        "IL-6 and COVID-19 in adults",
        "memory memory training",
        "intelligence and working memory capacity",
        "unrelated text about bones",
    ]
    index = BM25Index.build(texts, k1=1.2, b=0.75)
    okapi = BM25Okapi([tokenize(t) for t in texts], k1=1.2, b=0.75)
    for query in ["working memory", "covid-19 il-6", "memory memory", "nothing here"]:
        np.testing.assert_allclose(
            index.scores(query), okapi.get_scores(tokenize(query)), rtol=1e-5, atol=1e-6
        )
    assert [row for row, _ in index.search("working memory", 2)] == [0, 3]


PHRASE_TEXTS = [
    "children without cranial radiation therapy showed no impairment",
    "radiation of the cranial vault: therapy for children",
    "cranial radiation therapy in adults with tumours",
    "working memory training in children",
    "unrelated text about bones and bones",
]


def test_phrase_scores_equal_rank_bm25_over_word_pairs() -> None:
    def pairs(text: str) -> list[str]:
        words = word_sequence(text)
        return [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)] or ["\u2205"]

    index = PhraseIndex.build(PHRASE_TEXTS, k1=1.2, b=0.75)
    okapi = BM25Okapi([pairs(t) for t in PHRASE_TEXTS], k1=1.2, b=0.75)
    for query in ["cranial radiation therapy", "Working memory in children?", "no pair", "x"]:
        np.testing.assert_allclose(
            index.scores(query), okapi.get_scores(pairs(query)), rtol=1e-5, atol=1e-6
        )


def test_phrase_weight_lifts_the_exact_phrase_and_round_trips(tmp_path) -> None:
    question = "Did children without cranial radiation therapy show impairment?"
    words_only = BM25Index.build(PHRASE_TEXTS, stopwords=False)
    with_phrases = BM25Index.build(PHRASE_TEXTS, stopwords=False, phrases=True)
    with_phrases.phrase_weight = 0.5
    np.testing.assert_allclose(with_phrases.term_scores(question), words_only.scores(question))
    gain = with_phrases.scores(question) - words_only.scores(question)
    assert gain[0] > gain[2] > 0 and gain[1] == 0 and gain[4] == 0  # pairs in order only
    with_phrases.save(tmp_path)
    loaded = BM25Index.load(tmp_path, phrase_weight=0.5)
    np.testing.assert_allclose(loaded.scores(question), with_phrases.scores(question))
    assert BM25Index.load(tmp_path).phrases is None  # weight 0: the pair files are not read


TODAY = dt.date(2026, 11, 22)
FILTER_CASES = [
    ("IQ after 2020", "IQ", {"year_min": 2021}),
    ("IQ since 2019", "IQ", {"year_min": 2019}),
    ("IQ from 2019 onwards", "IQ", {"year_min": 2019}),
    ("studies between 2015 and 2018 on ADHD", "on ADHD", {"year_min": 2015, "year_max": 2018}),
    (
        "from 2015 to 2018 what is known about sleep",
        "what is known about sleep",
        {"year_min": 2015, "year_max": 2018},
    ),
    ("sleep and memory in 2015-2018", "sleep and memory", {"year_min": 2015, "year_max": 2018}),
    ("papers in 2021 about IL-6", "about IL-6", {"year_min": 2021, "year_max": 2021}),
    (
        "What was published in 2019 on dementia?",
        "What was on dementia?",
        {"year_min": 2019, "year_max": 2019},
    ),
    ("before 2016, what about BRCA1?", "what about BRCA1?", {"year_max": 2015}),
    ("dementia studies published before 2016", "dementia", {"year_max": 2015}),
    ("dementia in the last 5 years", "dementia", {"year_min": 2022}),
    ("title contains covid", "", {"title_contains": ["covid"]}),
    (
        "articles with covid in the title about children",
        "articles about children",
        {"title_contains": ["covid"]},
    ),
    ("studies by Deary on cognitive ageing", "on cognitive ageing", {"author": "Deary"}),
    ("work by Plomin et al. on heritability", "on heritability", {"author": "Plomin"}),
    ("cognitive epidemiology by Deary", "cognitive epidemiology", {"author": "Deary"}),
    (
        "IQ and mortality by Deary after 2015",
        "IQ and mortality",
        {"author": "Deary", "year_min": 2016},
    ),
    ("In 2020, what changed in ADHD care?", "what changed in ADHD care?",
     {"year_min": 2020, "year_max": 2020}),
    ("ADHD medication use in 2020?", "ADHD medication use?", {"year_min": 2020, "year_max": 2020}),
    # not filters: these stay in the question
    ("What percentage of ad buys in 2012 were e-cigarette ads?",
     "What percentage of ad buys in 2012 were e-cigarette ads?", {}),
    ("Does IL-2 therapy help?", "Does IL-2 therapy help?", {}),
    ("COVID-19 in 2000 children", "COVID-19 in 2000 children", {}),
    (
        "What do the 2020 sepsis guidelines recommend?",
        "What do the 2020 sepsis guidelines recommend?",
        {},
    ),
    ("Is dementia caused by Alzheimer disease?", "Is dementia caused by Alzheimer disease?", {}),
    ("memory impairment caused by stress", "memory impairment caused by stress", {}),
    ("Is intelligence heritable?", "Is intelligence heritable?", {}),
    ("effects of 5-HT2A agonists", "effects of 5-HT2A agonists", {}),
    # a year phrase after a place or a verb of change dates the data, not the publication
    (
        "Did the boycott affect polio vaccination coverage in Kenya in 2015?",
        "Did the boycott affect polio vaccination coverage in Kenya in 2015?",
        {},
    ),
    (
        "Shigellosis in Barcelona between 1988 and 2012: an emerging STI?",
        "Shigellosis in Barcelona between 1988 and 2012: an emerging STI?",
        {},
    ),
    ("asthma in the United States since 2019", "asthma in the United States since 2019", {}),
    (
        "Has use of alternative medicine changed from 2002 to 2007?",
        "Has use of alternative medicine changed from 2002 to 2007?",
        {},
    ),
    ("Has obesity prevalence risen since 2010?", "Has obesity prevalence risen since 2010?", {}),
    # ... but an acronym is not a place
    ("What is new in ADHD since 2019?", "What is new in ADHD?", {"year_min": 2019}),
]


@pytest.mark.parametrize(("question", "searched", "filters"), FILTER_CASES)
def test_filter_phrasings(question: str, searched: str, filters: dict) -> None:
    text, parsed = parse_filters(question, today=TODAY)
    assert parsed.as_dict() == filters
    assert text == searched


def test_filters_match_metadata() -> None:
    f = Filters(year_min=2016, author="Deary", title_contains=["IQ"])
    assert f.matches({"year": 2018, "authors": ["Ian J Deary"], "title": "IQ and death"})
    assert not f.matches({"year": 2015, "authors": ["Ian J Deary"], "title": "IQ and death"})
    assert not f.matches({"year": 2018, "authors": ["Ian Dearyson"], "title": "IQ"})
    assert not f.matches({"year": None, "authors": ["Ian Deary"], "title": "IQ"})


def test_rare_keywords_keep_question_order() -> None:
    words = rare_keywords("Is ubiquinone related to ADHD pathogenesis in children?")
    assert "ubiquinone" in words and "pathogenesis" in words
    assert "children" not in words and "Is" not in words
    assert words == sorted(
        words, key=lambda w: "Is ubiquinone related to ADHD pathogenesis".find(w)
    )


def test_the_stop_words_are_scikit_learns_without_importing_scikit_learn() -> None:
    """Every BM25 index was built with scikit-learn's English stop words; the chat and each CLI
    command read that list from its one module instead of importing scikit-learn, and import
    nltk's Porter stemmer without the scikit-learn and scipy.stats pieces nltk's init loads
    (together about 2 s at every start). Mutation caught: ``indexing/tokenize.py`` importing
    ``sklearn.feature_extraction.text`` again, or ``indexing/stems.py`` importing nltk plainly
    (the subprocess sees sklearn loaded); the module read from another file (the list
    differs)."""
    import subprocess
    import sys

    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    from indexing.tokenize import STOPWORDS
    from tests.conftest import REPO

    assert STOPWORDS == ENGLISH_STOP_WORDS and len(STOPWORDS) > 300
    code = ("import sys, indexing.tokenize, chains.modes, grounding.compose\n"
            "from indexing.stems import stem\n"
            "assert stem('Saunas') == 'sauna' and stem('hypogonadal') == 'hypogonad'\n"
            "print(sorted(m for m in ('sklearn', 'pandas', 'scipy.stats') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                         text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"
