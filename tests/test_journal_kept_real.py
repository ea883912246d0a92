"""Every record of the shared corpora whose PubMed XML names its journal (Journal/Title,
ISOAbbreviation or MedlineTA) keeps it through ingest, so source lines, references and RIS/BibTeX
can show it (issue #36). In these files only about 4.3k of the 15.7k intelligence records carry a
journal at all (their <Journal> holds only the issue date); the others have none to show."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

from ingest.models import Article
from ingest.sources import iter_file
from tests.helpers import need

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "pubmed"
_RECORD = re.compile(rb"<PubmedArticle>.*?</PubmedArticle>", re.DOTALL)
_PMID = re.compile(rb"<PMID[^>]*>(\d+)</PMID>")
_JOURNAL = re.compile(rb"<(?:ISOAbbreviation|MedlineTA)>|<Journal>.*?<Title>", re.DOTALL)


def test_every_journal_in_the_xml_is_kept() -> None:
    for name in ("intelligence_2013_2022.xml.gz", "pubmedqa_pqal.xml.gz"):
        path = need(SHARED / name)
        with gzip.open(path, "rb") as f:
            raw = f.read()
        named = {_PMID.search(r).group(1).decode() for r in _RECORD.findall(raw)  # type: ignore[union-attr]
                 if _JOURNAL.search(r)}
        parsed = {a.pmid: a.journal for a in iter_file(path) if isinstance(a, Article)}
        lost = sorted(p for p in named if not parsed.get(p))
        assert not lost, f"{name}: {len(lost)} journals lost, e.g. {lost[:5]}"
        assert not [p for p, j in parsed.items() if j and p not in named]
