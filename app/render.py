"""What the chat shows, as markdown: every piece of abstract or user text is escaped before it
reaches Chainlit's renderer, so a title such as ``<img src=x onerror=alert(1)>`` shows as text."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote

from chains.references import vancouver
from chains.result import AnswerResult, EvidenceSpan, PreparedEvent, Source
from ingest.design import NOT_STATED, badge, shown_badge
from ingest.links import DOI_URL, PMC_URL, PUBMED_URL
from retrievers.filters import Filters
from settings.errors import IndexMissingError, ModelLoadError, UserFacingError

RETRACTED_BADGE = "⚠️ **RETRACTED**"
QUEUED_TEXT = "Queued: waiting for another answer to finish…"


def queued_text(ahead: int) -> str:
    """A waiting question's notice; with how many questions come first when more than one."""
    return QUEUED_TEXT if ahead <= 1 else f"{QUEUED_TEXT} ({ahead} questions ahead of yours)"


EMPTY_QUESTION_TEXT = ("Please type a question: your message has no words in it. For example: "
                       "*Is childhood intelligence associated with health in later life?*")
LOADING_TEXT = "Loading the language model and the search index (first question only)…"
# The landing page's starter questions, (label, question): each shows one thing the assistant
# does, chosen because the full index answers them well (docs/ui.md "Starters").
STARTERS = (
    # a yes/no question whose studies report a null finding: "No (3 of 3 studies)"
    ("Does working memory training improve fluid intelligence?",
     "Does working memory training improve fluid intelligence?"),
    # a detail question: the key findings of the sources that study it
    ("What is the effect of iodine supplementation on children's IQ?",
     "What is the effect of iodine supplementation on children's IQ?"),
    # a publication-year filter, read from the question and shown in the search step
    ("Emotional intelligence and burnout in nurses between 2018 and 2022",
     "Emotional intelligence and burnout in nurses between 2018 and 2022"),
    # follow-ups: in Conversational mode "Does that change with age?" keeps the topic
    ("Is intelligence heritable? (then, in Conversational mode: does that change with age?)",
     "Is intelligence heritable?"),
)
STARTER_QUESTIONS = tuple(question for _, question in STARTERS)
HISTORY_LIMIT = 20

_ALL_PUNCT = re.compile(r"([!-/:-@\[-`{-~])")  # every ASCII punctuation character
# In the answer: block raw HTML/entities, images, inline links, code spans and emphasis, but keep
# "[n]" citation markers intact so Chainlit links them to the source passages.
_ANSWER_PUNCT = re.compile(r"([\\`*_<>&!()~|#$])")
# ... and control characters (C0 but \t\n\r, C1) and bidi overrides that would reverse a title
_INVISIBLE = re.compile(
    r"[\u200b\u200c\u200d\u2060\ufeff\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
)


def escape_markdown(text: str) -> str:
    """Text that Chainlit's markdown renderer shows literally (one line: newlines become spaces).

    CommonMark renders a backslash-escaped ASCII punctuation character as itself, so escaping all
    of them leaves no markup, link, image or HTML tag in the text. Zero-width characters are
    dropped (Chainlit uses U+200B as its streaming-cursor marker).
    """
    return _escape_inline(text).strip()


def _escape_inline(text: str) -> str:
    """escape_markdown without trimming (for pieces of a longer line)."""
    text = re.sub(r"\s+", " ", _INVISIBLE.sub("", text or ""))
    return _ALL_PUNCT.sub(r"\\\1", text)


def escape_answer(text: str) -> str:
    """An answer piece from the LLM, made inert but with its ``[n]`` markers left linkable.

    Works on any split of the text (each character is escaped on its own), so streamed tokens can
    be escaped one by one.
    """
    return _ANSWER_PUNCT.sub(r"\\\1", _INVISIBLE.sub("", text or ""))


_MARKER_GROUP = re.compile(r"\[(\d+(?:,\s*\d+)+)\]")


