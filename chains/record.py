"""The answer record: one JSON shape for an answer, printed by ``ask --json`` and returned by the
HTTP API, the OpenAI-compatible endpoint and the MCP ``ask`` tool (the chat renders the same
:class:`~chains.result.AnswerResult` it is made from).

It is the whole :class:`~chains.result.AnswerResult` (answer, verdict and its reason, lead,
findings, timings, ...) with each source complete (PMID, title, authors, journal, year, study
design and the rule that set it, stance and its deciding sentence, retraction flag, DOI, PMC id,
retrieval ranks and scores) plus its links (PubMed, DOI, PMC) and the reference list.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from chains.references import vancouver, vancouver_list
from chains.result import AnswerResult, Source

PUBMED_URL = "https://pubmed.ncbi.nlm.nih.gov/{}/"
DOI_URL = "https://doi.org/{}"
PMC_URL = "https://pmc.ncbi.nlm.nih.gov/articles/{}/"


class Links(BaseModel):
    """Where an article can be read."""

    pubmed: str
    doi: str | None = None
    pmc: str | None = None


def links(pmid: str, doi: str | None, pmc: str | None) -> Links:
    pmc_id = None
    if pmc:
        pmc_id = pmc if pmc.upper().startswith("PMC") else f"PMC{pmc}"
    return Links(pubmed=PUBMED_URL.format(pmid), doi=DOI_URL.format(doi) if doi else None,
                 pmc=PMC_URL.format(pmc_id) if pmc_id else None)


class SourceRecord(Source):
    """A source as the record gives it: every :class:`Source` field, its links and its
    reference in Vancouver style."""

    links: Links
    reference: str = ""


class AnswerRecord(AnswerResult):
    """The answer record (see the module docstring)."""

    sources: list[SourceRecord] = Field(default_factory=list)  # type: ignore[assignment]
    references: list[str] = Field(default_factory=list)  # "1. Author A, ... PMID: ..."
    findings_heading: str = ""  # the title over the key findings (chat and ask)


def source_record(source: Source) -> SourceRecord:
    return SourceRecord(**source.model_dump(), links=links(source.pmid, source.doi, source.pmc),
                        reference=vancouver(source))


def answer_record(result: AnswerResult) -> AnswerRecord:
    data: dict[str, Any] = result.model_dump(exclude={"sources"})
    return AnswerRecord(**data, sources=[source_record(s) for s in result.sources],
                        references=vancouver_list(result.sources),
                        findings_heading=result.findings_title() if result.key_findings() else "")


def record_json(result: AnswerResult) -> dict[str, Any]:
    """The record as plain JSON data (what ``ask --json`` prints)."""
    return answer_record(result).model_dump(mode="json")
