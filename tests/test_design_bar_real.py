"""Study designs that are right or not shown (issue #36), on the real shared corpora: the cases a
clinician caught, read from the corpus files themselves, and the precision bar: the designs the
chat shows from wording alone are exactly those the rules get right at least 9 times in 10
against NLM's labels (``python -m app eval designs``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.design import (
    NOT_STATED,
    PRECISION_BAR,
    PUBLICATION_TYPE,
    SHOWN_WORDING,
    WORDING,
    classify_text,
    shown_badge,
)
from ingest.models import Article
from tests.helpers import need

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
DUAL_N_BACK = "27043141"  # "...in Healthy Adults: A Randomized Comparison to Processing Speed..."
OBSERVATIONAL = "29538361"  # "...compared ... in an observational design" (data of an old RCT)
COST_MODEL = "26268911"  # "Costs and benefits of iodine supplementation ...: a modelling analysis"
TRAINING_TRIAL = "23411126"  # "An open clinical trial assessing a novel training program ..."


@pytest.fixture(scope="module")
def articles() -> dict[str, Article]:
    from eval.designs import read_articles

    files = [need(SHARED / "pubmed" / "intelligence_2013_2022.xml.gz"),
             need(SHARED / "pubmed" / "pubmedqa_pqal.xml.gz")]
    return {a.pmid: a for a in read_articles(files)}


def _design(articles: dict[str, Article], pmid: str) -> tuple[str, str]:
    a = articles[pmid]
    d = classify_text(a.title, a.abstract)
    return d.label, shown_badge(d.label, d.source, d.rule)


def test_the_randomized_comparison_trial_is_a_trial_not_a_cohort(articles) -> None:
    label, shown = _design(articles, DUAL_N_BACK)
    assert label == "rct", label  # "A Randomized Comparison" in its title
    assert shown != "Cohort"
    # its "Follow-up Bayesian analyses" are analyses, not a follow-up of a cohort
    assert classify_text("A training study", "Follow-up Bayesian analyses supported null "
                         "findings.").label != "cohort"


def test_an_analysis_in_an_observational_design_is_not_an_rct(articles) -> None:
    label, shown = _design(articles, OBSERVATIONAL)
    assert label != "rct" and shown != "RCT", label


def test_a_cost_model_is_not_a_systematic_review(articles) -> None:
    label, _ = _design(articles, COST_MODEL)
    assert label not in ("systematic_review", "meta_analysis"), label


def test_no_design_is_badged_other(articles) -> None:
    label, shown = _design(articles, TRAINING_TRIAL)
    assert shown != "Other" and shown == NOT_STATED, (label, shown)
    assert shown_badge("other", WORDING, "no design wording") == NOT_STATED
    assert shown_badge("other", PUBLICATION_TYPE, "Editorial") == NOT_STATED
    # PubMed's own publication type is always shown; a wording guess below the bar never
    assert shown_badge("rct", PUBLICATION_TYPE, "Randomized Controlled Trial") == "RCT"
    assert shown_badge("rct", WORDING, 'randomised trial wording: "were randomized"') == NOT_STATED


def test_the_chat_shows_exactly_the_designs_above_the_precision_bar(articles) -> None:
    from app.config import load_config
    from eval.designs import _default_files, read_articles, score

    result = score(read_articles(_default_files(load_config())))
    assert result["labelled_articles"] > 500, result
    above = {label for label, row in result["per_design"].items()
             if label != "other" and row["predicted"] and row["precision"] >= PRECISION_BAR}
    assert set(SHOWN_WORDING) == above, (sorted(SHOWN_WORDING), result["per_design"])
    assert set(result["above_bar"]) == above


def test_an_index_built_before_a_rule_change_shows_todays_design(articles) -> None:
    """The shipped full index was built with the old rules (the Dual N-Back trial stored as a
    cohort through "Follow-up"): the chat's source reads the design again from the whole
    abstract; NLM's publication type is kept as stored."""
    from langchain_core.documents import Document

    from chains.answer import to_source
    from ingest.metadata import chunk_metadata

    a = articles[DUAL_N_BACK]
    stored = {**chunk_metadata(a), "design": "cohort", "design_source": WORDING,
              "design_rule": 'cohort or follow-up wording: "Follow-up"'}
    source = to_source(1, Document(page_content=a.abstract[:300], metadata=stored), a.abstract)
    assert source.design == "rct" and source.design_rule.startswith("randomised"), source
    assert shown_badge(source.design, source.design_source, source.design_rule) != "Cohort"
    typed = {**stored, "design": "meta_analysis", "design_source": PUBLICATION_TYPE,
             "design_rule": "Meta-Analysis"}
    kept = to_source(1, Document(page_content=a.abstract, metadata=typed), a.abstract)
    assert (kept.design, kept.design_rule) == ("meta_analysis", "Meta-Analysis")
