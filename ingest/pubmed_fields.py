"""The fields of a PubMed XML record beyond the citation: publication types (with their MeSH
UIs), MeSH major topics, author keywords, language, PMC id, volume/issue/pages and retraction
notices. Read at fixed paths, like :mod:`ingest.pubmed_xml`: ``CommentsCorrectionsList`` holds
other articles' PMIDs, and only its ``RetractionIn`` entries are kept (the notice's PMID).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from ingest.models import PublicationType
from ingest.text import clean


def _text(elem: ET.Element | None) -> str:
    return clean("".join(elem.itertext())) if elem is not None else ""


def evidence_fields(
    record: ET.Element, citation: ET.Element, art: ET.Element
) -> dict[str, Any]:
    """Keyword arguments for :class:`ingest.models.Article` from one ``PubmedArticle``."""
    issue_el = art.find("Journal/JournalIssue")
    return {
        "publication_types": publication_types(art.find("PublicationTypeList")),
        "mesh_major": mesh_major(citation.find("MeshHeadingList")),
        "keywords": keywords(citation),
        "language": _text(art.find("Language")) or None,
        "pmc": pmc_id(record.find("PubmedData/ArticleIdList")),
        "volume": _text(issue_el.find("Volume")) or None if issue_el is not None else None,
        "issue": _text(issue_el.find("Issue")) or None if issue_el is not None else None,
        "pages": _pages(art.find("Pagination")),
        "retraction_notices": retraction_notices(citation.find("CommentsCorrectionsList")),
    }


def _pages(pagination: ET.Element | None) -> str | None:
    """``MedlinePgn``, else ``StartPage-EndPage`` (or the start page alone)."""
    if pagination is None:
        return None
    pages = _text(pagination.find("MedlinePgn"))
    if not pages:
        start, end = _text(pagination.find("StartPage")), _text(pagination.find("EndPage"))
        pages = f"{start}-{end}" if start and end else start
    return pages or None


def publication_types(type_list: ET.Element | None) -> list[PublicationType]:
    if type_list is None:
        return []
    out = []
    for el in type_list.findall("PublicationType"):
        name = _text(el)
        if name:
            out.append(PublicationType(name=name, ui=el.get("UI") or None))
    return out


def mesh_major(mesh_list: ET.Element | None) -> list[str]:
    """Descriptors that are a major topic themselves or through one of their qualifiers."""
    if mesh_list is None:
        return []
    major = []
    for heading in mesh_list.findall("MeshHeading"):
        descriptor = heading.find("DescriptorName")
        name = _text(descriptor)
        flags = [descriptor.get("MajorTopicYN") if descriptor is not None else None]
        flags += [q.get("MajorTopicYN") for q in heading.findall("QualifierName")]
        if name and "Y" in flags:
            major.append(name)
    return major


def keywords(citation: ET.Element) -> list[str]:
    return [k for k in (_text(el) for el in citation.findall("KeywordList/Keyword")) if k]


def pmc_id(id_list: ET.Element | None) -> str | None:
    if id_list is None:
        return None
    for article_id in id_list.findall("ArticleId"):
        value = clean(article_id.text)
        if article_id.get("IdType") == "pmc" and value:
            return value if value.upper().startswith("PMC") else f"PMC{value}"
    return None


def retraction_notices(comments: ET.Element | None) -> list[str]:
    """PMIDs (or, without one, the citation text) of the notices retracting this article."""
    if comments is None:
        return []
    out = []
    for entry in comments.findall("CommentsCorrections"):
        if entry.get("RefType") == "RetractionIn":
            out.append(_text(entry.find("PMID")) or _text(entry.find("RefSource")) or "notice")
    return out
