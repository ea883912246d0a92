"""How app/ui.py turns sources, search details and errors into markdown (no server needed)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.errors import IndexMissingError, ModelLoadError, UserFacingError
from app.offline_html import strip_external_tags
from app.render import (
    escape_answer,
    escape_markdown,
    friendly_error,
    passage_markdown,
    pubmed_url,
    search_summary,
    source_line,
    sources_block,
)
from chains.result import PreparedEvent, Source
from tests.browser.fakes import XSS_TITLE, fake_sources

_UNESCAPED = re.compile(r"(?<!\\)[<>&\[\]()!`*_]")


def _strip_escapes(md: str) -> str:
    return re.sub(r"\\(.)", r"\1", md)


@pytest.mark.parametrize("text", [
    XSS_TITLE,
    "[click](javascript:alert(1))",
    "![img](http://example.com/x.png)",
    "**bold** _em_ `code` <b>x</b> &amp; # heading | a ~ b",
    "back\\slash \\<script>",
])
def test_escape_markdown_leaves_no_markup_and_round_trips(text: str) -> None:
    escaped = escape_markdown(text)
    assert not _UNESCAPED.search(escaped.replace("\\\\", "")), escaped
    assert _strip_escapes(escaped) == " ".join(text.split())


def test_escape_markdown_flattens_lines_and_drops_invisible_characters() -> None:
    assert escape_markdown("a\nb\u200bc\x00") == "a bc"
    assert escape_markdown("") == ""


def test_escape_answer_keeps_citation_markers_but_blocks_html_links_and_images() -> None:
    out = escape_answer("IQ matters [1][2]. <img src=x onerror=alert(1)> ![x](http://e/x.png)")
    assert "[1][2]" in out
    assert "\\<img" in out and "\\!" in out and "\\(" in out
    # token by token gives the same as the whole text
    pieces = ["IQ <", "b>x</", "b> [", "1]"]
    assert "".join(escape_answer(p) for p in pieces) == escape_answer("".join(pieces))


def test_pubmed_url_quotes_the_pmid() -> None:
    assert pubmed_url("12345") == "https://pubmed.ncbi.nlm.nih.gov/12345/"
    assert pubmed_url("1)2 x") == "https://pubmed.ncbi.nlm.nih.gov/1%292%20x/"


def test_source_line_has_escaped_title_link_author_journal_year_confidence() -> None:
    good, evil = fake_sources()
    line = source_line(good)
    assert line.startswith("- [1] [Childhood IQ and adult health: a cohort study]"
                           .replace(":", "\\:"))
    assert "(https://pubmed.ncbi.nlm.nih.gov/31234567/)" in line
    assert "Deary IJ et al\\." in line and "Intelligence" in line and "2019" in line
    assert line.endswith("search match: high")
    evil_line = source_line(evil)
    assert "[<img" not in evil_line
    assert "\\<img src\\=x onerror\\=alert\\(1\\)\\>" in evil_line
    assert "J \\[Evil\\] \\*Journal\\*" in evil_line
    assert "search match: medium" in evil_line


def test_source_line_without_title_or_metadata() -> None:
    line = source_line(Source(n=3, pmid="42", title="", url="", confidence=0.1))
    assert line == "- [3] [PMID 42](https://pubmed.ncbi.nlm.nih.gov/42/) — search match: low"


def test_sources_block_orders_by_number_and_names_the_mode() -> None:
    good, evil = fake_sources()
    block = sources_block([evil, good], "multi-query")
    assert block.index("- [1]") < block.index("- [2]")
    assert block.startswith("**Sources**") and block.endswith("*Mode: multi\\-query*")
    assert sources_block([], "plain") == "*Mode: plain*"


def test_passage_markdown_is_escaped_and_keeps_paragraphs() -> None:
    good, evil = fake_sources()
    md = passage_markdown(good)
    assert "BACKGROUND\\: Higher childhood IQ predicts better health\\.\n\nRESULTS\\: Yes\\." in md
    assert "[PubMed 31234567](https://pubmed.ncbi.nlm.nih.gov/31234567/)" in md
    evil_md = passage_markdown(evil)
    assert "<script>" not in evil_md and "](javascript" not in evil_md


def test_search_summary_shows_rewrite_sub_queries_and_filters() -> None:
    prepared = PreparedEvent(searched_question="IQ and <b>health</b>",
                             sub_queries=["q one", "q [two]"], filters={"year_min": 2018},
                             sources=fake_sources())
    text = search_summary("and health?", prepared)
    assert "**Rewritten question:** IQ and \\<b\\>health\\<\\/b\\>" in text
    assert "1. q one" in text and "2. q \\[two\\]" in text
    assert "**Filters:** year \\>\\= 2018" in text  # in words (Filters.describe)
    assert "**Sources found:** 2" in text
    plain = search_summary("q", PreparedEvent(searched_question="q"))
    assert "**Searched for:** q" in plain and "**Filters:** none" in plain
    assert "Sub-queries" not in plain


def test_friendly_errors_say_what_to_do_without_a_traceback() -> None:
    index = friendly_error(IndexMissingError("no index at faiss_indices/pubmed"))
    assert "`make run`" in index and "`python -m app index build`" in index
    assert "faiss\\_indices\\/pubmed" in index and index.endswith("Then ask again.")
    how = friendly_error(IndexMissingError("no index: build it with `make run` or `python -m "
                                           "app index build`"))
    assert how.count("index build") == 1
    assert "with `make run` or `python -m app index build`" in how  # code spans, as typed
    assert friendly_error(UserFacingError("odd ` <b>")) == "odd \\` \\<b\\>"
    assert "cfg.yaml" in friendly_error(ModelLoadError("gguf not found"))
    assert friendly_error(UserFacingError("bad <x>")) == "bad \\<x\\>"
    other = friendly_error(ZeroDivisionError("division by zero"))
    assert "division" not in other and "Traceback" not in other and "try again" in other


def test_strip_external_tags_removes_cdn_and_font_links_only() -> None:
    html = (
        '<link rel="preconnect" href="https://fonts.googleapis.com" />\n'
        '<link rel="preconnect" href="https://fonts.gstatic.com" crossorigin />\n'
        '<link\n  href="https://fonts.googleapis.com/css2?family=Inter" rel="stylesheet" />\n'
        '<link rel="stylesheet" href="//cdn.jsdelivr.net/npm/katex.min.css" />\n'
        '<script src="https://evil.example/x.js"></script>\n'
        '<script type="module" crossorigin src="/assets/index.js"></script>\n'
        '<link rel="stylesheet" crossorigin href="/assets/index.css">'
    )
    out = strip_external_tags(html)
    assert "googleapis" not in out and "gstatic" not in out and "jsdelivr" not in out
    assert "evil.example" not in out
    assert 'src="/assets/index.js"' in out and 'href="/assets/index.css"' in out


def test_importing_the_chat_patches_and_constructs_nothing() -> None:
    """Chainlit's page template is wrapped by the startup handler, not by ``import app.ui``, and
    the backend is made on first use (a fresh interpreter: other tests may have run startup)."""
    import subprocess
    import sys

    code = (
        "import chainlit.server as s; before = s.get_html_template\n"
        "import app.ui as ui\n"
        "assert s.get_html_template is before, 'patched at import'\n"
        "assert ui.BACKEND is None, 'backend constructed at import'\n"
        "from app.offline_html import install_offline_html\n"
        "install_offline_html(); install_offline_html()\n"
        "assert s.get_html_template is not before and s.get_html_template._offline\n"
        "assert ui.backend() is ui.backend() is ui.BACKEND\n"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]


# ---- evidence-first display (issue 12) -------------------------------------------------------
def _evidence_result():  # noqa: ANN202
    from chains.result import AnswerResult, EvidenceSpan, Source

    abstract = ("BACKGROUND: We asked <b>why</b>.\nRESULTS: Risk fell (OR 0.78, 95% CI 0.6-0.9). "
                "Nothing else. CONCLUSIONS: Statins help.")
    spans = []
    for sentence in ("Risk fell (OR 0.78, 95% CI 0.6-0.9).", "Statins help."):
        i = abstract.index(sentence)
        spans.append(EvidenceSpan(text=sentence, start=i, end=i + len(sentence)))
    src = Source(n=1, pmid="1", title="T", url="u", abstract=abstract, evidence=spans)
    answer = "Yes [1]. Risk fell (OR 0.78, 95% CI 0.6-0.9) [1]."
    return AnswerResult(answer=answer, mode="plain", question="q", searched_question="q",
                        sources=[src], verdict="yes", verdict_sources=[1])


def test_side_panel_bolds_each_evidence_sentence_of_the_whole_abstract() -> None:
    from markdown_it import MarkdownIt

    from app.render import passage_markdown

    src = _evidence_result().sources[0]
    html = MarkdownIt("commonmark").render(passage_markdown(src))
    assert "<strong>Risk fell (OR 0.78, 95% CI 0.6-0.9).</strong>" in html
    assert "<strong>Statins help.</strong>" in html
    assert "Nothing else." in html and "<strong>Nothing else." not in html
    assert "&lt;b&gt;why&lt;/b&gt;" in html and "<b>" not in html  # abstract text stays inert
    assert html.count("<p>") >= 4  # the abstract's line breaks are kept as paragraphs


def test_key_findings_list_what_the_answer_does_not_already_quote() -> None:
    from app.render import key_findings_block

    block = key_findings_block(_evidence_result())
    assert block.startswith("**Key findings**")
    assert "Statins help. [1]" in block
    assert "Risk fell" not in block  # the answer quotes it (citation before the full stop)
    result = _evidence_result()
    result.answer = "Yes [1]. Risk fell (OR 0.78, 95% CI 0.6-0.9) [1]. Statins help [1]."
    assert key_findings_block(result) == ""


def test_an_abstained_answers_findings_are_not_titled_key_findings() -> None:
    """When no source addresses the question, the sentences shown are the closest found: a
    reader skimming for "Key findings" must not take them for the answer."""
    from app.render import key_findings_block

    result = _evidence_result()
    result.style, result.verdict, result.answer = "abstain", None, "No source answers this."
    block = key_findings_block(result)
    assert block.startswith("**Related findings (they do not answer the question)**"), block
    assert "Key findings" not in block and "Statins help. [1]" in block


def test_an_overlong_question_is_answered_without_echo_or_setting_name() -> None:
    from app.render import too_long_text

    text = too_long_text(5027, 2000)
    assert "5,027 characters" in text and "at most 2,000 characters" in text
    assert "cfg" not in text and "max_question_chars" not in text


def test_a_group_of_markers_becomes_one_linkable_marker_per_source() -> None:
    """The page links a marker to its source's panel only when it is the source's element name,
    so "No (2 of 3 studies) [1, 2]:" showed "[1, 2]" as plain text. Mutation: the answer body
    rendered without ``linkable_markers`` (the browser test's verdict line has no links) or the
    group pattern requiring one number only -> this fails."""
    from app.render import linkable_markers

    assert linkable_markers("No (2 of 3 studies) [1, 2]: fewer falls [1]. Also [2,3, 10].") == (
        "No (2 of 3 studies) [1] [2]: fewer falls [1]. Also [2] [3] [10].")
    assert linkable_markers("a range [1-3] and a year [2019] stay") == (
        "a range [1-3] and a year [2019] stay")