def linkable_markers(text: str) -> str:
    """One marker per source ("[1, 2]" -> "[1] [2]"): the page links a marker to its source's
    panel only when the marker is the source's own element name."""
    return _MARKER_GROUP.sub(
        lambda m: " ".join(f"[{n.strip()}]" for n in m.group(1).split(",")), text or "")


def pubmed_url(pmid: str) -> str:
    return PUBMED_URL.format(pmid=quote(str(pmid).strip(), safe=""))


def source_label(source: Source) -> str:
    """The element name of a source's passage; the same text as its inline marker in the answer."""
    return source_label_for(source.n)


STANCE_BADGES = {"yes": "says yes", "no": "says no", "unclear": "unclear"}


def stance_badge(source: Source) -> str:
    """A small badge with what the source says to a yes/no question ("" when it says nothing:
    not a yes/no question, or the source does not address it)."""
    label = STANCE_BADGES.get(source.stance or "")
    return f"`{label}`" if label else ""


def stance_summary(sources: Iterable[Source]) -> str:
    """One line over the sources: "3 studies: 3 no", "2 studies: 1 yes, 1 unclear"."""
    said = [s.stance for s in sources if s.stance]
    if not said:
        return ""
    counts = [f"{said.count(k)} {k}" for k in ("yes", "no", "unclear") if said.count(k)]
    return f"{len(said)} {'study' if len(said) == 1 else 'studies'}: " + ", ".join(counts)


def doi_url(doi: str) -> str:
    return DOI_URL.format(doi=quote(doi.strip(), safe="/"))


def pmc_url(pmc: str) -> str:
    return PMC_URL.format(pmc=quote(pmc.strip(), safe=""))


MATCH_LEGEND = ("*Search match* (high, medium, low): how closely an abstract matches the "
                "question's terms and meaning, not the strength or certainty of its evidence.")


def design_badge(source: Source) -> str:
    """The study design as a small badge (`Cohort`, `RCT` as PubMed typed it; `design not
    stated` where the rules would only guess, ingest.design.shown_badge; "" for an index without
    designs)."""
    name = shown_badge(source.design, source.design_source, source.design_rule)
    return f"`{name}`" if name else ""


def match_text(source: Source) -> str:
    """The retrieval match in words ("search match: high"): how well the abstract matches the
    question, never a grade of the evidence."""
    return f"search match: {source.confidence_label}"


def retraction_text(source: Source) -> str:
    """The warning a retracted source carries, naming its notices (PubMed links)."""
    notices = ", ".join(
        f"[PMID {escape_markdown(p)}]({pubmed_url(p)})" if p.isdigit() else escape_markdown(p)
        for p in source.retraction_notices
    )
    tail = f" (retraction notice: {notices})" if notices else ""
    return (f"{RETRACTED_BADGE}: this article has been retracted{tail}; it is never used for the "
            "yes/no verdict")


def source_line(source: Source) -> str:
    """A list item: ``[n] `says no` `Cohort` [Title](pubmed) — First et al. · Journal · Year ·
    search match: high``; a retracted source starts with the warning."""
    title = escape_markdown(source.title) or f"PMID {escape_markdown(source.pmid)}"
    badge = " ".join(b for b in (stance_badge(source), design_badge(source)) if b)
    details = [
        escape_markdown(source.first_author_et_al),
        escape_markdown(source.journal),
        str(source.year) if source.year else "",
        match_text(source),
    ]
    tail = " · ".join(d for d in details if d)
    head = f"{source_label(source)} {badge}" if badge else source_label(source)
    if source.retracted:
        head = f"{head} {RETRACTED_BADGE}"
    return f"- {head} [{title}]({pubmed_url(source.pmid)}) — {tail}"


