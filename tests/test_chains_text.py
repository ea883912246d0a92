"""Pure text handling of the chains: citations, sub-query parsing, rewrite guard, yes/no."""

from __future__ import annotations

import pytest

from chains.citations import CitationStreamFilter, cited_numbers, clean_citations
from chains.prompts import render
from chains.queries import (
    content_terms,
    fallback_query,
    guard_rewrite,
    names_own_topic,
    needs_context,
    parse_queries,
)
from eval.verdict import Calibration, fit_bias, is_yes_no_question, parse_verdict_json

# ---- citations ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "n", "expected"),
    [
        ("A [1] and B [2].", 2, "A [1] and B [2]."),
        ("A [1] and B [7].", 2, "A [1] and B."),
        ("Both [1, 2].", 3, "Both [1, 2]."),
        ("Both [1, 5].", 3, "Both [1]."),
        ("Both [4, 5].", 3, "Both."),
        ("Both [1][3].", 2, "Both [1]."),
        ("Range [1-3].", 2, "Range [1, 2]."),
        ("Word [Source 2] here.", 2, "Word [2] here."),
        ("Zero [0] here.", 2, "Zero here."),
        ("No citations at all.", 2, "No citations at all."),
        ("A list [a] stays.", 2, "A list [a] stays."),
    ],
)
def test_clean_citations(text: str, n: int, expected: str) -> None:
    assert clean_citations(text, n) == expected


def test_cited_numbers() -> None:
    assert cited_numbers("x [2] y [1, 3] z [2]") == [2, 1, 3]


def test_stream_filter_holds_brackets_across_pieces() -> None:
    f = CitationStreamFilter(2)
    pieces = ["Stim", "ulants help [", "1", "] and [", "9", "] too [2", "]."]
    out = "".join(f.run(pieces))
    assert out == "Stimulants help [1] and  too [2]."


def test_stream_filter_releases_unclosed_bracket() -> None:
    f = CitationStreamFilter(2)
    out = "".join(f.run(["see [this is not a citation at all, really", " ok"]))
    assert out == "see [this is not a citation at all, really ok"


# ---- multi-query parsing ----------------------------------------------------------------------

Q = "Are stimulant medications effective for ADHD?"


@pytest.mark.parametrize(
    "raw",
    [
        "stimulants ADHD efficacy\nmethylphenidate attention deficit\namphetamine hyperactivity",
        "1. stimulants ADHD efficacy\n2. methylphenidate attention deficit\n"
        "3. amphetamine hyperactivity",
        "1) stimulants ADHD efficacy\n\n2) methylphenidate attention deficit\n\n"
        "3) amphetamine hyperactivity",
        "- stimulants ADHD efficacy\n- methylphenidate attention deficit\n"
        "- amphetamine hyperactivity",
        'Here are three queries:\n"stimulants ADHD efficacy"\n"methylphenidate attention deficit"\n'
        '"amphetamine hyperactivity"',
        "Sure! Here are 3 alternative search queries:\n\n* stimulants ADHD efficacy\n"
        "* methylphenidate attention deficit\n* amphetamine hyperactivity\n* extra one too many",
        "1. stimulants ADHD efficacy 2. methylphenidate attention deficit "
        "3. amphetamine hyperactivity",
        "Query 1: stimulants ADHD efficacy\nQuery 2: methylphenidate attention deficit\n"
        "Query 3: amphetamine hyperactivity",
        "**stimulants ADHD efficacy**\nstimulants ADHD efficacy\n"
        "methylphenidate attention deficit\namphetamine hyperactivity",
    ],
)
def test_parse_queries_messy_formats(raw: str) -> None:
    assert parse_queries(raw, 3, original=Q) == [
        "stimulants ADHD efficacy",
        "methylphenidate attention deficit",
        "amphetamine hyperactivity",
    ]


def test_parse_queries_fewer_than_asked_and_drops_original_and_empty() -> None:
    raw = f"{Q}\n\n   \n1.\nADHD stimulant trials\nADHD stimulant trials"
    assert parse_queries(raw, 3, original=Q) == ["ADHD stimulant trials"]
    assert parse_queries("", 3, original=Q) == []
    assert parse_queries("Here are the queries:", 3) == []
    # seen from the real model in the chat: any line that introduces a list is no query
    raw = ("1. burnout in nurses\nHere's an example of how you can write these queries using "
           "Python:\n2. emotional intelligence training")
    assert parse_queries(raw, 3) == ["burnout in nurses", "emotional intelligence training"]


