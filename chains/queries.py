"""Parsing what the small LLM writes for multi-query and rewrite steps, and guarding it.

A 135M model's output is often messy: numbered lists, quotes, preambles ("Here are three
queries:"), repeats, or a rewrite that forgets the topic. These functions make the best of it and
fall back to something retrieval can use.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from grounding.concepts import CorpusTerms

from grounding.terms import content_words
from indexing.tokenize import STOPWORDS

# A question's content words are those not in the project's stopword list, with two named
# differences (plain indexing.tokenize.STOPWORDS would change the terms of 175 of the 1,217
# questions in the question files, and the needs_context() of 3 of followups_dev's 20 follow-ups).
# Dropped as well: how a question is asked rather than what about ("tell me", "regarding", "the
# effect of"), and function words scikit-learn's list lacks.
QUESTION_FILLER = frozenset(
    "answer concerning effect effective effects know question questions regarding tell "
    "did does doing having just shall theirs there's what's".split()
)
# Kept: words scikit-learn's list drops that carry a question's point ("among", "first", "still",
# "without", "two", "less", "system", "whose"); a follow-up with them is not short of content.
QUESTION_CONTENT = frozenset(
    """
    across afterwards almost alone along already although always among amongst amoungst amount
    another anyhow anyone anything anyway anywhere around back became become becomes becoming
    beforehand behind below beside besides beyond bill bottom call cannot cant co con couldnt
    cry de describe detail done due eg eight either eleven else elsewhere empty enough etc even
    ever every everyone everything everywhere except fifteen fifty fill find fire first five
    former formerly forty found four front full get give go hasnt hence hereafter hereby herein
    hereupon herself himself however hundred ie inc indeed interest keep last latter latterly
    least less ltd made many meanwhile mill mine moreover mostly move much myself name namely
    neither never nevertheless next nine nobody none noone nothing nowhere often one onto others
    otherwise ourselves part per perhaps put rather re see seem seemed seeming seems serious
    several show side since sincere six sixty somehow someone something sometime sometimes
    somewhere still system take ten themselves thence thereafter thereby therefore therein
    thereupon thick thin third though three throughout thru thus together top toward towards
    twelve twenty two un upon us via well whatever whence whenever whereafter whereas whereby
    wherein whereupon wherever whither whoever whole whose within without yet yourself
    yourselves
    """.split()
)
QUESTION_STOPWORDS = (STOPWORDS - QUESTION_CONTENT) | QUESTION_FILLER
_PREAMBLE = re.compile(
    r"^(here\s+(are|is)|sure|okay|ok|certainly|of course|the following|below are|queries|"
    r"search queries|alternative|these are|i\s+(would|will|can)|standalone question|rewritten)\b",
    re.IGNORECASE,
)
_BULLET = re.compile(
    r"^\s*(?:[-*•]+|\(?\d{1,2}\s*[.):\]]|\(?[a-z][.)]|query\s*\d*\s*[:.)-])\s*", re.IGNORECASE
)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'-]*|\d{4}")
# What a small model writes among its queries that is no query (seen from SmolLM2-135M on the
# verdict questions): a "Q:"/"B:" label before a real query; an answer to the question ("A: Yes,
# a year of simvastatin increases ...", "The answer is yes."); a remark ("Please note that these
# are not exact duplicates ...", "These are all valid queries to answer the question of ...", seen
# in the chat); a timestamp ("2018-04-29 20:57:16.232 - ...").
_QUERY_LABEL = re.compile(r"^(?:q|question|[b-e])\s*:\s+", re.IGNORECASE)  # not "E. coli"
_NOT_A_QUERY = re.compile(
    r"^(?:a\s*:|answers?\s*:|the\s+answer\b|(?:yes|no)[,.!]|please\s+note\b|notes?\s*:|"
    r"note\s+that\b|(?:these|those|they)\s+are\s+(?:all\s+)?(?:valid|good|possible|alternative)\b|"
    r"(?:all\s+(?:of\s+)?)?the\s+above\b)",
    re.IGNORECASE,
)


def content_terms(text: str) -> list[str]:
    """Lower-cased content words in order of appearance, without repeats (years kept; words
    under three letters only when written in capitals, as acronyms are)."""
    return content_words(_WORD.findall(text), stopwords=QUESTION_STOPWORDS, min_len=3)


def _same_term(a: str, b: str) -> bool:
    """Crude stemming: 'child'/'children', 'stimulant'/'stimulants' match."""
    if a == b:
        return True
    n = min(len(a), len(b))
    return n >= 4 and a[: max(4, n - 3)] == b[: max(4, n - 3)]


def _has(terms: Sequence[str], term: str) -> bool:
    return any(_same_term(t, term) for t in terms)


def _clean_line(line: str) -> str:
    line = line.strip()
    for _ in range(3):
        line = _BULLET.sub("", line).strip()
    line = line.strip("\"'“”‘’`").strip()
    line = re.sub(r"\*\*|__", "", line).strip()
    return re.sub(r"\s+", " ", line)


def parse_queries(text: str, n: int, *, original: str = "") -> list[str]:
    """Up to ``n`` distinct queries from a list the LLM wrote, whatever its format."""
    parts: list[str] = []
    for raw in re.split(r"[\n\r]+", text or ""):
        # one line holding several numbered items: "1. foo 2. bar"
        pieces = re.split(r"\s+(?=\(?\d{1,2}[.)]\s+[A-Za-z])", raw)
        parts.extend(pieces)
    seen = {original.strip().lower().rstrip("?.")} if original else set()
    out: list[str] = []
    for part in parts:
        q = _clean_line(part)
        if not q or q.endswith(":"):  # a line that introduces a list is not a query
            continue
        if _PREAMBLE.match(q) and (q.endswith(":") or len(q.split()) > 3 and ":" in q):
            q = q.split(":", 1)[1].strip()
            if not q:
                continue
        if _NOT_A_QUERY.match(q):
            continue
        q = _QUERY_LABEL.sub("", q).strip("\"'“”‘’` ")
        if not any(t[0].isalpha() for t in content_terms(q)) or len(q) > 300:
            continue
        key = q.lower().rstrip("?.")
        if key in seen:
            continue
        seen.add(key)
        out.append(q)
        if len(out) >= n:
            break
    return out


# ---- conversational rewrite guard ------------------------------------------------------------

# "this drug", "these patients": clearly about something said before.
_STRONG_ANAPHORA = frozenset("this these those such same".split())
# "it", "they": often refer inside the question itself ("...which actors starred in it?").
_WEAK_ANAPHORA = frozenset("it its they them their that there he she his her".split())
MAX_REWRITE_WORDS = 40


# Words that point back wherever they stand in a longer question ("their longevity", "the
# stromal ones"); "that" and "there" are left out: in a whole question they are mostly a
# conjunction ("studies that ...") or existential ("is there a link ...").
_POINTS_BACK = (_STRONG_ANAPHORA | _WEAK_ANAPHORA | {"ones", "former", "latter"}) - {
    "that",
    "there",
}


_BE = frozenset("is are was were be been being".split())
# An anticipatory "it" stands for the clause that follows, not for anything said before: "is it
# possible to predict ...", "is it true that ...", "it is known whether ...". The adjectives of
# possibility, truth and knowledge that take such a clause, then "to" / "that" / "whether" / "if".
_EXTRAPOSING = frozenset(
    "possible impossible feasible true known unknown likely unlikely worth worthwhile necessary "
    "advisable reasonable realistic clear".split()
)
_CLAUSE_OPENERS = frozenset("to that whether if for".split())


# Words that presuppose something said before ("even without cranial radiation?": without, as
# against what the last answer was about; "also", "still", "instead"; "afterwards": after the
# event the conversation spoke of): a follow-up using them continues the conversation, however
# complete it reads.
_CONTINUES = frozenset(
    "even still also too either instead again otherwise afterwards afterward thereafter".split()
)


def _anaphors(words: Sequence[str]) -> list[str]:
    """The words of a question (lower-cased) that may point back: all but "such" in "such as"
    (an example follows), an existential "there" ("is there", "there are") and an anticipatory
    "it" ("is it possible to ...": :data:`_EXTRAPOSING`)."""
    out = []
    for i, w in enumerate(words):
        after = words[i + 1] if i + 1 < len(words) else ""
        before = words[i - 1] if i else ""
        if (w == "such" and after == "as") or (w == "there" and _BE & {before, after}):
            continue
        if w == "it" and _anticipatory_it(words, i):
            continue
        out.append(w)
    return out


def _anticipatory_it(words: Sequence[str], i: int) -> bool:
    """Whether ``words[i]`` ("it") is anticipatory: a form of "be" next to it, then one of
    :data:`_EXTRAPOSING` and a word that opens the clause it stands for ("is it possible to
    ...", "it is true that ...", "would it be feasible to ...")."""
    before = words[i - 1] if i else ""
    rest = list(words[i + 1 : i + 4])
    if rest[:1] and rest[0] in _BE:
        rest = rest[1:]
    elif before not in _BE:
        return False
    return len(rest) >= 2 and rest[0] in _EXTRAPOSING and rest[1] in _CLAUSE_OPENERS


def needs_context(followup: str) -> bool:
    """A follow-up that cannot stand alone: short, pronoun-led or starting with and/what about."""
    words = [w.lower() for w in _WORD.findall(followup)]
    if len(content_terms(followup)) < 3:
        return True
    if words and words[0] in ("and", "but", "also", "or"):
        return True
    if re.match(r"\s*(what|how)\s+about\b", followup, re.IGNORECASE):
        return True
    if any(w in _STRONG_ANAPHORA for w in _anaphors(words)):
        return True
    return len(content_terms(followup)) < 5 and any(w in _WEAK_ANAPHORA for w in _anaphors(words))


def names_own_topic(followup: str, corpus: CorpusTerms | None = None) -> bool:
    """A follow-up that is a question of its own, which a changed topic may be: it does not need
    context (:func:`needs_context`), no word of it points back at the conversation ("it",
    "their", "these children", "the stromal ones") or presupposes what was said ("even",
    "still", "also", "as well"), and it names at least one essential concept
    (:func:`grounding.concepts.question_concepts`: "mortality", "fluoride"; ``corpus``, the
    index's word counts, when known). How much the conversation's topic then weighs is decided
    by :func:`retrievers.followup.topic_weights`."""
    from grounding.concepts import question_concepts  # wordfreq: loaded on first use

    if not complete_question(followup):
        return False
    return any(c.names_a_topic for c in question_concepts(followup, corpus))


def complete_question(followup: str) -> bool:
    """A question that reads whole on its own: it does not need context
    (:func:`needs_context`), no word of it points back and nothing presupposes what was said
    (the checks of :func:`names_own_topic` before its concepts)."""
    if needs_context(followup):
        return False
    words = [w.lower() for w in _WORD.findall(followup)]
    if any(w in _POINTS_BACK for w in _anaphors(words)):
        return False
    return not (_CONTINUES & set(words) or re.search(r"\bas\s+well\b", followup, re.I))


def clean_rewrite(text: str) -> str:
    """First meaningful line of the rewrite, without labels or quotes."""
    for line in (text or "").splitlines():
        line = _clean_line(line)
        line = re.sub(
            r"^(standalone|rewritten|new)?\s*question\s*:\s*", "", line, flags=re.IGNORECASE
        )
        line = _clean_line(line)
        if line and not (_PREAMBLE.match(line) and line.endswith(":")):
            return line
    return ""


def fallback_query(followup: str, previous_questions: Sequence[str], max_terms: int = 6) -> str:
    """Previous question's key terms + the follow-up: keeps the topic when a rewrite fails."""
    fu = content_terms(followup)
    key: list[str] = []
    for q in reversed(previous_questions):
        for w in _WORD.findall(q):
            lw = w.lower()
            if lw in QUESTION_STOPWORDS or (len(lw) < 3 and not w.isupper()):
                continue
            if not _has(fu, lw) and not _has([k.lower() for k in key], lw):
                key.append(w)
        if key:
            break
    body = followup.strip().rstrip("?").strip()
    body = re.sub(r"^(and|but|also|or)\s+|^(what|how)\s+about\s+", "", body, flags=re.IGNORECASE)
    return (" ".join(key[:max_terms]) + " " + body).strip() + "?"


def guard_rewrite(
    followup: str, rewrite: str, previous_questions: Sequence[str]
) -> tuple[str, bool]:
    """(question to search, whether the fallback was used).

    A rewrite is kept when it is non-empty, not rambling, keeps every content word of the
    follow-up, and (when the follow-up depends on context) mentions the earlier topic.
    """
    rw = clean_rewrite(rewrite)
    rw_terms = content_terms(rw)
    ok = bool(rw_terms) and len(rw.split()) <= MAX_REWRITE_WORDS
    if ok:
        ok = all(_has(rw_terms, t) for t in content_terms(followup))
    if ok and needs_context(followup) and previous_questions:
        prev_terms = [t for q in previous_questions for t in content_terms(q)]
        ok = any(_has(rw_terms, t) for t in prev_terms if not _has(content_terms(followup), t))
    if ok:
        return rw, False
    return fallback_query(followup, previous_questions), True
