"""Unit tests of the convex-combination fusion rule and of follow-up topic carry-over.

Fake retrievers with fixed lists: what is checked is the rule, not a model.
"""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.documents import Document

from retrievers.followup import (
    FOCUSED_WEIGHT,
    OWN_TOPIC_CONTEXT_WEIGHT,
    PATHS,
    TopicWeights,
    aretrieve_followup,
    fuse_followup,
    in_context_query,
    plan_queries,
    retrieve_followup,
    topic_weights,
)
from retrievers.fusion import convex_combination
from tests.fake_retriever import FakeRetriever, make_doc
from tests.test_retrieval_unit import doc, make


def scored(*pairs: tuple[str, float]) -> list[Document]:
    return [doc(p, score=s) for p, s in pairs]


def pmids(docs: list[Document]) -> list[str]:
    return [d.metadata["pmid"] for d in docs]


# ---- convex combination -----------------------------------------------------------------------


def test_convex_combination_matches_a_hand_computed_example() -> None:
    bm25 = scored(("a", 10.0), ("b", 5.0))
    dense = scored(("b", 0.75), ("c", 0.55))
    out = convex_combination(
        [bm25, dense], weights=[0.7, 0.3], floors=[0.0, 0.35], names=["bm25", "dense"]
    )
    # a: 0.7*1 = 0.70; b: 0.7*0.5 + 0.3*1 = 0.65; c: 0.3*(0.20/0.40) = 0.15
    assert pmids(out) == ["a", "b", "c"]
    assert [round(d.metadata["fused_score"], 6) for d in out] == [0.7, 0.65, 0.15]
    assert out[1].metadata["ranks"] == {"bm25": 2, "dense": 1}
    assert out[2].metadata["ranks"] == {"bm25": None, "dense": 2}


def test_a_clear_bm25_winner_stays_first_but_a_near_tie_goes_to_dense() -> None:
    """The per-query confidence: the same ranks, different score gaps, different outcomes."""
    dense = scored(("b", 0.70), ("a", 0.50))
    kw = {"weights": [0.7, 0.3], "floors": [0.0, 0.35], "names": ["bm25", "dense"]}
    clear = convex_combination([scored(("a", 20.0), ("b", 8.0)), dense], **kw)
    close = convex_combination([scored(("a", 20.0), ("b", 19.5)), dense], **kw)
    assert pmids(clear)[0] == "a"
    assert pmids(close)[0] == "b"


def test_a_dense_only_article_cannot_pass_bm25s_clear_first() -> None:
    bm25 = scored(("a", 12.0), ("b", 3.0))
    dense = scored(("z", 0.90), ("a", 0.40))
    out = convex_combination(
        [bm25, dense], weights=[0.7, 0.3], floors=[0.0, 0.35], names=["bm25", "dense"]
    )
    assert pmids(out)[:2] == ["a", "z"]


def test_convex_fusion_in_the_hybrid_retriever_keeps_the_patch() -> None:
    bm25 = [doc("a", score=9.0), doc("b", score=8.9), doc("c", score=1.0)]
    dense = [doc("b", score=0.8), doc("a", score=0.5), doc("d", score=0.4)]
    r, _ = make(bm25, dense, fusion="convex", weights=[0.7, 0.3])
    out = r.retrieve("q")
    assert pmids(out.documents)[:2] == ["b", "a"]  # near-tied in BM25: dense decides
    assert all(0 <= d.metadata["confidence"] <= 1 for d in out.documents)
    assert r.retrieve("q", k=5).documents[0].metadata["fused_score"] > 0.9
    empty, _ = make(bm25, [], fusion="convex")
    assert empty.retrieve("q").empty  # no dense hit above the threshold: nothing


# ---- follow-ups -------------------------------------------------------------------------------


def test_paths_follow_what_made_the_context_form() -> None:
    prev = ["What is cognitive reserve?"]
    fu = "Does it relate to outcomes after brain injury?"
    assert plan_queries(fu, []) == ("unchanged", [fu])
    assert plan_queries(fu, prev) == ("fused", [fu, in_context_query(fu, prev)])
    assert plan_queries(fu, prev, "Does cognitive reserve relate to outcomes?")[0] == "llm"
    assert plan_queries(fu, prev, "cognitive reserve outcomes?", rewrite_fallback=True)[0] == (
        "fallback"
    )
    assert in_context_query(fu, ["Old?", prev[0], " "]) == f"{prev[0]} {fu}"


def test_fusion_ranks_first_what_both_searches_agree_on() -> None:
    as_written = scored(("x", 1), ("gold", 1), ("y", 1))
    in_context = scored(("t1", 1), ("gold", 1), ("t2", 1))
    assert pmids(fuse_followup([as_written, in_context], c=5, k=3))[0] == "gold"