def test_parse_queries_drops_answers_remarks_and_timestamps_the_small_model_writes() -> None:
    """Lines SmolLM2-135M wrote among its queries for the verdict questions: a labelled answer,
    a remark, a timestamp; the labelled queries beside them are kept without their labels."""
    q = "Does a year of simvastatin raise IQ in children with neurofibromatosis type 1?"
    raw = ("Q: Does simvastatin improve attention in neurofibromatosis type 1?\n"
           "A: Yes, a year of simvastatin increases attention problems in children.\n"
           "B: Simvastatin and cognition in NF1\n"
           "The answer is yes.\n"
           "Please note that these are not exact duplicates of each other\n"
           "2018-04-29 20:57:16.232 - 2018-04-29 20:57:16.232 - 2018-04-29 20\n"
           "Note: these queries have multiple possible answers\n"
           "These are all valid queries to answer the question of whether simvastatin raises IQ.\n"
           "Yes, simvastatin raises IQ.")
    assert parse_queries(raw, 5, original=q) == [
        "Does simvastatin improve attention in neurofibromatosis type 1?",
        "Simvastatin and cognition in NF1",
    ]
    # a query that merely starts with these words is kept
    kept = ["Answering bullying at school", "Yes-associated protein in glioma",
            "Notes on dementia care"]
    assert parse_queries("\n".join(kept), 5) == kept


# ---- conversational rewrite guard ---------------------------------------------------------------

PREV = ["Are stimulant medications effective for ADHD?"]


def test_rewrite_kept_when_it_keeps_topic_and_followup() -> None:
    q, fb = guard_rewrite(
        "and in children?", "Are stimulant medications effective for ADHD in children?", PREV
    )
    assert (q, fb) == ("Are stimulant medications effective for ADHD in children?", False)


def test_rewrite_label_and_quotes_are_stripped() -> None:
    q, fb = guard_rewrite(
        "and in children?", 'Standalone question: "Do stimulants help ADHD in children?"', PREV
    )
    assert q == "Do stimulants help ADHD in children?" and not fb


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "   \n",
        "Are children effective?",  # lost the topic
        "Are stimulant medications effective for ADHD?",  # lost the follow-up's content
        "children " * 60,  # rambling
        "I am sorry, I cannot help with that.",
    ],
)
def test_rewrite_guard_falls_back(bad: str) -> None:
    q, fb = guard_rewrite("and in children?", bad, PREV)
    assert fb
    low = q.lower()
    assert "children" in low and ("adhd" in low or "stimulant" in low)


def test_fallback_query_shape() -> None:
    assert fallback_query("and in children?", PREV) == "stimulant medications ADHD in children?"


def test_standalone_followup_needs_no_history_terms() -> None:
    q, fb = guard_rewrite(
        "Does caffeine improve working memory in healthy adults?",
        "Does caffeine improve working memory in healthy adults?",
        PREV,
    )
    assert not fb and "caffeine" in q


@pytest.mark.parametrize(
    ("q", "expected"),
    [
        ("and in children?", True),
        ("What about adolescents?", True),
        ("Is it safe?", True),
        ("Does this treatment work in older adults with depression?", True),
        ("Are they effective in older adults?", True),
        ("Who won the 2014 football World Cup?", False),
        ("Who directed the movie Titanic and which actors starred in it?", False),
        ("Does caffeine improve working memory in healthy adults?", False),
        # "such as" introduces an example, an existential "there" points nowhere
        ("Does birth order shape personality traits such as extraversion?", False),
        ("Is there a link between fluoride and IQ?", False),
        ("Is it there?", True),
    ],
)
def test_needs_context(q: str, expected: bool) -> None:
    assert needs_context(q) is expected


@pytest.mark.parametrize(
    ("q", "expected"),
    [
        # a topic of its own: no word points back, an essential concept ("mortality")
        ("Is childhood intelligence associated with adult mortality?", True),
        ("Does fluoride in drinking water lower children's intelligence?", True),
        ("Is there a link between fluoride and IQ?", True),
        # context-dependent: the connective, a pronoun, an ellipsis ("the stromal ones")
        ("and does it hold when siblings are compared?", False),
        ("Does it relate to outcomes years after traumatic brain injury?", False),
        ("Can a case-based reasoning system model their longevity?", False),
        ("Can a convolutional neural network identify the stromal ones?", False),
        ("Does this treatment work in older adults with depression?", False),
        # it presupposes what was said: without cranial radiation, as against the last answer
        ("Were neurocognitive outcomes impaired even without cranial radiation?", False),
        ("Is mortality also higher in twins?", False),
        # "afterwards": after the event the conversation spoke of (seen in the chat: "any
        # bleeding problems afterwards?" after a tonsillectomy question was searched alone and
        # answered about heart surgery; mutation caught: the word out of _CONTINUES)
        ("Did the children have a hemorrhage afterwards?", False),
        ("Did children have a hemorrhage after tonsillectomy?", True),
        # whole, but nothing essential of its own: the conversation says what is compared
        ("Are the results different for women compared with men?", False),
        # harms are a treatment's: asked alone they lean on the conversation's treatment, with
        # the treatment they are a topic of its own (mutation caught: the harms concept counted
        # as a topic in names_own_topic -> the first is True)
        ("Are there any long-term side effects in adults?", False),
        ("Does methylphenidate have long-term side effects in adults?", True),
    ],
)
def test_names_own_topic(q: str, expected: bool) -> None:
    assert names_own_topic(q) is expected


def test_content_terms() -> None:
    assert content_terms("Are stimulant medications effective for ADHD?") == [
        "stimulant",
        "medications",
        "adhd",
    ]


