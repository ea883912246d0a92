"""The article's links, made in one place: its PubMed page, its DOI and its free PMC full text."""

from __future__ import annotations

from urllib.parse import quote

PUBMED_URL = "https://pubmed.ncbi.nlm.nih.gov/{pmid}/"
DOI_URL = "https://doi.org/{doi}"
PMC_URL = "https://pmc.ncbi.nlm.nih.gov/articles/{pmc}/"


def pubmed_url(pmid: str) -> str:
    return PUBMED_URL.format(pmid=quote(str(pmid).strip(), safe=""))


def doi_url(doi: str) -> str:
    return DOI_URL.format(doi=quote(doi.strip(), safe="/"))


def pmc_url(pmc: str) -> str:
    return PMC_URL.format(pmc=quote(pmc.strip(), safe=""))