def test_a_follow_up_that_changes_topic_keeps_its_own_articles() -> None:
    # the in-context query holds the follow-up's words too, so it finds the new topic lower down
    as_written = scored(("new1", 1), ("new2", 1), ("new3", 1))
    in_context = scored(("old1", 1), ("old2", 1), ("new1", 1), ("old3", 1))
    out = pmids(fuse_followup([as_written, in_context], c=5, k=3))
    assert out[0] == "new1"
    assert pmids(fuse_followup([[], in_context], c=5, k=3))[0] == "old1"


def test_an_off_topic_follow_up_that_stands_alone_is_not_rescued_by_history() -> None:
    in_context = scored(("old1", 1))
    assert fuse_followup([[], in_context], c=5, k=3, stands_alone=True) == []
    # a follow-up that needs its context ("and in adults?") may rely on it alone
    assert pmids(fuse_followup([[], in_context], c=5, k=3)) == ["old1"]


# ---- how much the conversation weighs (topic_weights) ------------------------------------------


def confident(*pairs: tuple[str, float]) -> list[Document]:
    docs = [doc(p) for p, _ in pairs]
    for d, (_, conf) in zip(docs, pairs, strict=True):
        d.metadata["confidence"] = conf
    return docs


# the read-through's chat: the follow-up's own search finds the new topic; the in-context search
# (previous question + follow-up) ranks the old topic's articles first, the new topic lower
NEW_TOPIC = confident(("mort1", 0.9), ("mort2", 0.8), ("growth", 0.6), ("mort3", 0.5))
OLD_AND_NEW = confident(("wm1", 1.0), ("wm2", 0.9), ("growth", 0.7), ("mort1", 0.6))


def test_a_follow_up_with_its_own_topic_leads_and_the_old_topic_only_reorders() -> None:
    usual = fuse_followup([NEW_TOPIC, OLD_AND_NEW], c=5, k=3)
    assert {"wm1", "wm2"} & set(pmids(usual))  # before: the old topic among the sources
    w = topic_weights("fused", NEW_TOPIC, own_topic=True, prior_weight=0.3)
    assert w == TopicWeights("standalone", 1.0, OWN_TOPIC_CONTEXT_WEIGHT, 0.0)
    out = pmids(fuse_followup([NEW_TOPIC, OLD_AND_NEW], c=5, k=3, weights=w))
    assert out[0] == "mort1" and not {"wm1", "wm2"} & set(out)
    # the conversation still re-orders the follow-up's own articles ("growth", which both
    # searches found, moves up), and its own articles come only after them
    assert pmids(fuse_followup([NEW_TOPIC, OLD_AND_NEW], c=5, k=6, weights=w)) == [
        "mort1", "growth", "mort2", "mort3", "wm1", "wm2"]  # fmt: skip
    assert "standalone" in PATHS


@pytest.mark.parametrize(
    ("why", "as_written", "own_topic"),
    [
        ("it leans on the conversation (chains.queries.names_own_topic)", NEW_TOPIC, False),
        ("its own search is not confident", confident(("mort1", 0.2), ("mort2", 0.1)), True),
        ("its own search finds nothing (refused elsewhere, when it stands alone)", [], True),
    ],
)
def test_otherwise_the_conversation_keeps_its_usual_weight(why, as_written, own_topic) -> None:  # noqa: ANN001
    w = topic_weights("llm", as_written, own_topic=own_topic, prior_weight=0.3)
    assert w == TopicWeights("llm", 0.5, 1.0, 0.3), why


def test_the_decision_is_recorded_in_the_result() -> None:
    docs = [
        make_doc("1", "Working memory training", "Working memory training and fluid reasoning."),
        make_doc("2", "Training transfer", "Working memory training does not transfer."),
        make_doc("3", "Childhood intelligence and mortality", "Childhood intelligence and death."),
        make_doc("4", "Adult mortality", "Intelligence and adult mortality in siblings."),
    ]
    retriever = FakeRetriever(docs, k=3)
    prev = ["Does working memory training improve fluid intelligence?"]
    q = "Is childhood intelligence associated with adult mortality?"
    usual = retrieve_followup(retriever, q, prev, stands_alone=True)
    own = retrieve_followup(retriever, q, prev, stands_alone=True, own_topic=True)
    assert usual.path == "fused" and usual.query.startswith(prev[0])
    assert {"1", "2"} <= set(pmids(usual.documents))  # the old topic among the sources
    assert own.path == "standalone" and own.query == q and own.queries == usual.queries
    # the new topic first; the old one only fills the place the new topic leaves
    assert pmids(own.documents) == ["3", "4", "1"]


