"""Request and response bodies of the HTTP API (pydantic: the OpenAPI schema and /api/docs come
from these). Unknown fields are refused (422 naming the field), so a misspelt filter is an error,
not a filter silently ignored."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from chains.modes import mode_names
from chains.record import AnswerRecord, Links, links
from chains.result import Source
from ingest.design import DESIGNS
from retrievers.filters import Filters

ExportFormat = Literal["ris", "bibtex", "vancouver"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FilterSpec(_Strict):
    """Restrictions applied to the search, on top of any the question's words set ("after 2020",
    "RCTs only"). Every key is optional; an unknown key is refused."""

    year_min: int | None = Field(None, ge=1800, le=2200, description="published in or after")
    year_max: int | None = Field(None, ge=1800, le=2200, description="published in or before")
    title_contains: list[str] = Field(default_factory=list, max_length=10)
    author: str | None = Field(None, min_length=1, max_length=100, description="a surname")
    designs: list[str] = Field(default_factory=list,
                               description=f"only these study designs: {', '.join(DESIGNS)}")
    exclude_designs: list[str] = Field(default_factory=list, description="not these designs")
    humans: bool | None = Field(None, description="true: drop animal and in-vitro studies")
    journal: str | None = Field(None, min_length=1, max_length=200)

    @field_validator("designs", "exclude_designs")
    @classmethod
    def _known_designs(cls, values: list[str]) -> list[str]:
        unknown = [v for v in values if v not in DESIGNS]
        if unknown:
            raise ValueError(f"unknown study design {unknown[0]!r}: use {', '.join(DESIGNS)}")
        return values

    def to_filters(self) -> Filters:
        return Filters(**self.model_dump())


class HistoryTurn(_Strict):
    """One earlier turn of the conversation."""

    question: str = Field(min_length=1, max_length=20_000)
    answer: str = Field(max_length=50_000)


def check_mode(mode: str | None) -> str | None:
    if mode is not None and mode not in mode_names():
        raise ValueError(f"unknown mode {mode!r}: use one of {', '.join(mode_names())}")
    return mode


class AskRequest(_Strict):
    question: str = Field(description="the question (its length limit is chains."
                          "max_question_chars)", examples=["Is intelligence heritable?"])
    mode: str | None = Field(None, description=f"one of {', '.join(mode_names())}; default: "
                             "chains.mode")
    history: list[HistoryTurn] = Field(default_factory=list,
                                       description="earlier turns, oldest first (follow-ups)")
    filters: FilterSpec | None = None
    conversation_id: str | None = Field(
        None, max_length=64,
        description="a stored conversation of yours (GET /api/v1/conversations): its turns are "
        "the history and the answer is stored in it")
    stream: bool = Field(False, description="Server-Sent Events: search, finding..., sources, "
                         "token..., result")

    _mode = field_validator("mode")(check_mode)


class SearchRequest(_Strict):
    query: str = Field(examples=["sleep duration and cognition in children"])
    filters: FilterSpec | None = None
    k: int = Field(10, ge=1, le=50, description="articles returned")


class SearchHit(BaseModel):
    rank: int
    pmid: str
    title: str
    year: int | None = None
    journal: str = ""
    authors: list[str] = Field(default_factory=list)
    design: str | None = None
    retracted: bool = False
    passage: str = Field("", description="the best-matching chunk of the abstract")
    confidence: float
    fused_score: float | None = Field(None, description="the fused score (RRF or convex)")
    ranks: dict[str, int | None] = Field(default_factory=dict,
                                         description="rank in each retriever (bm25, dense)")
    scores: dict[str, float | None] = Field(default_factory=dict,
                                            description="score in each retriever")
    links: Links


class SearchResponse(BaseModel):
    query: str = Field(description="the searched text (filter phrases taken out)")
    filters: dict[str, Any]
    hybrid: bool = Field(description="false: keyword search only (the dense index is building)")
    hits: list[SearchHit]


def search_response(searched: str, filters: dict[str, Any], hybrid: bool,
                    sources: list[Source]) -> SearchResponse:
    """The ranked sources of a search as the API and MCP return them."""
    return SearchResponse(query=searched, filters=filters, hybrid=hybrid, hits=[
        SearchHit(rank=s.n, pmid=s.pmid, title=s.title, year=s.year, journal=s.journal,
                  authors=s.authors, design=s.design, retracted=s.retracted,
                  passage=s.passage, confidence=s.confidence,
                  fused_score=s.rrf_score if s.rrf_score is not None else s.fused_score,
                  ranks=s.ranks, scores=s.scores, links=links(s.pmid, s.doi, s.pmc))
        for s in sources])


class Article(BaseModel):
    pmid: str
    title: str
    abstract: str
    year: int | None = None
    journal: str = ""
    authors: list[str] = Field(default_factory=list)
    volume: str = ""
    issue: str = ""
    pages: str = ""
    doi: str | None = None
    pmc: str | None = None
    design: str | None = None
    design_rule: str = ""
    design_source: str = ""
    publication_types: list[str] = Field(default_factory=list)
    mesh_terms: list[str] = Field(default_factory=list)
    mesh_major: list[str] = Field(default_factory=list)
    retracted: bool = False
    retraction_notices: list[str] = Field(default_factory=list)
    links: Links
    reference: str = Field("", description="Vancouver style")


class Health(BaseModel):
    status: Literal["ok"] = "ok"


class Ready(BaseModel):
    ready: bool
    reason: str = ""
    index: Literal["hybrid", "keyword-only", "loading", "missing"]
    model_loaded: bool
    model: str
    queue: int = Field(description="questions waiting or being answered")
    max_queue: int


class ConversationSummary(BaseModel):
    id: str
    name: str | None = None
    created_at: str | None = None


class ConversationTurns(BaseModel):
    id: str
    turns: list[dict[str, Any]]


class NewConversation(_Strict):
    name: str | None = Field(None, max_length=200)


class ErrorBody(BaseModel):
    detail: Any


__all__ = ["AnswerRecord", "Article", "AskRequest", "ConversationSummary", "ConversationTurns",
           "ErrorBody", "ExportFormat", "FilterSpec", "Health", "HistoryTurn", "NewConversation",
           "Ready", "SearchHit", "SearchRequest", "SearchResponse"]