def sources_block(sources: Iterable[Source], mode: str) -> str:
    """The part under an answer: its numbered sources (with the stance summary over them), their
    references (Vancouver), then the mode it was answered in."""
    ordered = sorted(sources, key=lambda s: s.n)
    lines = [source_line(s) for s in ordered]
    summary = stance_summary(ordered)
    head = f"**Sources** · {summary}" if summary else "**Sources**"
    retracted = [source_label(s) for s in ordered if s.retracted]
    if retracted:
        head += (f"\n\n{RETRACTED_BADGE}: {', '.join(retracted)} "
                 f"{'has' if len(retracted) == 1 else 'have'} been retracted and "
                 "cannot decide the verdict")
    parts = ([head + "\n\n" + "\n".join(lines) + "\n\n" + MATCH_LEGEND,
              references_block(ordered)] if lines else [])
    parts.append(f"*Mode: {escape_markdown(mode)}*")
    return "\n\n".join(parts)


def references_block(sources: Iterable[Source]) -> str:
    """The sources as a numbered Vancouver reference list (escaped: titles come from abstracts)."""
    ordered = sorted(sources, key=lambda s: s.n)
    lines = [f"{s.n}. {escape_markdown(vancouver(s))}" for s in ordered]
    return "**References** (Vancouver)\n\n" + "\n".join(lines) if lines else ""


def key_findings_block(result: AnswerResult) -> str:
    """"Key findings" under the answer (titled as related findings when it abstained): each
    source's evidence sentences, each ending with its [n]; a finding the answer already quotes
    is not repeated. "" when there is none to add."""
    answer = " ".join(result.answer.split())
    lines = [
        f"- {escape_answer(' '.join(e.text.split()))} {source_label_for(n)}"
        for n, e in result.key_findings()
        if " ".join(e.text.split()).rstrip(".!?") not in answer  # the answer cites before "."
    ]
    return f"**{result.findings_title()}**\n\n" + "\n".join(lines) if lines else ""


def source_label_for(n: int) -> str:
    return f"[{n}]"


def highlighted_abstract(abstract: str, evidence: Iterable[EvidenceSpan]) -> str:
    """The whole abstract as escaped markdown, its evidence sentences in bold, paragraphs kept."""
    spans = sorted(
        (e for e in evidence if 0 <= e.start < e.end <= len(abstract)), key=lambda e: e.start
    )
    pieces: list[tuple[str, bool]] = []
    at = 0
    for e in spans:
        if e.start < at:
            continue  # overlapping spans: the first wins
        pieces.append((abstract[at : e.start], False))
        pieces.append((abstract[e.start : e.end], True))
        at = e.end
    pieces.append((abstract[at:], False))
    paragraphs: list[list[str]] = [[]]
    for text, bold in pieces:
        for i, line in enumerate(text.split("\n")):
            if i:
                paragraphs.append([])
            words = escape_markdown(line)
            if words:
                paragraphs[-1].append(f"**{words}**" if bold else words)
    return "\n\n".join(" ".join(p) for p in paragraphs if p)


