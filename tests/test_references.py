"""Citation export (chains.references) on real parsed PubMed records: the RIS file read back by
rispy and the BibTeX file read back by pybtex (another implementation than the writer) give the
source records' fields; the Vancouver reference; the bibliographic fields ingest keeps."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import rispy
from langchain_core.documents import Document
from pybtex.database import parse_string
from pylatexenc.latex2text import LatexNodes2Text

from chains.answer import to_source
from chains.references import page_range, to_bibtex, to_ris, vancouver, vancouver_list
from chains.result import Source
from indexing.build import article_hash
from ingest.medline import iter_medline
from ingest.metadata import chunk_metadata
from ingest.models import Article
from ingest.pubmed_xml import iter_pubmed_xml
from tests.conftest import SHARED_DATA
from tests.helpers import need

FIXTURES = SHARED_DATA / "fixtures"


def _articles() -> list[Article]:
    """Every efetch and MEDLINE fixture record, and shared-corpus records whose titles hold the
    characters BibTeX and RIS must carry (braces, %, &, $, #, _, Greek, accents)."""
    out: list[Article] = []
    for path in sorted(need(FIXTURES / "efetch").glob("*.xml")):
        with path.open("rb") as fh:
            out += [a for a in iter_pubmed_xml(fh, path.name) if isinstance(a, Article)]
    for path in sorted(need(FIXTURES / "medline").glob("*.txt")):
        with path.open(encoding="utf-8") as fh:
            out += [a for a in iter_medline(fh, path.name) if isinstance(a, Article)]
    tricky = re.compile(r"[{}%&$#_\\~^]|[^\x00-\x7f]")
    with need(SHARED_DATA / "pubmed" / "intelligence_2013_2022.xml.gz").open("rb") as raw:
        import gzip

        with gzip.open(raw) as fh:
            for a in iter_pubmed_xml(fh):
                if isinstance(a, Article) and tricky.search(a.title + a.abstract):
                    out.append(a)
                    if len(out) > 60:
                        break
    return out


@pytest.fixture(scope="module")
def articles() -> list[Article]:
    return _articles()


def _sources(articles: list[Article]) -> list[Source]:
    return [
        to_source(n, Document(page_content=a.abstract, metadata=chunk_metadata(a)), a.abstract)
        for n, a in enumerate(articles, 1)
    ]


def _latex(text: str) -> str:
    braces = text.replace(r"\textbraceleft{}", "\x01").replace(r"\textbraceright{}", "\x02")
    decoded = LatexNodes2Text().latex_to_text(braces).replace("ˆ", "^")
    return decoded.replace("\x01", "{").replace("\x02", "}")


def test_ingest_keeps_volume_issue_pages_pmc_id_and_surnames(articles: list[Article]) -> None:
    by_pmid = {a.pmid: a for a in articles}
    a = by_pmid["28775130"]  # efetch/pubmed5.xml
    assert (a.volume, a.issue, a.pages, a.pmc) == ("75", "2", "79-89", "PMC5771820")
    assert a.authors[1] == "Laura E Beane Freeman" and a.author_last_names[1] == "Beane Freeman"
    m = by_pmid["16377612"]  # medline/pubmed_result2.txt
    assert (m.volume, m.issue, m.pages, m.journal) == ("22", "5", "616-7", "Bioinformatics")
    assert by_pmid["16403221"].pmc == "PMC1373603"
    assert by_pmid["14871861"].author_last_names[0] == "de Hoon"
    assert all(len(x.author_last_names) == len(x.authors) for x in articles if x.volume)


def test_bibliographic_fields_do_not_change_the_article_hash(articles: list[Article]) -> None:
    """An index built before they were kept reuses every vector (indexing.build)."""
    a = next(x for x in articles if x.volume and x.pmc)
    bare = a.model_copy(update={"volume": None, "issue": None, "pages": None, "pmc": None,
                                "author_last_names": []})  # fmt: skip
    assert article_hash(a) == article_hash(bare)
    assert article_hash(a) != article_hash(a.model_copy(update={"title": a.title + " x"}))


def test_ris_reads_back_as_the_source_records(articles: list[Article]) -> None:
    records = rispy.loads(to_ris(_sources(articles)))
    assert len(records) == len(articles)
    for rec, a in zip(records, articles, strict=True):
        assert rec["type_of_reference"] == "JOUR"
        assert rec["accession_number"] == a.pmid
        assert rec["title"] == " ".join(a.title.split())
        assert rec.get("authors", []) == [
            f"{last}, {name[: name.rfind(last)].strip()}" if last else name
            for name, last in zip(a.authors, a.author_last_names, strict=True)
        ]
        assert rec.get("secondary_title", "") == a.journal
        assert rec.get("year", "") == str(a.year or "")
        assert rec.get("volume", "") == (a.volume or "")
        assert rec.get("number", "") == (a.issue or "")
        first, last = page_range(a.pages or "")
        assert (rec.get("start_page", ""), rec.get("end_page", "")) == (first, last)
        assert rec.get("doi") == a.doi
        assert rec.get("notes", []) == ([f"PMCID: {a.pmc}"] if a.pmc else [])
        assert rec.get("abstract", "") == " ".join(a.abstract.split())
        assert rec.get("keywords", []) == a.mesh_terms


def test_bibtex_reads_back_as_the_source_records(articles: list[Article]) -> None:
    text = to_bibtex(_sources(articles))
    entries = list(parse_string(text, "bibtex").entries.values())
    assert len(entries) == len(articles)
    for entry, a in zip(entries, articles, strict=True):
        f = entry.fields
        assert entry.type == "article"
        assert f["pmid"] == a.pmid
        assert _latex(f["title"]) == " ".join(a.title.split())
        people = entry.persons.get("author", [])
        assert len(people) == len(a.authors)
        for person, name, last in zip(people, a.authors, a.author_last_names, strict=True):
            got = _latex(" ".join(person.prelast_names + person.last_names))
            assert got == (last or name)
        assert _latex(f.get("journal", "")) == a.journal
        assert f.get("year", "") == str(a.year or "")
        assert f.get("volume", "") == (a.volume or "") and f.get("number", "") == (a.issue or "")
        first, last_page = page_range(a.pages or "")
        assert f.get("pages", "") == (f"{first}--{last_page}" if last_page else first)
        assert f.get("doi") == a.doi
        assert f.get("pmcid", "") == (a.pmc or "")
        assert _latex(f.get("abstract", "")) == " ".join(a.abstract.split())


def test_vancouver_reference_of_a_real_record(articles: list[Article]) -> None:
    by_n = {s.pmid: s for s in _sources(articles)}
    assert vancouver(by_n["28775130"]) == (
        "Lerro CC, Beane Freeman LE, DellaValle CT, Kibriya MG, Aschebrook-Kilfoy B, Jasmine F, "
        "et al. Occupational pesticide exposure and subclinical hypothyroidism among male "
        "pesticide applicators. Occup Environ Med. 2018;75(2):79-89. "
        "doi:10.1136/oemed-2017-104431. PMID: 28775130; PMCID: PMC5771820."
    )
    assert vancouver(by_n["16377612"]).startswith(
        "Pritchard L, White JA, Birch PRJ, Toth IK. "
    )
    assert "Bioinformatics. 2006;22(5):616-7. doi:10.1093/bioinformatics/btk021." in vancouver(
        by_n["16377612"]
    )


def test_vancouver_lists_six_authors_then_et_al() -> None:
    def src(n_authors: int) -> Source:
        names = [f"Ann {chr(65 + i)}lpha" for i in range(n_authors)]
        return Source(n=1, pmid="1", title="T", url="u", authors=names, year=2020, journal="J",
                      author_last_names=[n.split()[1] for n in names])  # fmt: skip

    six, seven = vancouver(src(6)), vancouver(src(7))
    assert "et al" not in six and six.count("A,") + six.count("A.") == 6
    assert seven.startswith("Alpha A, Blpha A, Clpha A, Dlpha A, Elpha A, Flpha A, et al. T. J.")
    assert "Glpha" not in seven


def test_an_index_without_surnames_still_splits_names() -> None:
    """The real index was built before surnames were kept: the display name is split, particles
    kept with the surname."""
    s = Source(n=2, pmid="9", title="T?", url="u", authors=["Jan van der Berg", "WHO Group"],
               year=2001)  # fmt: skip
    assert vancouver_list([s]) == ["2. van der Berg J, Group WHO. T? 2001. PMID: 9."]


def test_reference_files_for_empty_fields_stay_valid(tmp_path: Path) -> None:
    s = Source(n=1, pmid="5", title="{Unbalanced brace and 100% & $x$", url="u")
    assert rispy.loads(to_ris([s]))[0]["title"] == s.title
    entry = next(iter(parse_string(to_bibtex([s]), "bibtex").entries.values()))
    assert _latex(entry.fields["title"]) == s.title


# ---- python -m app ask, for real on the small real index ----------------------------------------

ASKED = "Is childhood intelligence associated with health in later life?"


def _ask(cfg_file: Path, *args: str) -> str:
    """``python -m app --config cfg_file ask ARGS``'s printed output, through the CLI's entry
    point in this process (tests/cli_inprocess.py; test_cli_paths runs ``ask`` as a process)."""
    from tests.cli_inprocess import app_in_process

    out = app_in_process(cfg_file, "ask", *args)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.fixture(scope="module")
def small_cfg_file(small_index_cfg, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.browser.harness import write_test_config

    return write_test_config(small_index_cfg, tmp_path_factory.mktemp("ask") / "cfg.yaml")


def test_ask_format_ris_prints_the_sources_as_an_ris_file(small_index_cfg,
                                                          small_cfg_file: Path) -> None:
    """The records are the indexed articles' own fields; the file is all that is printed."""
    from indexing.build import read_chunks
    from indexing.store import open_current

    folder, _ = open_current(small_index_cfg)
    meta = {m["pmid"]: m for m in read_chunks(folder).metadata}
    out = _ask(small_cfg_file, "--format", "ris", ASKED)
    assert out.startswith("TY  - JOUR\n"), out[:80]  # the file alone, no "1." lines
    assert all(re.fullmatch(r"[A-Z][A-Z0-9]  - .*|", line) for line in out.splitlines())
    records = rispy.loads(out)
    assert len(records) >= 2
    for rec in records:
        m = meta[rec["accession_number"]]
        assert rec["title"] == " ".join(m["title"].split())
        assert rec.get("year", "") == str(m.get("year") or "")
        assert rec.get("secondary_title", "") == m.get("journal", "")
        assert len(rec.get("authors", [])) == len(m.get("authors") or [])
        assert rec.get("doi") == m.get("doi")


def test_ask_text_output_ends_with_the_vancouver_references(small_cfg_file: Path) -> None:
    out = _ask(small_cfg_file, ASKED)
    refs = out.split("\nReferences:\n", 1)[1].strip().splitlines()
    sources = out.split("\nSources:\n", 1)[1].split("\nReferences:", 1)[0]
    assert len(refs) == sources.count("https://pubmed.ncbi.nlm.nih.gov/")
    assert all(re.match(rf"{i}\. .+\. PMID: \d+\.$", r) for i, r in enumerate(refs, 1)), refs


def test_ask_text_output_names_the_filters_in_words(small_cfg_file: Path) -> None:
    out = _ask(small_cfg_file, "Is intelligence heritable? RCTs only, after 2015")
    line = next(x for x in out.splitlines() if x.startswith("Filters: "))
    assert line == "Filters: year >= 2016, design: RCT", line  # not the raw dict