def test_the_prior_reorders_but_never_adds() -> None:
    as_written = scored(("a", 1), ("b", 1), ("c", 1))
    in_context = scored(("a", 1), ("b", 1), ("c", 1))
    kw = {"c": 5, "k": 3, "previous_sources": ["c", "zzz"]}
    with_prior = pmids(fuse_followup([as_written, in_context], prior_weight=1.0, **kw))
    assert with_prior[0] == "c" and "zzz" not in with_prior
    assert pmids(fuse_followup([as_written, in_context], prior_weight=0.0, **kw))[0] == "a"


def test_inner_ranks_survive_the_follow_up_fusion() -> None:
    as_written = [doc("a")]
    as_written[0].metadata["ranks"] = {"bm25": 1, "dense": 4}
    out = fuse_followup([as_written, scored(("a", 1))], c=5, k=3)
    assert out[0].metadata["ranks"] == {"bm25": 1, "dense": 4}
    assert out[0].metadata["query_ranks"] == {"as_written": 1, "in_context": 1}


DOCS = [
    make_doc("1", "Cognitive reserve in dementia", "Cognitive reserve delays dementia."),
    make_doc("5", "Cognitive reserve", "Education, and outcomes of the ageing brain."),
    make_doc("2", "Traumatic brain injury outcomes", "Outcomes after brain injury in adults."),
    make_doc(
        "3",
        "Cognitive reserve after traumatic brain injury",
        "Reserve predicts outcomes after brain injury.",
    ),
    make_doc("4", "Sleep and school", "Sleep in adolescents."),
]


@pytest.mark.parametrize("use_async", [False, True])
def test_retrieve_followup_with_a_fake_retriever(use_async: bool) -> None:
    retriever = FakeRetriever(DOCS, k=3)
    args = ("Does it relate to outcomes after brain injury?", ["What is cognitive reserve?"])
    if use_async:
        out = asyncio.run(aretrieve_followup(retriever, *args))
    else:
        out = retrieve_followup(retriever, *args)
    assert out.path == "fused" and len(out.queries) == 2
    assert pmids(out.documents)[0] == "3"
    # a follow-up naming nothing of its own gives no wording to read BM25's strength from
    assert retriever.wordings == [None, None]


@pytest.mark.parametrize("use_async", [False, True])
def test_a_follow_up_naming_a_concept_gives_its_wording_to_the_context_search(
        use_async: bool) -> None:
    """Whether BM25 is weak is read from the user's own wording (retrievers.hybrid). Mutations
    caught: FollowupPlan.wording returning None; giving it without ``own_words``."""
    retriever = FakeRetriever(DOCS, k=3)
    args = ("Does it relate to outcomes after brain injury?", ["What is cognitive reserve?"])
    if use_async:
        asyncio.run(aretrieve_followup(retriever, *args, own_words=True))
    else:
        retrieve_followup(retriever, *args, own_words=True)
    assert retriever.wordings == [None, args[0]]
    alone = retriever.retrieve(args[0])
    assert pmids(alone.documents)[0] == "2"  # without history the topic is lost


# ---- the focused search of a resolved follow-up (docs/conversations.md, fourth pass) ----------


def test_a_resolved_follow_up_is_searched_a_third_time_in_focus() -> None:
    prev = ["Do kids who had meningitis end up with lower IQ?"]
    fu, res, focus = "does music therapy help them?", "kids meningitis lower IQ: music", "m"
    assert plan_queries(fu, prev, res, resolved=True, focus=focus) == (
        "resolved", [fu, res, focus])
    # only the rules' resolution has a focus: an LLM rewrite is searched as before
    assert plan_queries(fu, prev, res, focus=focus) == ("llm", [fu, res])
    assert topic_weights("resolved", [], own_topic=False).focused == FOCUSED_WEIGHT
    assert topic_weights("llm", [], own_topic=False).focused == 0.0


def test_the_focused_search_lifts_what_it_agrees_on_but_brings_little_of_its_own() -> None:
    as_written = scored(("a1", 1), ("a2", 1), ("gold", 1))
    in_context = scored(("old1", 1), ("old2", 1), ("old3", 1), ("old4", 1), ("gold", 1))
    weights = topic_weights("resolved", as_written, own_topic=False, own_words=True)
    two = pmids(fuse_followup([as_written, in_context], c=5, k=3, weights=weights))
    assert two[0] == "old1"  # the old topic's outcome outvotes the follow-up's
    three = pmids(fuse_followup([as_written, in_context, scored(("gold", 1), ("f2", 1))],
                                c=5, k=3, weights=weights))  # fmt: skip
    assert three[0] == "gold" and "f2" not in three, three
