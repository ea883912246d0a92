"""Corpus discovery, loading (dedupe, deletions, short abstracts, NFC), checksum, ensure_corpus,
the ``ingest`` command, and one load of the real 16.7k-article corpus for the whole session."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import unicodedata
from pathlib import Path

import pytest

from app.cli import main
from app.config import config_from_dict
from ingest.corpus import (
    corpus_checksum,
    ensure_corpus,
    find_corpus_files,
    load_corpus,
)
from ingest.errors import CorpusError, CorpusNotFoundError, FetchError
from tests.helpers import need

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
LONG = (
    "This abstract is long enough to be kept by the default filter of one hundred characters, "
    "which drops only the stubs."
)


def cfg_for(root: Path, paths: list[str], min_chars: int = 20, **fetch):
    corpus = {"paths": paths, "min_abstract_chars": min_chars}
    if fetch:
        corpus["fetch"] = fetch
    return config_from_dict({"corpus": corpus}, root=root)


def xml_record(pmid: str, abstract: str = LONG, version: int = 1, title: str = "T") -> str:
    return (
        f'<PubmedArticle><MedlineCitation><PMID Version="{version}">{pmid}</PMID><Article>'
        f"<ArticleTitle>{title}</ArticleTitle><Abstract><AbstractText>{abstract}</AbstractText>"
        "</Abstract></Article></MedlineCitation></PubmedArticle>"
    )


def write_xml(path: Path, *records: str, gz: bool = False) -> Path:
    data = ("<PubmedArticleSet>" + "".join(records) + "</PubmedArticleSet>").encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


# --- discovery -------------------------------------------------------------------------------


def test_find_corpus_files_folders_globs_and_missing_entries(tmp_path):
    a = write_xml(tmp_path / "data" / "b.xml", xml_record("1"))
    b = write_xml(tmp_path / "data" / "a.xml.gz", xml_record("2"), gz=True)
    (tmp_path / "data" / "README.md").write_text("not a corpus file")
    (tmp_path / "data" / "a.xml.gz.md5").write_text("checksum")
    c = tmp_path / "more" / "x.medline"
    c.parent.mkdir()
    c.write_text(f"PMID- 3\nTI  - T\nAB  - {LONG}\n")
    cfg = cfg_for(tmp_path, ["absent/", "data/", "more/*.medline", "data/b.xml"])
    assert find_corpus_files(cfg) == [b.resolve(), a.resolve(), c.resolve()]


def test_no_corpus_files_says_where_and_how_to_fetch(tmp_path):
    (tmp_path / "empty").mkdir()
    cfg = cfg_for(tmp_path, ["empty/", "nowhere/*.xml"])
    with pytest.raises(CorpusNotFoundError) as err:
        find_corpus_files(cfg)
    assert str(tmp_path / "empty") in str(err.value)
    assert "python -m app ingest --fetch" in str(err.value)


def test_missing_explicit_file_is_named(tmp_path):
    cfg = cfg_for(tmp_path, [])
    with pytest.raises(CorpusNotFoundError, match=r"gone\.xml"):
        load_corpus(cfg, [tmp_path / "gone.xml"])


# --- loading rules ---------------------------------------------------------------------------


def test_dedupe_newer_record_wins_and_stale_copy_does_not(tmp_path):
    first = write_xml(
        tmp_path / "1.xml", xml_record("1", title="old"), xml_record("2", version=2, title="v2")
    )
    second = write_xml(
        tmp_path / "2.xml", xml_record("1", title="new"), xml_record("2", version=1, title="v1")
    )
    load = load_corpus(cfg_for(tmp_path, []), [first, second])
    assert [(a.pmid, a.title) for a in load.articles] == [("1", "new"), ("2", "v2")]
    assert load.report.records_read == 4 and load.report.duplicates_replaced == 2


def test_deletions_short_abstracts_and_bad_records_are_reported(tmp_path):
    base = write_xml(tmp_path / "a.xml", xml_record("1"), xml_record("2"), xml_record("3", "short"))
    update = tmp_path / "b.xml"
    update.write_text(
        "<PubmedArticleSet><DeleteCitation><PMID>2</PMID><PMID>404</PMID></DeleteCitation>"
        + xml_record("4")
        + "<PubmedArticle><MedlineCitation><PMID>5</PMID><Article><ArticleTitle>x</Article>"
        "</MedlineCitation></PubmedArticle></PubmedArticleSet>"
    )
    load = load_corpus(cfg_for(tmp_path, [], min_chars=50), [base, update])
    report = load.report
    assert [a.pmid for a in load.articles] == ["1", "4"]
    assert report.deletions == ["2"]
    assert report.dropped_short == 1 and report.min_abstract_chars == 50
    assert len(report.bad_records) == 1 and report.bad_records[0].pmid == "5"
    assert [(f.records, f.bad) for f in report.files] == [(3, 0), (1, 1)]
    assert json.loads(json.dumps(report.to_dict()))["bad_records"][0]["pmid"] == "5"


def test_text_is_nfc_normalised_and_case_kept(tmp_path):
    decomposed = unicodedata.normalize("NFD", "Ghesquière")
    path = tmp_path / "a.txt"
    path.write_text(f"PMID- 7\nTI  - {decomposed}  STUDY\nAB  - {LONG}\nFAU - {decomposed}, Ann\n")
    (article,) = load_corpus(cfg_for(tmp_path, []), [path]).articles
    assert article.title == "Ghesquière STUDY"
    assert article.authors == ["Ann Ghesquière"]
    assert unicodedata.is_normalized("NFC", article.title)


def test_nothing_usable_is_a_clear_error(tmp_path):
    path = write_xml(tmp_path / "a.xml", xml_record("1", "tiny"))
    with pytest.raises(CorpusError, match="min_abstract_chars"):
        load_corpus(cfg_for(tmp_path, [], min_chars=100), [path])


def test_checksum_changes_when_files_change(tmp_path):
    a = write_xml(tmp_path / "a.xml", xml_record("1"))
    before = corpus_checksum([a])
    assert corpus_checksum([a]) == before
    b = write_xml(tmp_path / "b.xml", xml_record("2"))
    assert corpus_checksum([a, b]) != before
    os.utime(a, ns=(1, 1))
    assert corpus_checksum([a]) != before


# --- ensure_corpus -----------------------------------------------------------------------------


def test_ensure_corpus_returns_existing_files_without_fetching(tmp_path):
    write_xml(tmp_path / "data" / "a.xml", xml_record("1"))

    def fetch(_cfg):
        raise AssertionError("must not fetch when files exist")

    assert len(ensure_corpus(cfg_for(tmp_path, ["data/"]), fetch=fetch)) == 1


def test_ensure_corpus_fetches_into_out_dir_when_empty(tmp_path):
    cfg = cfg_for(tmp_path, ["data/"], out_dir="data")
    calls = []

    def fetch(c):
        calls.append(c)
        write_xml(tmp_path / "data" / "batch_0000000.xml.gz", xml_record("1"), gz=True)

    assert [p.name for p in ensure_corpus(cfg, fetch=fetch)] == ["batch_0000000.xml.gz"]
    assert len(calls) == 1


def test_ensure_corpus_offline_says_where_to_put_files(tmp_path):
    cfg = cfg_for(tmp_path, ["data/"], out_dir="data")

    def fetch(_cfg):
        raise FetchError("network unreachable")

    with pytest.raises(CorpusNotFoundError) as err:
        ensure_corpus(cfg, fetch=fetch)
    assert "network unreachable" in str(err.value) and str(tmp_path / "data") in str(err.value)


# --- the command -----------------------------------------------------------------------------


def _write_cfg(tmp_path: Path, paths: list[str]) -> Path:
    path = tmp_path / "cfg.yaml"
    path.write_text(json.dumps({"corpus": {"paths": paths, "min_abstract_chars": 100}}))
    return path


def test_ingest_command_json_report_on_the_fixtures(tmp_path, capsys):
    fixtures = need(SHARED / "fixtures")
    shutil.copytree(fixtures / "efetch", tmp_path / "corpus", dirs_exist_ok=True)
    shutil.copytree(fixtures / "medline", tmp_path / "corpus", dirs_exist_ok=True)
    assert main(["--config", str(_write_cfg(tmp_path, ["corpus/"])), "ingest", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["corpus"]
    assert len(report["files"]) == 10 and report["records_read"] == 24
    assert report["articles"] + report["dropped_short"] == 24 and not report["bad_records"]


def test_ingest_command_table_lists_bad_records(tmp_path, capsys):
    write_xml(tmp_path / "c" / "a.xml", xml_record("1"), "<PubmedArticle><oops></PubmedArticle>")
    assert main(["--config", str(_write_cfg(tmp_path, ["c/"])), "ingest"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "articles" in out and "bad record" in out and "a.xml:line 1, record 2" in out


def test_ingest_command_without_files_explains_fetch(tmp_path, capsys):
    assert main(["--config", str(_write_cfg(tmp_path, ["none/"])), "ingest"]) == 1
    assert "python -m app ingest --fetch" in capsys.readouterr().err


# --- damaged .xml.gz files: named in the report, the other files still read -------------------


def _good_and(tmp_path: Path, name: str, data: bytes) -> tuple[Path, Path]:
    good = write_xml(tmp_path / "c" / "good.xml", xml_record("1"), xml_record("2"))
    bad = tmp_path / "c" / name
    bad.write_bytes(data)
    return good, bad


def _gz_records(first: int, n: int) -> bytes:
    body = "".join(xml_record(str(i), LONG * 20) for i in range(first, first + n))
    return gzip.compress(f"<PubmedArticleSet>{body}</PubmedArticleSet>".encode())


def _problems(load, path: Path) -> list[str]:  # noqa: ANN001 - a CorpusLoad
    return [b.reason for b in load.report.bad_records if b.file == str(path)]


def test_a_gz_file_that_is_not_gzip_is_named_and_the_others_are_read(tmp_path):
    good, bad = _good_and(tmp_path, "junk.xml.gz", b"\x00\x01 not gzip, not XML " * 20)
    load = load_corpus(cfg_for(tmp_path, ["c/"]), [bad, good])  # the bad one first
    assert sorted(a.pmid for a in load.articles) == ["1", "2"]
    [reason] = _problems(load, bad)
    assert "named .gz but not gzip data" in reason and "download it again" in reason
    assert [(f.path, f.records, f.bad) for f in load.report.files] == [
        (str(bad), 0, 1), (str(good), 2, 0),
    ]  # fmt: skip


def test_gzip_cut_mid_stream_keeps_its_whole_records_and_names_the_break(tmp_path):
    whole = _gz_records(100, 200)
    good, bad = _good_and(tmp_path, "cut.xml.gz", whole[: len(whole) // 2])
    load = load_corpus(cfg_for(tmp_path, ["c/"]), [bad, good])  # the bad one first
    pmids = {a.pmid for a in load.articles}
    assert {"1", "2"} <= pmids
    cut = pmids - {"1", "2"}
    assert 0 < len(cut) < 200 and cut == {str(i) for i in range(100, 100 + len(cut))}
    [reason] = _problems(load, bad)
    assert "compressed data ends early" in reason


def test_gzip_cut_in_its_header_is_named_and_the_others_are_read(tmp_path):
    good, bad = _good_and(tmp_path, "stub.xml.gz", _gz_records(100, 5)[:12])
    load = load_corpus(cfg_for(tmp_path, ["c/"]), [bad, good])  # the bad one first
    assert sorted(a.pmid for a in load.articles) == ["1", "2"]
    [reason] = _problems(load, bad)
    assert "damaged gzip data" in reason and "download it again" in reason


def test_only_damaged_gz_files_give_an_error_naming_each(tmp_path):
    whole = _gz_records(100, 5)
    junk = tmp_path / "c" / "junk.xml.gz"
    junk.parent.mkdir(parents=True)
    junk.write_bytes(b"plain text, not gzip")
    stub = tmp_path / "c" / "stub.xml.gz"
    stub.write_bytes(whole[:12])
    with pytest.raises(CorpusError) as err:
        load_corpus(cfg_for(tmp_path, ["c/"]), [junk, stub])
    message = str(err.value)
    assert f"{junk}: line 1: named .gz but not gzip data" in message
    assert f"{stub}: line 1: damaged gzip data" in message


def test_ingest_command_names_the_damaged_files(tmp_path, capsys):
    whole = _gz_records(100, 200)
    _, cut = _good_and(tmp_path, "cut.xml.gz", whole[: len(whole) // 2])
    junk = tmp_path / "c" / "junk.xml.gz"
    junk.write_bytes(b"plain text, not gzip")
    assert main(["--config", str(_write_cfg(tmp_path, ["c/"])), "ingest", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["corpus"]
    bad = {Path(b["file"]).name: b["reason"] for b in report["bad_records"]}
    assert set(bad) == {"cut.xml.gz", "junk.xml.gz"}
    assert "ends early" in bad["cut.xml.gz"] and "not gzip" in bad["junk.xml.gz"]
    records = {Path(f["path"]).name: f["records"] for f in report["files"]}
    assert records["good.xml"] == 2 and records["junk.xml.gz"] == 0
    assert 0 < records["cut.xml.gz"] < 200


# --- the real corpus, loaded once ------------------------------------------------------------


@pytest.fixture(scope="module")
def real_corpus():
    folder = need(SHARED / "pubmed")
    cfg = config_from_dict({"corpus": {"paths": [str(folder)], "min_abstract_chars": 100}})
    return load_corpus(cfg)


def test_real_corpus_counts(real_corpus):
    report = real_corpus.report
    counts = {Path(f.path).name: f.records for f in report.files}
    assert counts == {"intelligence_2013_2022.xml.gz": 15_661, "pubmedqa_pqal.xml.gz": 1_000}
    assert report.records_read == 16_661 and not report.bad_records
    assert report.dropped_short == 5  # the data README's five abstracts under 100 characters
    assert report.articles == len(real_corpus.articles) == 16_656
    assert len({a.pmid for a in real_corpus.articles}) == 16_656


def test_real_corpus_content(real_corpus):
    by_pmid = {a.pmid: a for a in real_corpus.articles}
    lace = by_pmid["21645374"]  # first PubMedQA article: labelled sections, MeSH, year only
    assert lace.abstract.startswith("BACKGROUND: Programmed cell death")
    assert "\nCONCLUSIONS: " in lace.abstract
    assert "Mitochondria" in lace.mesh_terms and lace.year == 2011
    first = by_pmid["24369035"]
    assert first.doi == "10.1016/j.artmed.2013.09.001" and (first.year, first.month) == (2013, 11)
    assert first.authors[0] == "Julio C Silva" and first.journal == "Artif Intell Med"
    assert "\nRESULTS: The performance of GUARDIAN" in first.abstract  # glued heading repaired
    accented = [n for a in real_corpus.articles for n in a.authors if "Ghesqui" in n]
    assert accented and all(unicodedata.is_normalized("NFC", n) for n in accented)
    assert sum(a.year is not None for a in real_corpus.articles) > 16_500
    assert sum(a.doi is not None for a in real_corpus.articles) > 15_000
