"""What the verdict reads: a few sentences of the top article (its conclusion and the sentence
closest to the question), taken from the article's last chunk where the retriever has it."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from langchain_core.documents import Document

from grounding.terms import content_words as _content_words
from ingest.metadata import ChunkMeta
from ingest.sentences import SplitRule, sentence_texts
from retrievers.articles import last_chunk
from retrievers.service import SearchService

# ---- evidence selection -------------------------------------------------------------------------
# A 135M model reads a few sentences far better than three abstracts: the verdict is taken from the
# retrieved article's conclusion (abstracts keep their section labels) plus the one sentence that
# shares most content words with the question.

_CONCLUSION_LABEL = re.compile(
    r"\b(?:CONCLUSIONS?(?: AND (?:CLINICAL )?(?:RELEVANCE|IMPLICATIONS?))?|INTERPRETATIONS?"
    r"|IMPLICATIONS?(?: FOR (?:PRACTICE|CLINICAL PRACTICE))?|SUMMARY|DISCUSSION)\s*:\s*"
)
_ANY_LABEL = re.compile(r"\b[A-Z][A-Z &/]{2,}[A-Z]\s*:\s*")  # "RESULTS:", "METHODS AND FINDINGS:"
_WORD = re.compile(r"[a-z0-9]+")
# Not indexing.tokenize.STOPWORDS: the verdict classifier (prompts/yes_no.calibration.json) was
# fitted on evidence chosen and overlaps counted with exactly this list; another list needs a refit
# (eval answers --calibrate).
_STOPWORDS = frozenset(
    "a an the of in on at to for and or is are was were be been do does did can could should "
    "would will may might must has have had with without by from as that this these those it its "
    "their there than which what who whom whose how when where why not no into among between "
    "versus vs patients patient study".split()
)


# The project's sentence splitter under the rule the verdict classifier was calibrated on
# (prompts/yes_no.calibration.json): a stop, white space (newlines included) and an upper-case
# letter or bracket; no abbreviation or parenthesis checks (section labels are handled above).
# The abstracts' rule (``ingest.sentences.ABSTRACTS``) picks other passages, so it needs a refit
# (eval answers --calibrate) and a new measurement before it may replace this one.
VERDICT_PASSAGE = SplitRule(
    closers="",
    starts="A-Z(\\[",
    abbreviations=False,
    parentheses=False,
    section_labels=False,
    lines=False,
)


def split_sentences(text: str) -> list[str]:
    return sentence_texts(text, VERDICT_PASSAGE)


def content_words(text: str) -> set[str]:
    return set(_content_words(_WORD.findall(text.lower()), stopwords=_STOPWORDS, min_len=3))


def conclusion_sentences(text: str, n_last: int = 2) -> tuple[list[str], bool]:
    """The sentences after the last "CONCLUSION(S):"-like label (up to the next label), or the
    last ``n_last`` sentences when the text has none. Returns (sentences, labelled)."""
    labels = list(_CONCLUSION_LABEL.finditer(text or ""))
    if labels:
        tail = text[labels[-1].end() :]
        nxt = _ANY_LABEL.search(tail)
        sentences = split_sentences(tail[: nxt.start()] if nxt else tail)
        if sentences:
            return sentences, True
    return split_sentences(_ANY_LABEL.sub("", text or ""))[-n_last:], False


def best_overlap_sentence(question: str, text: str, exclude: Sequence[str] = ()) -> str | None:
    """The sentence sharing most content words with the question (length-damped)."""
    q = content_words(question)
    best, best_score = None, 0.0
    for s in split_sentences(_ANY_LABEL.sub("", text or "")):
        if any(s in e or e in s for e in exclude):
            continue
        words = content_words(s)
        score = len(q & words) / (1 + math.log1p(len(words)))
        if score > best_score:
            best, best_score = s, score
    return best


@dataclass
class Evidence:
    """What the verdict reads: ``text`` (the sentence closest to the question, then the conclusion;
    shown to the model) and ``conclusion`` (the conclusion alone; its wording gives the cues)."""

    text: str
    conclusion: str
    labelled: bool = False  # a "CONCLUSION(S):"-like label was found


def verdict_passage(question: str, text: str, max_words: int = 90) -> Evidence:
    """Conclusion-like sentences, preceded by the best-overlapping sentence when there is room;
    at most ``max_words`` words each."""
    chosen, labelled = conclusion_sentences(text)
    conclusion = " ".join(" ".join(chosen).split()[:max_words])
    words = sum(len(s.split()) for s in chosen)
    if words < max_words:
        extra = best_overlap_sentence(question, text, exclude=chosen)
        if extra and words + len(extra.split()) <= max_words * 1.5:
            chosen = [extra, *chosen]
    return Evidence(" ".join(" ".join(chosen).split()[:max_words]), conclusion, labelled)


def ArticleTails(retriever: SearchService) -> Callable[[Document], str | None]:  # noqa: N802
    """The last chunk of a retrieved article, where an abstract's conclusion is: retrieval returns
    each article's best-matching chunk, which holds the conclusion only about half the time
    (:func:`retrievers.articles.last_chunk`; None: the retrieved chunk stays)."""

    def tail(doc: Document) -> str | None:
        pmid = ChunkMeta.pmid_of(doc.metadata)
        return last_chunk(retriever.article_chunks(pmid)) if pmid else None

    return tail


def verdict_evidence(
    question: str,
    documents: Sequence[Document],
    article_tail: Callable[[Document], str | None] | None = None,
    max_words: int = 90,
) -> Evidence:
    """The few sentences the verdict is taken from: the top document's (article's) conclusion and
    its sentence closest to the question."""
    if not documents:
        return Evidence("", "")
    top = documents[0]
    text = (article_tail(top) if article_tail else None) or top.page_content
    return verdict_passage(question, text, max_words)
