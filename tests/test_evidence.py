"""What PubMed says about an article, kept and used (issue #28): publication types, PMC id,
MeSH major topics, keywords, retractions from PubMed XML and MEDLINE; the study-design rules;
filters in plain words; retracted articles last; the index's metadata schema and its upgrade
without re-embedding. Parsers run on real records (the shared efetch/MEDLINE fixtures and
tests/data/retracted_pubmed.xml, a real record with a retraction notice added)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from langchain_core.documents import Document

from indexing.build import (
    build_index,
    read_chunks,
    schema1_article_hash,
    write_articles,
    write_chunks,
)
from indexing.chunking import Chunk
from indexing.store import IndexMismatchError, location, new_build_dir, open_current, publish
from ingest.design import classify, classify_text
from ingest.metadata import chunk_metadata
from ingest.models import Article, PublicationType
from ingest.sources import iter_file
from retrievers.filters import Filters, parse_filters
from retrievers.fusion import prefer_designs, retracted_last
from retrievers.milvus_filters import filter_expression
from tests.conftest import SHARED_DATA
from tests.helpers import cfg_at, need
from tests.test_indexing import HashEmbedder, tokenizer  # noqa: F401 - fixture

DATA = Path(__file__).parent / "data"
FIXTURES = SHARED_DATA / "fixtures"


def _parse(path: Path) -> dict[str, Article]:
    return {a.pmid: a for a in iter_file(path) if isinstance(a, Article)}


# -- ingest: both formats keep what PubMed says -----------------------------------------------
def test_pubmed_xml_keeps_types_ids_topics_keywords_and_pages() -> None:
    a = _parse(need(FIXTURES / "efetch" / "pubmed4.xml"))["27797938"]
    assert PublicationType(name="Observational Study", ui="D064888") in a.publication_types
    assert a.pmc == "PMC5442267" and a.doi == "10.1136/gutjnl-2016-312510"
    assert (a.volume, a.issue, a.pages, a.language) == ("66", "6", "1116-1122", "eng")
    assert "Pancreatic Neoplasms" in a.mesh_major and "Humans" not in a.mesh_major
    assert a.keywords and not a.retracted  # its CommentIn entry is no retraction


def test_medline_keeps_types_ids_major_topics_and_keywords() -> None:
    records = _parse(need(FIXTURES / "medline" / "intelligence_sample.medline.txt"))
    a = records["29335645"]
    assert [p.name for p in a.publication_types][-1] == "Review" and a.pmc == "PMC5985927"
    assert "Intelligence" in a.mesh_major  # starred through its qualifier: Intelligence/*genetics
    assert "Humans" not in a.mesh_major and (a.volume, a.pages) == ("19", "148-159")
    assert "Artificial intelligence" in records["32167262"].keywords  # "*" major mark dropped
    assert classify(a).source == "publication type" and classify(a).label == "narrative_review"


def test_a_retraction_is_read_from_xml_and_medline() -> None:
    xml = _parse(DATA / "retracted_pubmed.xml")["24090588"]
    medline = _parse(DATA / "retracted.medline.txt")["24090588"]
    assert xml.retracted and medline.retracted
    assert len(xml.retraction_notices) == 1  # the RetractionIn entry only, not the CommentIn
    assert medline.retraction_notices == ["99999901"]  # the RIN line's PMID (a placeholder)
    meta = chunk_metadata(xml)
    assert meta["retracted"] is True and meta["design"] == "rct"
    assert meta["design_source"] == "publication type"
    # the same article without its retraction notice and type is not retracted
    clean = xml.model_copy(update={"retraction_notices": [], "publication_types": []})
    assert not clean.retracted and chunk_metadata(clean)["design"] == "rct"  # from its wording


# -- the design rules -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("title", "abstract", "label"),
    [
        ("Exercise and IQ: a meta-analysis", "We pooled 12 studies.", "meta_analysis"),
        ("Exercise and IQ", "We searched PubMed and Embase for trials of exercise.",
         "systematic_review"),
        ("Zinc in school children", "Children were randomly assigned to zinc or placebo.", "rct"),
        ("Lead and IQ", "In this prospective cohort of 900 children, lead predicted IQ.",
         "cohort"),
        ("Autism and IQ", "We compared 50 cases and 100 matched controls.", "case_control"),
        ("Sleep in nurses", "A cross-sectional survey of 400 nurses.", "cross_sectional"),
        ("Seizures after a bite", "We report a 6-year-old boy with seizures.", "case_report"),
        ("Maze learning", "Mice were trained in a water maze for ten days.", "animal_in_vitro"),
        ("Tumour detection", "We propose a deep learning model for CT scans.", "modelling"),
        ("Intelligence: a review", "Theories of intelligence are discussed.", "narrative_review"),
        ("On wisdom", "Wisdom is old.", "other"),
    ],
)
def test_wording_rules_name_the_design_and_the_rule(title: str, abstract: str,
                                                    label: str) -> None:
    design = classify_text(title, abstract)
    assert design.label == label
    assert design.rule  # shown in the side panel: which rule fired, on which words


def test_a_publication_type_decides_before_the_wording() -> None:
    a = Article(pmid="1", title="Zinc: a cohort", abstract="A cohort of children was followed.",
                publication_types=[PublicationType(name="Case Reports", ui="D002363")])
    assert classify(a).label == "case_report" and classify(a).rule == "Case Reports"


# -- filters in plain words -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("question", "text", "wanted"),
    [
        ("Are statins effective? RCTs only", "Are statins effective?", {"designs": ["rct"]}),
        ("Do randomized trials show that zinc helps?", "Do show that zinc helps?",
         {"designs": ["rct"]}),
        ("systematic reviews on exercise and IQ", "on exercise and IQ",
         {"designs": ["systematic_review", "meta_analysis"]}),
        ("meta-analyses of working memory training", "of working memory training",
         {"designs": ["meta_analysis"]}),
        ("Is iodine good for IQ, excluding case reports?", "Is iodine good for IQ?",
         {"exclude_designs": ["case_report"]}),
        ("Does lead lower IQ in humans?", "Does lead lower IQ?", {"humans": True}),
        ("IQ and income in JAMA", "IQ and income", {"journal": "JAMA"}),
        ("Is coffee harmful? published in Nature", "Is coffee harmful?", {"journal": "Nature"}),
        ("Is a randomized trial feasible?", "Is a randomized trial feasible?", {}),
        ("Changes in Science education", "Changes in Science education", {}),
    ],
)
def test_design_species_and_journal_filters_in_plain_words(question: str, text: str,
                                                           wanted: dict) -> None:
    searched, filters = parse_filters(question)
    assert (searched, filters.as_dict()) == (text, wanted)


def test_filters_match_design_species_and_journal() -> None:
    rct = {"design": "rct", "humans": True, "journal": "N. Engl. J. Med."}
    mouse = {"design": "animal_in_vitro", "humans": False, "journal": "Nature"}
    assert Filters(designs=["rct"]).matches(rct) and not Filters(designs=["rct"]).matches(mouse)
    assert not Filters(exclude_designs=["rct"]).matches(rct)
    assert Filters(humans=True).matches(rct) and not Filters(humans=True).matches(mouse)
    assert Filters(journal="n engl j med").matches(rct)
    assert not Filters(journal="N Engl J Med").matches(mouse)
    assert Filters(designs=["rct"]).describe() == "design: RCT"


def test_milvus_expressions_carry_the_same_filters() -> None:
    expr = filter_expression(Filters(designs=["rct"], exclude_designs=["case_report"],
                                     journal="N. Engl. J. Med.", humans=True))
    assert '(metadata["design"] == "rct")' in expr
    assert 'metadata["design"] != "case_report"' in expr
    assert 'metadata["journal_key"] == "n engl j med"' in expr
    assert 'metadata["design"] != "animal_in_vitro"' in expr


# -- ranking: retracted last, stronger designs first when asked --------------------------------
def _doc(pmid: str, score: float, **meta) -> Document:
    return Document(page_content=pmid, metadata={"pmid": pmid, "rrf_score": score, **meta})


def test_a_retracted_article_never_leads_but_stays_listed() -> None:
    docs = [_doc("1", 0.9, retracted=True), _doc("2", 0.5), _doc("3", 0.4)]
    assert [d.metadata["pmid"] for d in retracted_last(docs)] == ["2", "3", "1"]


def test_prefer_design_boosts_stronger_designs_only_when_on() -> None:
    docs = [_doc("1", 0.30, design="case_report"), _doc("2", 0.28, design="meta_analysis")]
    assert [d.metadata["pmid"] for d in prefer_designs(docs, 0.0)] == ["1", "2"]
    assert [d.metadata["pmid"] for d in prefer_designs(docs, 0.5)] == ["2", "1"]


# -- the index's metadata schema ---------------------------------------------------------------
_SCHEMA1_KEYS = {"pmid", "title", "authors", "journal", "year", "month", "day", "doi",
                 "mesh_terms", "url", "chunk_index", "chunk_id"}


def _as_schema1(cfg, articles: list[Article]) -> None:
    """Republish the current build as a metadata-schema-1 build wrote it (the shipped index)."""
    folder, manifest = open_current(cfg)
    loc = location(cfg)
    new = new_build_dir(loc)
    for f in folder.iterdir():
        if f.name != "manifest.json":
            shutil.copy(f, new / f.name)
    stored = read_chunks(new)
    write_chunks(new, [
        Chunk(p, m["chunk_index"], t, {k: v for k, v in m.items() if k in _SCHEMA1_KEYS})
        for p, t, m in zip(stored.pmids, stored.texts, stored.metadata, strict=True)
    ])
    write_articles(new, {a.pmid: schema1_article_hash(a) for a in articles})
    publish(loc, new, manifest.model_copy(update={"metadata_schema": 1}))


def test_an_old_index_is_refused_then_upgraded_without_embedding(tmp_path, tokenizer) -> None:  # noqa: F811
    from indexing.commands.common import index_state

    cfg = cfg_at(tmp_path)
    articles = [*_parse(DATA / "retracted_pubmed.xml").values(),
                Article(pmid="7", title="Lead and IQ", abstract="In this prospective cohort of "
                        "900 children, blood lead predicted lower IQ at age seven years. " * 3)]
    build_index(cfg, articles, embedder=HashEmbedder(tokenizer))
    _as_schema1(cfg, articles)
    with pytest.raises(IndexMismatchError, match=r"schema 1.*index build --if-needed"):
        open_current(cfg)
    assert index_state(cfg, "") == "stale"  # `index build --if-needed` upgrades it
    embedder = HashEmbedder(tokenizer)
    manifest = build_index(cfg, articles, reuse=True, embedder=embedder)
    assert (manifest.embedded_articles, manifest.reused_articles) == (0, 2)
    assert embedder.calls == 0 and manifest.metadata_schema == 2
    folder, _ = open_current(cfg)
    meta = {m["pmid"]: m for m in read_chunks(folder).metadata}
    assert meta["24090588"]["retracted"] is True and meta["7"]["design"] == "cohort"


# -- what the chat shows ------------------------------------------------------------------------
def test_source_line_and_side_panel_show_design_retraction_and_links() -> None:
    from app.render import passage_markdown, search_summary, source_line
    from chains.result import PreparedEvent, Source

    source = Source(n=2, pmid="24090588", title="Simvastatin <b>trial</b>", url="",
                    abstract="<img src=x onerror=alert(1)> We randomly assigned children.",
                    design="rct", design_source="publication type",
                    design_rule="Randomized Controlled Trial", retracted=True,
                    retraction_notices=["99999901"], doi="10.1016/S1474-4422(13)70227-8",
                    pmc="PMC5442267", mesh_major=["Simvastatin"])
    line = source_line(source)
    assert "`RCT`" in line and "**RETRACTED**" in line and "<b>" not in line
    panel = passage_markdown(source)
    assert panel.startswith("⚠️ **RETRACTED**") and "\\<img" in panel  # escaped: inert text
    assert not re.search(r"(?<!\\)<img", panel)
    assert "(https://doi.org/10.1016/S1474-4422%2813%2970227-8)" in panel
    assert "(https://pmc.ncbi.nlm.nih.gov/articles/PMC5442267/)" in panel
    assert "**MeSH major topics:** Simvastatin" in panel and "Randomized Controlled Trial" in panel
    plain = source.model_copy(update={"retracted": False, "doi": None, "pmc": None})
    assert "RETRACTED" not in source_line(plain) + passage_markdown(plain)
    assert "doi.org" not in passage_markdown(plain)
    step = search_summary("q", PreparedEvent(searched_question="q", filters={"designs": ["rct"]}))
    assert "**Filters:** design\\: RCT" in step  # escaped markdown; shows "design: RCT"


def test_the_model_verdict_never_reads_a_retracted_article(monkeypatch) -> None:
    from eval.verdict.decider import VerdictDecider
    from eval.verdict.scoring import VerdictOutcome

    read: list[list[str]] = []

    def decide(self, llm, question, docs):
        read.append([d.metadata["pmid"] for d in docs])
        return VerdictOutcome("no", {})

    monkeypatch.setattr(VerdictDecider, "fit", lambda self, q, docs, count: list(docs))
    monkeypatch.setattr(VerdictDecider, "_decide", decide)
    decider = VerdictDecider("classifier", None, "", "", "")  # type: ignore[arg-type]
    docs = [_doc("1", 0.9, retracted=True), _doc("2", 0.5)]
    outcome = decider.decide(None, "q", docs, len)  # type: ignore[arg-type]
    assert read == [["2"]] and outcome.sources == [2]  # [2]: its position among the sources
    assert decider.decide(None, "q", docs[:1], len).verdict is None  # type: ignore[arg-type]
