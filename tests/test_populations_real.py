"""The population lexicon's headings are the corpus's own: every MeSH check tag of
chains.populations, and the "Persons" headings its group words stand for, is a descriptor of the
shared PubMedQA articles (skipped, saying why, without ../shared/data)."""

from __future__ import annotations

import gzip
import re

from chains.populations import CHECK_TAGS
from tests.conftest import PUBMED_DIR
from tests.helpers import need

# the "Persons" branch headings the lay words of CHECK_TAGS["Persons"] name
PERSONS = ("Students, Nursing", "Students, Medical", "Physicians", "Internship and Residency",
           "Athletes", "Survivors", "Parents", "Twins")  # fmt: skip


def test_every_heading_of_the_lexicon_is_a_mesh_descriptor_of_the_corpus() -> None:
    xml = need(PUBMED_DIR / "pubmedqa_pqal.xml.gz")
    with gzip.open(xml, "rt", encoding="utf-8") as fh:
        found = set(re.findall(r"<DescriptorName[^>]*>([^<]+)<", fh.read()))
    headings = [h for h in CHECK_TAGS if h != "Persons"] + list(PERSONS)
    assert not [h for h in headings if h not in found]
