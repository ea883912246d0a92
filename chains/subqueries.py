"""Multi-query's sub-queries: only what is a search about the user's question is searched.

A 135M model writes, among its queries, remarks ("These are all related to the same topic but in
different ways."), answers, requests ("Can you provide ..."), code, lines cut off by the token
limit and copies of the question. :func:`parse_queries` drops what a pattern can name; a line is
searched only when it has the form of a query (:func:`is_query_form`: a question, or a search
phrase of at most ``MAX_PHRASE_WORDS`` words) and is about the question: its MiniLM cosine with
the question (the text searched, filters taken out) is at least ``SUBQUERY_BAR``, measured on
the model's own outputs for the verdict, paraphrase and trap questions (docs/multi_query.md).
Near-copies of the question or of a kept line (cosine >= ``DUPLICATE_BAR``) are dropped: they
search what is already searched. When fewer than two remain the question itself gives them
(:func:`derived_queries`): its content words as a keyword search, and its essential concepts
alone, each only when it differs from the question and the others.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from chains.queries import content_terms, parse_queries

if TYPE_CHECKING:
    from grounding.concepts import CorpusTerms
    from grounding.sources import SentenceEncoder

# MiniLM cosine of a model's line with the question at which it is a query about it (measured:
# docs/multi_query.md); near-copies (>= DUPLICATE_BAR) add nothing.
SUBQUERY_BAR = 0.45
DUPLICATE_BAR = 0.95
MIN_QUERIES = 2


_QUESTION_WORD = re.compile(
    r"^(?:is|are|was|were|do|does|did|can|could|has|have|had|will|would|should|may|might|what|"
    r"which|how|why|when|where|who|whom|whose)\b", re.IGNORECASE
)
# addressed to someone ("Can you provide ...", "Please provide your answer ..."): no search
_ADDRESSED = re.compile(
    r"\b(?:can|could|would|will|do)\s+you\b|\byou\s+(?:can|could|may|will|should|need)\b|"
    r"\bplease\b|\b(?:tell|give|show|help)\s+me\b|\bI\s+(?:can|will|would|am|have|hope)\b|"
    r"\byour\s+(?:answer|question|query|queries|user|request)\b",
    re.IGNORECASE,
)
_CODE = re.compile(r"[={}\[\];#]|^\s*(?:import|return|def|from\s+\w+\s+import)\b|^\s*python\s*$")
# cut off by the token limit ("Does a year of", "Head circumference at")
_CUT = frozenset(
    "a an the of at to for with and or in on from by than who that their his her its this "
    "these those into as".split()
)
MAX_PHRASE_WORDS = 15


def is_query_form(line: str) -> bool:
    """A question or a search phrase: not addressed to someone, no code, not cut off mid-phrase,
    and not a statement (a sentence of six words or more ending with a full stop that does not
    ask: an answer or a remark)."""
    words = line.split()
    if not words or _ADDRESSED.search(line) or _CODE.search(line):
        return False
    if words[-1].lower().strip(".,;:…") in _CUT:
        return False
    asks = bool(_QUESTION_WORD.match(line)) or line.rstrip().endswith("?")
    if asks:
        return len(words) >= 4
    if re.search(r"[^.]\.$", line.rstrip()) and len(words) >= 6:
        return False
    return len(words) <= MAX_PHRASE_WORDS


def derived_queries(question: str, corpus: CorpusTerms | None = None) -> list[str]:
    """Searches made from the question itself: its content words ("breastfeeding children IQ")
    and its essential concepts alone ("breastfeeding IQ"), in that order, without repeats."""
    from grounding.concepts import question_concepts

    out: list[str] = []
    terms = set(content_terms(question))
    words = re.findall(r"[\w'’-]+", question)
    kept_words = list(dict.fromkeys(re.sub(r"['’]s$", "", w) for w in words
                                    if w.lower() in terms))  # fmt: skip
    if kept_words:
        out.append(" ".join(kept_words))
    essential = [w for c in question_concepts(question, corpus) for w in c.essential]
    if essential:
        out.append(" ".join(dict.fromkeys(essential)))
    seen = {question.strip().lower().rstrip("?")}
    kept = []
    for q in out:
        if q.lower() not in seen:
            seen.add(q.lower())
            kept.append(q)
    return kept


def select_queries(
    question: str, candidates: Sequence[str], encoder: SentenceEncoder | None, n: int
) -> tuple[list[str], list[float]]:
    """(the candidates about the question, at most ``n``; every candidate's cosine with it)."""
    if not candidates:
        return [], []
    if encoder is None:  # no embedder (BM25-only index): the parser's checks alone
        return list(candidates[:n]), []
    rows = encoder.encode([question, *candidates])
    sims = [float(x) for x in rows[1:] @ rows[0]]
    kept: list[int] = []
    for i, sim in enumerate(sims):
        if sim < SUBQUERY_BAR or sim >= DUPLICATE_BAR:
            continue
        if any(float(rows[1 + i] @ rows[1 + j]) >= DUPLICATE_BAR for j in kept):
            continue
        kept.append(i)
        if len(kept) >= n:
            break
    return [candidates[i] for i in kept], sims


def sub_queries(
    question: str,
    raw: str,
    n: int,
    encoder: SentenceEncoder | None = None,
    corpus: CorpusTerms | None = None,
) -> list[str]:
    """Up to ``n`` searches for multi-query mode from what the model wrote (``raw``), at least
    ``MIN_QUERIES`` when the question gives them (see the module docstring)."""
    parsed = [q for q in parse_queries(raw, 2 * n, original=question) if is_query_form(q)]
    kept, _ = select_queries(question, parsed, encoder, n)
    if len(kept) < MIN_QUERIES:
        have = {q.lower().rstrip("?") for q in kept}
        for q in derived_queries(question, corpus):
            if len(kept) >= max(MIN_QUERIES, 1) or q.lower() in have:
                continue
            kept.append(q)
            have.add(q.lower())
    return kept[:n]
