"""Fault suite (issue 13): damaged files, hostile text and oversized input, on real data.

Each test names the fault it injects. Records are cut from the real shared PubMed XML; index
faults are injected into a copy of the real index the ``small_index_cfg`` fixture builds.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.config import ConfigError, config_from_dict, load_config
from app.errors import UserFacingError
from ingest.models import Article
from ingest.pubmed_xml import BadRecord, iter_pubmed_xml
from tests.conftest import PUBMED_DIR, REPO, require_shared_data

PUBMEDQA_XML = PUBMED_DIR / "pubmedqa_pqal.xml.gz"
CLOSE = b"</PubmedArticle>"
REBUILD = "damaged index: rebuild with `python -m app index build`"


# -- A. data and files -------------------------------------------------------------------------
def real_records(n: int) -> tuple[bytes, list[bytes]]:
    """The prolog and the first ``n`` <PubmedArticle> records of the real PubMedQA corpus."""
    require_shared_data()
    with gzip.open(PUBMEDQA_XML) as fh:
        head = fh.read(4_000_000)
    first = head.index(b"<PubmedArticle>")
    records, pos = [], first
    for _ in range(n):
        end = head.index(CLOSE, pos) + len(CLOSE)
        records.append(head[pos:end])
        pos = head.index(b"<PubmedArticle>", end)
    return head[:first], records


def pmid_of(record: bytes) -> str:
    return re.search(rb"<PMID[^>]*>(\d+)</PMID>", record).group(1).decode()


def article_set(prolog: bytes, records: list[bytes]) -> bytes:
    return prolog + b"\n".join(records) + b"\n</PubmedArticleSet>\n"


def test_an_unterminated_record_is_named_and_the_next_record_kept() -> None:
    prolog, records = real_records(50)
    cut = records[10].replace(CLOSE, b"")  # record 11 loses its closing tag
    out = list(iter_pubmed_xml(io_bytes(article_set(prolog, [*records[:10], cut,
                                                               *records[11:]]))))
    kept = [r.pmid for r in out if isinstance(r, Article)]
    bad = [r for r in out if isinstance(r, BadRecord)]
    assert kept == [pmid_of(r) for r in records if r is not records[10]]  # record 12 kept
    assert len(bad) == 1 and bad[0].pmid == pmid_of(records[10])
    assert "record 11" in bad[0].position and "no closing </PubmedArticle>" in bad[0].reason


def test_an_unterminated_last_record_and_one_before_a_deletion_are_both_reported() -> None:
    prolog, records = real_records(5)
    deletion = b"<DeleteCitation><PMID Version=\"1\">123</PMID></DeleteCitation>"
    data = article_set(prolog, [records[0], records[1].replace(CLOSE, b""), deletion,
                                records[2], records[3], records[4].replace(CLOSE, b"")])
    out = list(iter_pubmed_xml(io_bytes(data)))
    assert [r.pmid for r in out if isinstance(r, Article)] == [pmid_of(records[i])
                                                               for i in (0, 2, 3)]
    bad = [r for r in out if isinstance(r, BadRecord)]
    assert [b.pmid for b in bad] == [pmid_of(records[1]), pmid_of(records[4])]


def io_bytes(data: bytes):  # noqa: ANN201
    import io

    return io.BytesIO(data)


def test_a_folder_of_only_unreadable_files_names_each_file_and_why(tmp_path: Path) -> None:
    prolog, records = real_records(3)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "html.xml").write_text("<html><body>Not found</body></html>")
    (corpus / "empty.xml").write_bytes(b"")
    (corpus / "cut.xml.gz").write_bytes(gzip.compress(article_set(prolog, records))[:200])
    from ingest.corpus import load_corpus

    cfg = config_from_dict({"corpus": {"paths": [str(corpus)]}}, root=tmp_path)
    with pytest.raises(UserFacingError) as err:
        load_corpus(cfg)
    message = str(err.value)
    for name, why in (("html.xml", "not PubMed XML"), ("empty.xml", "empty file"),
                      ("cut.xml.gz", "ends")):
        assert re.search(rf"{re.escape(str(corpus / name))}[^\n]*{why}", message), (name, message)


def test_an_empty_config_file_is_an_error(tmp_path: Path) -> None:
    for text in ("", "\n# nothing but a comment\n", "{}\n"):
        path = tmp_path / "cfg.yaml"
        path.write_text(text)
        with pytest.raises(ConfigError, match="is empty"):
            load_config(path)


def test_index_build_without_corpus_files_never_downloads(tmp_path: Path, monkeypatch) -> None:
    import ingest.fetch

    def no_download(*_a, **_k):  # noqa: ANN202
        raise AssertionError("index build started a PubMed download on its own")

    monkeypatch.setattr(ingest.fetch, "fetch_corpus", no_download)
    cfg_file = tmp_path / "cfg.yaml"
    cfg_file.write_text(json.dumps({"corpus": {"paths": [str(tmp_path / "nothing")],
                                               "fetch": {"out_dir": str(tmp_path / "dl")}},
                                    "index": {"dir": str(tmp_path / "idx")}}))
    from app.cli import main

    assert main(["--config", str(cfg_file), "index", "build", "--quiet"]) == 1
    assert not (tmp_path / "dl").exists()


def test_make_run_says_it_is_about_to_fetch_and_why() -> None:
    makefile = (REPO / "Makefile").read_text()
    assert "index build --if-needed --fetch-if-empty" in makefile
    from ingest.corpus import ensure_corpus

    cfg = config_from_dict({"corpus": {"paths": ["/nonexistent-corpus"],
                                       "fetch": {"out_dir": "/nonexistent-corpus/dl"}}})
    said: list[str] = []

    def fake_fetch(_cfg):  # noqa: ANN001, ANN202
        from ingest.errors import FetchError

        raise FetchError("offline")

    import ingest.corpus

    original = ingest.corpus._stderr
    ingest.corpus._stderr = said.append
    try:
        with pytest.raises(UserFacingError):
            ensure_corpus(cfg, fetch=fake_fetch)
    finally:
        ingest.corpus._stderr = original
    assert "no corpus files found in /nonexistent-corpus" in said[0]
    assert "downloading" in said[0] and "corpus.fetch.query" in said[0]


# -- A. every file of an index build, the manifest included, is verified ------------------------
BUILD_FILES = ("manifest.json", "chunks.parquet", "articles.parquet", "dense.faiss", "bm25.npz",
               "bm25_vocab.json", "bm25_pairs.npz", "bm25_pair_keys.npy",
               "bm25_counts.npz", "bm25_pair_counts.npz")  # the counts an addition extends


@pytest.fixture
def index_copy(small_index_cfg, tmp_path: Path):
    """(cfg, build folder) of a private copy of the real small test index."""
    from indexing.store import location

    loc = location(small_index_cfg)
    build = tmp_path / "idx" / f"{loc.name}.builds" / "b1"
    shutil.copytree(loc.link.resolve(), build)
    (tmp_path / "idx" / loc.name).symlink_to(build)
    cfg = small_index_cfg.model_copy(
        update={"index": small_index_cfg.index.model_copy(update={"dir": str(tmp_path / "idx")})})
    return cfg, build


def load_backend(cfg):  # noqa: ANN001, ANN201
    from retrievers.loading import load_retriever

    return load_retriever(cfg)


def test_the_copied_index_loads_and_lists_every_file(index_copy) -> None:
    cfg, build = index_copy
    manifest = json.loads((build / "manifest.json").read_text())
    assert sorted(manifest["file_sha256"]) == sorted(BUILD_FILES[1:])
    load_backend(cfg)  # the undamaged copy is accepted


@pytest.mark.parametrize("name", BUILD_FILES)
@pytest.mark.parametrize("where", ["first", "middle"])
def test_a_flipped_byte_in_any_index_file_is_refused(index_copy, name: str, where: str) -> None:
    cfg, build = index_copy
    path = build / name
    data = bytearray(path.read_bytes())
    at = 0 if where == "first" else len(data) // 2
    data[at] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(UserFacingError, match=re.escape(REBUILD)):
        load_backend(cfg)


@pytest.mark.parametrize("names", [(n,) for n in BUILD_FILES] + [("bm25_pairs.npz",
                                                                  "bm25_pair_keys.npy")])
def test_a_deleted_index_file_is_refused(index_copy, names: tuple[str, ...]) -> None:
    cfg, build = index_copy
    for name in names:
        (build / name).unlink()
    with pytest.raises(UserFacingError, match=re.escape(REBUILD)):
        load_backend(cfg)


@pytest.mark.parametrize("field", ["chunks", "corpus_checksum", "bm25_settings"])
def test_an_edited_field_of_the_manifest_is_refused(index_copy, field: str) -> None:
    """chunks is also checked against the tables; the others only by the manifest's own sha256
    (an edited corpus_checksum would pass a changed corpus off as indexed)."""
    cfg, build = index_copy
    path = build / "manifest.json"
    data = json.loads(path.read_text())
    data[field] = {"chunks": data["chunks"] + 1, "corpus_checksum": "0" * 64,
                   "bm25_settings": {**data["bm25_settings"], "k1": 9.0}}[field]
    path.write_text(json.dumps(data, indent=2))
    with pytest.raises(UserFacingError, match=re.escape(REBUILD)):
        load_backend(cfg)


def test_a_damaged_manifest_gives_the_rebuild_message_in_the_cli(index_copy, tmp_path) -> None:
    cfg, build = index_copy
    path = build / "manifest.json"
    path.write_bytes(b"z" + path.read_bytes()[1:])
    from tests.browser.harness import write_test_config

    cfg_file = write_test_config(cfg, tmp_path / "cfg.yaml")
    run = subprocess.run(
        [sys.executable, "-m", "app", "--config", str(cfg_file), "ask", "Is IQ heritable?"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        env={**os_environ(), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    assert run.returncode == 1, run.stderr
    assert REBUILD in run.stderr and "Traceback" not in run.stderr


def os_environ() -> dict[str, str]:
    import os

    return dict(os.environ)


# -- B. hostile text: control characters, bidi overrides, other languages -----------------------
ESC_TITLE = "\x1b[2J\x1b[31mFAKE: your session expired\x1b[0m Childhood IQ"


def test_escape_codes_and_bidi_overrides_are_stripped_at_ingest(tmp_path: Path) -> None:
    from ingest.medline import iter_medline
    from ingest.sources import iter_file

    medline = (
        f"PMID- 12345678\nTI  - {ESC_TITLE}\nAB  - An abstract \x07with a bell\x9b2J and "
        "control\x00 characters.\nAU  - Smith\x1b]0;owned\x07 J\nJT  - Intelligence\u202e\n"
    )
    (article,) = list(iter_medline(medline.splitlines(keepends=True)))
    prolog, records = real_records(1)
    record = records[0].replace(b"<ArticleTitle>", "<ArticleTitle>\u202eevil \u2066\x85".encode())
    path = tmp_path / "bidi.xml"
    path.write_bytes(article_set(prolog, [record]))
    (xml_article,) = list(iter_file(path))
    for text in (article.title, article.abstract, " ".join(article.authors), article.journal,
                 xml_article.title):
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", text)
    assert article.title == "FAKE: your session expired Childhood IQ"
    assert article.authors == ["J Smith"] and article.journal == "Intelligence"
    assert xml_article.title.startswith("evil ")


def test_the_chat_renders_no_bidi_override_or_control_character() -> None:
    from app.ui import escape_answer, escape_markdown

    for shown in (escape_markdown("\u202eevil\u2066 \x9b2J title"), escape_answer("a\u202eb\x85")):
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", shown)


@pytest.fixture
def cli_with_fake_llm(small_index_cfg, monkeypatch):
    """`python -m app ask` in process: the real small index, a scripted LLM (no model load)."""
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from chains.assistant import Assistant
    from retrievers.loading import load_retriever

    retriever = load_retriever(small_index_cfg)
    llm = FakeListChatModel(responses=["Higher childhood IQ \x1b[2Jpredicts health [1]."])

    def from_config(cfg, **_kw):  # noqa: ANN001, ANN202
        return Assistant(cfg, retriever, llm, count_tokens=lambda m: sum(
            len(str(x.content).split()) for x in m))

    monkeypatch.setattr(Assistant, "from_config", staticmethod(from_config))
    import app.config

    monkeypatch.setattr(app.config, "load_config", lambda *_a, **_k: small_index_cfg)
    import app.cli

    monkeypatch.setattr(app.cli, "load_config", lambda *_a, **_k: small_index_cfg)
    return app.cli.main


def test_escape_codes_never_reach_the_terminal_from_ask(cli_with_fake_llm, capsys) -> None:
    question = "Is childhood \x1b[2J\x1b]0;owned\x07intelligence\u202e linked to health in 2015?"
    assert cli_with_fake_llm(["ask", question]) == 0
    out = capsys.readouterr().out
    assert "Searched:" in out  # the year filter makes ask echo the searched question
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", out)
    assert cli_with_fake_llm(["ask", "--json", question]) == 0
    out = capsys.readouterr().out
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", out)
    json.loads(out)


NON_ENGLISH = [
    "¿La inteligencia en la infancia está asociada con la salud en la vida adulta?",
    "¿El entrenamiento de la memoria de trabajo mejora la inteligencia fluida?",
    "¿Qué se sabe sobre la ubiquinona en niños con TDAH?",
    "L'intelligence dans l'enfance est-elle associée à la santé à l'âge adulte ?",
    "L'entraînement de la mémoire de travail améliore-t-il l'intelligence fluide ?",
    "Que sait-on de l'ubiquinone chez les enfants atteints de TDAH ?",
    "儿童时期的智力与成年后的健康有关吗？",
    "工作记忆训练能提高流体智力吗？",
    "关于多动症儿童的泛醌我们知道什么？",
]


def eval_questions() -> list[str]:
    require_shared_data()
    eval_dir = PUBMED_DIR.parent / "eval"
    questions = []
    for name in ("llm_questions_dev.jsonl", "pubmedqa_pqal.jsonl"):
        for line in (eval_dir / name).read_text(encoding="utf-8").splitlines():
            questions.append(json.loads(line)["question"])
    for line in (eval_dir / "followups_dev.jsonl").read_text(encoding="utf-8").splitlines():
        questions.extend(json.loads(line)["turns"])
    return questions


def test_non_english_questions_are_refused_and_no_eval_question_is() -> None:
    from chains.question_checks import NOT_ENGLISH, language_refusal

    assert [q for q in NON_ENGLISH if language_refusal(q) != NOT_ENGLISH] == []
    # another script is refused whatever English words surround it
    assert language_refusal("What about 儿童时期的智力与成年后的健康有关吗？") == NOT_ENGLISH
    questions = eval_questions()
    assert len(questions) > 1000
    assert [q for q in questions if language_refusal(q)] == []


def test_the_assistant_refuses_a_spanish_question_with_the_english_corpus_message(
        small_index_cfg) -> None:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from chains.assistant import Assistant
    from chains.question_checks import NOT_ENGLISH
    from retrievers.loading import load_retriever

    llm = FakeListChatModel(responses=["an answer not drawn from the sources"])
    assistant = Assistant(small_index_cfg, load_retriever(small_index_cfg), llm)
    result = assistant.ask(NON_ENGLISH[0], mode="plain")
    assert result.refused and result.answer == NOT_ENGLISH and result.sources == []


# -- C. stalls ------------------------------------------------------------------------------------
LONG_QUESTION = ("What is the effect of childhood intelligence on later health outcomes? "
                 * 2000)[:100_000]


@pytest.mark.parametrize("history", [
    "[" * 50_000 + "]" * 50_000,
    '{"ab": 1}',
    '["ab"]',
    '[["q", "a", "extra"]]',
    '[["q", 1]]',
    "not json",
])
def test_a_wrong_history_is_a_clear_error(history: str) -> None:
    from chains.question_checks import QuestionError, parse_history

    with pytest.raises(QuestionError, match=r"--history must be JSON like"):
        parse_history(history, 2000)
    assert parse_history('[["q", "a"]]', 2000) == [("q", "a")]


def test_a_100k_question_gets_a_clear_message_at_once_in_the_cli(small_index_cfg,
                                                                 tmp_path: Path) -> None:
    from tests.browser.harness import write_test_config

    cfg_file = write_test_config(small_index_cfg, tmp_path / "cfg.yaml")
    started = time.perf_counter()
    # the timeout is a stall guard (the unfixed code never returns), not a speed goal
    run = subprocess.run([sys.executable, "-m", "app", "--config", str(cfg_file), "ask",
                          LONG_QUESTION, "--json"], cwd=REPO, capture_output=True, text=True,
                         timeout=120, env={**os_environ(), "HF_HUB_OFFLINE": "1"})
    elapsed = time.perf_counter() - started
    assert run.returncode == 1 and run.stdout == ""
    assert re.search(r"the question is 99,999 characters long; the limit is 2,000", run.stderr)
    assert "Traceback" not in run.stderr
    print(f"100k-character question refused by the CLI in {elapsed:.2f} s")


def test_the_assistant_refuses_a_long_question_before_any_work() -> None:
    from chains.assistant import Assistant
    from chains.question_checks import QuestionError

    class Untouchable:
        """Any method may be looked up (the chains are composed once, up front), none called."""

        def __getattr__(self, name: str):  # noqa: ANN204
            def called(*_args: object, **_kwargs: object) -> None:
                raise AssertionError(f"retriever used for an oversized question ({name})")

            return called

    assistant = Assistant(config_from_dict({}), Untouchable(), llm=None)
    with pytest.raises(QuestionError, match="limit is 2,000"):
        assistant.ask(LONG_QUESTION, mode="plain")


def test_the_prompt_fits_even_when_the_question_alone_does_not() -> None:
    from langchain_core.documents import Document

    from chains.budget import fit_prompt
    from chains.prompts import Prompts
    from chains.steps import answer_messages

    prompts = Prompts.from_config(config_from_dict({}))
    docs = [Document(page_content="Higher childhood IQ predicts better health. " * 30,
                     metadata={"pmid": "1", "title": "t"})]

    def count(msgs) -> int:  # noqa: ANN001
        return sum(len(str(m.content).split()) for m in msgs)

    fitted = fit_prompt(lambda d, _h, q: answer_messages(prompts.answer, q, d), docs, [], count,
                        300, question=LONG_QUESTION)
    assert fitted.tokens <= 300 and fitted.truncated


def test_a_slow_answer_stops_at_the_time_limit_with_a_note(small_index_cfg) -> None:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from chains.assistant import Assistant
    from retrievers.loading import load_retriever

    class SlowLLM(FakeListChatModel):
        sleep: float = 0.2  # per character: a 400-character answer takes 80 s

    cfg = small_index_cfg.model_copy(  # auto: the LLM writes, so its time limit applies
        update={"llm": small_index_cfg.llm.model_copy(update={"timeout_s": 2.0}),
                "answer": small_index_cfg.answer.model_copy(update={"style": "auto"})})
    llm = SlowLLM(responses=["Higher childhood IQ predicts better adult health [1]. " * 8])
    assistant = Assistant(cfg, load_retriever(cfg), llm, count_tokens=lambda m: 10)
    result = assistant.ask("What is the effect of childhood intelligence on later health?",
                           mode="plain")
    # without the limit the whole answer (80 s) would come, with no note
    assert "Stopped: the answer took longer than the 2 s limit" in result.answer
    assert result.timings["stopped_at_limit_s"] == 2.0