def passage_markdown(source: Source, added: str = "") -> str:
    """The side panel of one source: title, authors, journal, year, link, and the whole abstract
    with its key findings (evidence sentences) in bold. ``added``: the line saying which PubMed
    search of the user's library brought the article in (markdown, already escaped)."""
    authors = ", ".join(source.authors[:6]) + (" et al." if len(source.authors) > 6 else "")
    meta = " · ".join(
        x for x in (escape_markdown(authors), escape_markdown(source.journal),
                    str(source.year) if source.year else "") if x
    )
    title = escape_markdown(source.title) or "PMID " + escape_markdown(source.pmid)
    head = f"**{escape_markdown(source_label(source))} {title}**"
    links = [f"[PubMed {escape_markdown(source.pmid)}]({pubmed_url(source.pmid)})"]
    if source.doi:
        links.append(f"[DOI {escape_markdown(source.doi)}]({doi_url(source.doi)})")
    if source.pmc:
        links.append(f"[PMC full text {escape_markdown(source.pmc)}]({pmc_url(source.pmc)})")
    text = source.abstract or source.passage
    body = highlighted_abstract(text, source.evidence) or "*(no passage text)*"
    design = ""
    shown = shown_badge(source.design, source.design_source, source.design_rule)
    if shown == NOT_STATED and source.design != "other":
        design = (f"**Design:** not stated reliably (a wording rule suggests "
                  f"{escape_markdown(badge(source.design))}, {escape_markdown(source.design_rule)}"
                  "; such guesses are right less than 9 times in 10, so no badge is shown)")
    elif shown == NOT_STATED:
        design = "**Design:** not stated (no design wording found)"
    elif shown:
        design = (f"**Design:** {escape_markdown(shown)} "
                  f"*({escape_markdown(source.design_source)}: "
                  f"{escape_markdown(source.design_rule)})*")
    topics = ""
    if source.mesh_major:
        topics = "**MeSH major topics:** " + escape_markdown("; ".join(source.mesh_major))
    warning = retraction_text(source) if source.retracted else ""
    return "\n\n".join(x for x in (
        warning, head, meta, " · ".join(links) + f" · {match_text(source)}", added,
        design, topics, body) if x)


def search_summary(question: str, prepared: PreparedEvent) -> str:
    """The collapsed "what was searched" step: rewritten question, sub-queries, parsed filters."""
    searched = prepared.searched_question or question
    label = "Rewritten question" if searched.strip() != question.strip() else "Searched for"
    lines = [f"**{label}:** {escape_markdown(searched)}"]
    if prepared.rewrite != "unchanged":  # how the follow-up kept its topic (retrievers.followup)
        lines.append(f"**Rewrite:** {escape_markdown(prepared.rewrite)}")
    if prepared.sub_queries:
        lines.append("**Sub-queries:**\n\n" + "\n".join(
            f"{i}. {escape_markdown(q)}" for i, q in enumerate(prepared.sub_queries, 1)))
    if prepared.filters:
        lines.append(f"**Filters:** {escape_markdown(filters_text(prepared.filters))}")
    else:
        lines.append("**Filters:** none")
    lines.append(f"**Sources found:** {len(prepared.sources)}")
    return "\n\n".join(lines)


def filters_text(filters: Mapping[str, Any]) -> str:
    """The active filters in words ("years 2015-2018, design: RCT, journal JAMA")."""
    try:
        return Filters(**filters).describe()
    except (TypeError, ValueError):  # not a Filters dict (a fake retriever's): shown as given
        return "; ".join(f"{k} = {v}" for k, v in filters.items())


def _error_text(err: BaseException) -> str:
    """The error's own message, escaped except for `code spans` (inert, and how our messages
    show commands)."""
    parts = str(err).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: no code spans then
        return escape_markdown(str(err))
    return "".join(_escape_inline(p) if i % 2 == 0 else f"`{' '.join(p.split())}`"
                   for i, p in enumerate(parts)).strip()


def friendly_error(err: BaseException) -> str:
    """A short chat message for a failure; never a traceback (that goes to the server log)."""
    if isinstance(err, IndexMissingError):
        text = f"**The search index is not available.** {_error_text(err)}"
        if "index build" not in str(err):
            text += "\n\nBuild it with `make run` or `python -m app index build`."
        return text + "\n\nThen ask again."
    if isinstance(err, ModelLoadError):
        return ("**The language model could not be loaded.** " + _error_text(err) +
                "\n\nCheck the `llm` section of cfg.yaml, then ask again.")
    if isinstance(err, UserFacingError):
        return _error_text(err)
    return ("**Sorry, something went wrong while answering.** The details were written to the "
            "server log; please try again.")


def too_long_text(length: int, limit: int) -> str:
    """The reply to an over-long question: the limit in the reader's terms, the question not
    repeated (it is on screen already)."""
    return (f"**That question is too long** ({length:,} characters). Please ask it in a "
            f"sentence or two, at most {limit:,} characters; long passages of text cannot be "
            "searched as one question.")


