"""Command-line paths run as real subprocesses: ``ask --history`` with a wrong shape, ``index
update`` on a small corpus of real articles, and ``bench ingest --sample 8``; and the command
modules imported only when their command is named."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.cli_inprocess import app_in_process
from tests.conftest import PUBMED_DIR, REPO, require_shared_data

RECORD = re.compile(rb"<PubmedArticle>.*?</PubmedArticle>", re.DOTALL)
PMID = re.compile(rb"<PMID[^>]*>(\d+)</PMID>")
ABSTRACT = re.compile(rb"(<AbstractText[^>]*>)")


def app(cfg_file: Path, *args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "app", "--config", str(cfg_file), *args],
        cwd=REPO, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def write_cfg(tmp_path: Path, corpus: Path) -> Path:
    cfg_file = tmp_path / "cfg.yaml"
    cfg_file.write_text(yaml.safe_dump({
        "corpus": {"paths": [str(corpus)], "min_abstract_chars": 20},
        # an explicit backend: `auto` would measure every candidate again in this fresh folder
        # (its own test: test_auto_backend.py)
        "index": {"dir": str(tmp_path / "indices"), "name": "small", "embedding_backend": "torch"},
    }))  # fmt: skip
    return cfg_file


def real_records(n: int) -> list[bytes]:
    """The first ``n`` PubmedArticle records of the shared PubMedQA corpus, as they are."""
    require_shared_data()
    with gzip.open(PUBMED_DIR / "pubmedqa_pqal.xml.gz") as fh:
        head = fh.read(400_000)
    records = RECORD.findall(head)[:n]
    assert len(records) == n, "the shared corpus should start with enough records"
    return records


def write_xml(path: Path, records: list[bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b'<?xml version="1.0"?>\n<PubmedArticleSet>\n' + b"\n".join(records)
                     + b"\n</PubmedArticleSet>\n")  # fmt: skip
    return path


def pmid(record: bytes) -> str:
    m = PMID.search(record)
    assert m
    return m.group(1).decode()


# ---- command modules load lazily ---------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["ask", "Does it help?", "--mode", "plain"],
        ["-c", "x.yaml", "eval", "retrieval", "--questions", "q.jsonl", "--json"],
        ["--config=x.yaml", "index", "stats"],
        ["--conf", "x.yaml", "bench", "grounding"],
        ["-cx.yaml", "serve", "--port", "8123"],
    ],
)
def test_the_command_named_is_the_one_the_parser_reads(argv: list[str]) -> None:
    from app.cli import build_parser, named_command

    args = build_parser().parse_args(argv)
    words = [args.command, getattr(args, "subcommand", None)]
    assert named_command(argv) == [w for w in words if w]
    assert vars(build_parser(argv).parse_args(argv)) == vars(args)


def test_only_the_named_command_module_is_imported() -> None:
    """``python -m app eval retrieval --help`` imports eval.retrieval and no other command's
    module (they pull in the models, the index, Chainlit)."""
    from app.cli import COMMANDS

    modules = [t for _h, t in COMMANDS.values() if isinstance(t, str)]
    modules += [m for _h, t in COMMANDS.values() if isinstance(t, dict) for _s, m in t.values()]
    code = (
        "import sys; from app.cli import build_parser\n"
        "argv = ['eval', 'retrieval', '--help']\n"
        "try: build_parser(argv).parse_args(argv)\n"
        "except SystemExit: pass\n"
        f"print(sorted(m for m in {modules!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "--questions" in out.stdout  # the named command's own options were added
    assert out.stdout.strip().splitlines()[-1] == "['eval.retrieval']"


# ---- ask --history ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("history", "why"),
    [
        ('{"q": "a"}', "got a JSON dict"),
        ('[["What is ADHD?"]]', "turn 1 is not a [question, answer] pair of strings"),
        ('[["What is ADHD?", 3]]', "turn 1 is not a [question, answer] pair of strings"),
        ("[[not json", "--history must be JSON like"),
    ],
)
def test_ask_with_a_wrong_shaped_history_says_what_it_expects(
    tmp_path: Path, history: str, why: str
) -> None:
    cfg_file = write_cfg(tmp_path, tmp_path / "no-corpus")
    out = app(cfg_file, "ask", "Does methylphenidate help children with ADHD?",
              "--history", history)  # fmt: skip
    assert out.returncode == 1, out.stderr
    assert out.stderr.startswith("error: --history must be JSON like [[")
    assert why in out.stderr and "Traceback" not in out.stderr


def test_ask_with_a_well_shaped_history_gets_past_it(tmp_path: Path) -> None:
    """A right history is accepted: the next thing missing is the index, not the history."""
    cfg_file = write_cfg(tmp_path, tmp_path / "no-corpus")
    out = app(cfg_file, "ask", "And in adults?",
              "--history", '[["Does methylphenidate help children?", "Yes [1]."]]')  # fmt: skip
    assert out.returncode == 1 and "--history" not in out.stderr
    assert "index build" in out.stderr and "Traceback" not in out.stderr


# ---- index update ------------------------------------------------------------------------------


def test_index_update_embeds_only_new_and_changed_articles(tmp_path: Path) -> None:
    records = real_records(9)
    corpus = tmp_path / "corpus"
    write_xml(corpus / "a.xml", records[:6])
    cfg_file = write_cfg(tmp_path, corpus)

    built = app(cfg_file, "index", "build", "--quiet", "--json")
    assert built.returncode == 0, built.stderr
    first = json.loads(built.stdout)
    assert first["articles"] == 6 and first["embedded_articles"] == 6

    # one article's abstract changes, three articles arrive in a new file
    changed = ABSTRACT.sub(rb"\1Revised: ", records[0], count=1)
    assert changed != records[0]
    write_xml(corpus / "a.xml", [changed, *records[1:6]])
    write_xml(corpus / "b.xml", records[6:9])
    # the build above ran as a process; the rest through the same entry point in this one
    updated = app_in_process(cfg_file, "index", "update", "--quiet", "--json")
    assert updated.returncode == 0, updated.stderr
    after = json.loads(updated.stdout)
    assert after["articles"] == 9
    assert after["embedded_articles"] == 4 and after["reused_articles"] == 5

    stats = json.loads(app_in_process(cfg_file, "index", "stats", "--json").stdout)
    assert stats["articles"] == 9 and stats["chunks"] >= 9
    unchanged = app_in_process(cfg_file, "index", "update", "--quiet", "--json")
    assert json.loads(unchanged.stdout)["embedded_articles"] == 0  # nothing new: all reused
    assert {pmid(r) for r in records} == set(_indexed_pmids(cfg_file))


def _indexed_pmids(cfg_file: Path) -> list[str]:
    """The PMIDs the index holds, read through the project's own loader."""
    code = (
        "import json, sys\n"
        "from settings.config import load_config\n"
        "from indexing.store import open_current\n"
        "import pyarrow.parquet as pq\n"
        "folder, _ = open_current(load_config(sys.argv[1]))\n"
        "print(json.dumps(sorted(set(pq.read_table(folder / 'chunks.parquet')"
        ".column('pmid').to_pylist()))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(cfg_file)], cwd=REPO,
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


# ---- bench ingest ------------------------------------------------------------------------------


def test_bench_ingest_on_a_small_corpus(tmp_path: Path) -> None:
    records = real_records(6)
    corpus = tmp_path / "corpus"
    write_xml(corpus / "a.xml", records)
    cfg_file = write_cfg(tmp_path, corpus)
    out = app(cfg_file, "bench", "ingest", "--sample", "8", "--backends", "torch",
              "--stream-copies", "2", "--json", timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["parse"]["articles"] == 6
    assert report["chunk"]["chunks"] >= 6
    torch_row = report["embed"]["torch"]
    assert torch_row["chunks_per_s"] > 0
    # the project's torch embedder gives the same vectors as plain sentence-transformers
    assert torch_row["cosine_to_baseline_min"] > 0.999
    assert "missing" in report["index"]  # nothing was built in this folder
    assert report["peak_rss_mb"] > 0 and "streaming" in report