def test_question_stopwords_are_the_project_list_with_named_differences() -> None:
    from chains.queries import QUESTION_CONTENT, QUESTION_FILLER
    from indexing.tokenize import STOPWORDS

    # each named difference is one: a kept word is one the project's list drops, an added one
    # is one it lacks
    assert QUESTION_CONTENT <= STOPWORDS and not QUESTION_FILLER & STOPWORDS
    terms = content_terms("Tell me regarding aspirin among adults without diabetes in the US")
    assert terms == ["aspirin", "among", "adults", "without", "diabetes", "us"]


# ---- yes/no -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("q", "expected"),
    [
        ("Is aspirin useful?", True),
        ("Does IQ predict income?", True),
        ("can exercise help", True),
        ("Should we screen?", True),
        ("Have trials shown benefit?", True),
        ("Doesn't it work?", True),
        ("What is IQ?", False),
        ("Island populations and IQ", False),
        ("How does it work?", False),
        ("And does it also lower mortality?", True),
        ("So, is it safe for kids?", True),
        ("But what does it change?", False),
        ("Android apps and IQ", False),
        ("Fast foods - are they a risk factor for asthma?", True),
        ("Low-tone sudden deafness – does it progress to Meniere's disease?", True),
        ("Lithium and the kidney - what is known?", False),
        ("", False),
    ],
)
def test_is_yes_no_question(q: str, expected: bool) -> None:
    assert is_yes_no_question(q) is expected


@pytest.mark.parametrize(
    ("raw", "verdict", "valid"),
    [
        ('{"draft": "It helps.", "answer": "yes"}', "yes", True),
        ('```json\n{"draft": "x", "answer": "No"}\n```', "no", True),
        ("{'draft': 'unclear', 'answer': 'maybe'}", "maybe", True),
        ('Sure! {"draft": "It helps", "answer": "yes, clearly"} Hope this helps', "yes", True),
        ('{"draft": "It helps", "answer": "yes"', "yes", False),  # missing brace
        ('"draft": "the study", "answer": no', "no", False),
        ("answer: maybe", "maybe", False),
        ('{"draft": "no idea", "answer": "perhaps"}', None, False),
        ("The study shows benefits.", None, False),
        ("", None, False),
    ],
)
def test_parse_verdict_json(raw: str, verdict: str | None, valid: bool) -> None:
    parsed = parse_verdict_json(raw)
    assert parsed.verdict == verdict
    assert parsed.valid_json is valid


def test_parse_verdict_json_keeps_draft() -> None:
    assert parse_verdict_json('{"draft": "It helps.", "answer": "yes"}').draft == "It helps."
    assert parse_verdict_json('"draft": "It helps", "answer"').draft == "It helps"


def test_calibration_shifts_decision_and_fit_bias_learns_it() -> None:
    # the raw model prefers "yes" by 1.0 nat; gold is "no" whenever the no-score is within 0.5
    lps = [{"yes": 0.0, "no": -0.3, "maybe": -5.0}] * 6 + [
        {"yes": 0.0, "no": -2.0, "maybe": -5.0}
    ] * 4
    gold = ["no"] * 6 + ["yes"] * 4
    assert Calibration().decide(lps[0]) == "yes"
    bias, acc = fit_bias(lps, gold, step=0.1, span=3)
    assert acc == 1.0
    assert Calibration(bias).decide(lps[0]) == "no"
    assert Calibration(bias).decide(lps[-1]) == "yes"


def test_calibration_load_missing_file_is_neutral(tmp_path) -> None:
    cal = Calibration.load(tmp_path / "absent.json")
    assert cal.bias == {"yes": 0.0, "no": 0.0, "maybe": 0.0}


def test_render_leaves_other_braces() -> None:
    out = render('Q: {question} JSON {"answer": "yes"} {unknown}', question="why?")
    assert out == 'Q: why? JSON {"answer": "yes"} {unknown}'


def test_a_citation_cut_off_at_the_end_is_dropped() -> None:
    from chains.citations import CitationStreamFilter, clean_citations

    assert clean_citations("It helps [1]. It may harm [", 3) == "It helps [1]. It may harm"
    assert clean_citations("It helps [2", 3) == "It helps"
    f = CitationStreamFilter(3)
    assert "".join(f.run(["It helps [1", "]. Also [", "2"])) == "It helps [1]. Also "


def test_the_refusal_never_runs_into_the_next_sentence() -> None:
    """"...focused on medical assistance No indexed abstract mentions onerror." (issue #36): the
    refusal, written without a full stop, is made a sentence before more text, in the answer
    itself (chat, CLI and API alike); alone it is unchanged."""
    from chains.answer import refusal_text
    from tests.helpers import REFUSAL

    assert refusal_text(REFUSAL, ["onerror"], {}) == (
        f"{REFUSAL}. No indexed abstract mentions onerror.")
    assert refusal_text(REFUSAL, [], {}) == REFUSAL
    assert refusal_text("Not here.", ["x"], {}) == "Not here. No indexed abstract mentions x."
    assert refusal_text(REFUSAL, [], {"year_min": 2030}).startswith(f"{REFUSAL}. No indexed")
