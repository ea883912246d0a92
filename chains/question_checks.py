"""Checks on a question before any work is done for it (CLI, chat, :class:`Assistant`).

* :func:`validate_question`: control and bidi-override characters removed, not empty, at most
  ``chains.max_question_chars`` characters (a 100,000-character question would otherwise hold the
  one model for many minutes);
* :func:`parse_history`: ``--history`` JSON of the exact shape ``[["question", "answer"], ...]``,
  bounded in size and depth;
* :func:`language_refusal`: the corpus and both retrievers are English; a question whose words
  cannot match (another language) gets one clear message instead of unrelated sources or an
  answer not drawn from them.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from grounding.language import in_other_language
from ingest.text import strip_unsafe
from settings.errors import UserFacingError

MAX_HISTORY_TURNS = 50
NOT_ENGLISH = (
    "The corpus is English: I can only search PubMed abstracts with an English question. "
    "Please ask in English."
)
# Words that mark a sentence as English and are not words of the languages py3langid confuses short
# English questions with (es, fr, de, nl, it, pt, da...): "in", "is", "was", "do", "on", "an" are.
ENGLISH_MARKERS = frozenset("""
the of and are does did what which how with for were can be been has have had this that these
those there their than between who whom why when where after before during from by not its into
any more most should could would will may might whether among versus
""".split())
# ... and the English question openers that are words elsewhere too ("do" in pt, "is" in nl)
ENGLISH_OPENERS = frozenset({"do", "is", "was"})


class QuestionError(UserFacingError):
    """A question (or history) that is refused before any work is done."""


def is_blank(question: str | None) -> bool:
    """No letter or digit once control characters and bidi overrides are gone: whitespace,
    zero-width spaces, lone punctuation. Such a message is no question (the chat says so)."""
    return not any(ch.isalnum() for ch in strip_unsafe(question or ""))


class ValidQuestion(str):
    """A question :func:`validate_question` accepted: passed on (the CLI or the chat checks it
    before any work, then hands it to :class:`chains.assistant.Assistant`), it is not checked
    again."""

    __slots__ = ()


def validate_question(question: str | None, max_chars: int) -> ValidQuestion:
    """The question to work on, or a :class:`QuestionError` saying what is wrong with it."""
    if isinstance(question, ValidQuestion) and len(question) <= max_chars:
        return question
    text = strip_unsafe(question or "").strip()
    if is_blank(text):
        raise QuestionError("the question is empty: type a question")
    if len(text) > max_chars:
        raise QuestionError(
            f"the question is {len(text):,} characters long; the limit is {max_chars:,} "
            "(chains.max_question_chars in cfg.yaml): ask it in a sentence or two"
        )
    return ValidQuestion(text)


def parse_history(text: str | None, max_chars: int) -> list[tuple[str, str]]:
    """``--history`` as a list of (question, answer) turns; anything else is a clear error."""
    if not text:
        return []
    usage = '--history must be JSON like [["first question", "its answer"], ...]'
    limit = MAX_HISTORY_TURNS * 5 * max_chars
    if len(text) > limit:
        raise QuestionError(f"{usage}; it is {len(text):,} characters long (limit {limit:,})")
    try:
        data: Any = json.loads(text)
    except RecursionError:
        raise QuestionError(f"{usage}; it is nested too deeply") from None
    except ValueError as err:
        raise QuestionError(f"{usage} ({err})") from None
    if not isinstance(data, list):
        raise QuestionError(f"{usage}; got a JSON {type(data).__name__}")
    if len(data) > MAX_HISTORY_TURNS:
        raise QuestionError(f"{usage}; at most {MAX_HISTORY_TURNS} turns (got {len(data)})")
    turns: list[tuple[str, str]] = []
    for i, turn in enumerate(data, 1):
        if not (isinstance(turn, list) and len(turn) == 2
                and all(isinstance(part, str) for part in turn)):
            raise QuestionError(f"{usage}; turn {i} is not a [question, answer] pair of strings")
        question = validate_question(turn[0], max_chars)
        turns.append((question, strip_unsafe(turn[1]).strip()))
    return turns


def _latin_share(text: str) -> float:
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return 1.0
    latin = sum(1 for c in letters if c.isascii() or "LATIN" in unicodedata.name(c, ""))
    return latin / len(letters)


def language_refusal(question: str) -> str | None:
    """:data:`NOT_ENGLISH` when ``question`` is not English, else None.

    Another script is refused outright. A Latin-script question is refused when it has no
    English function word and the project's language identification
    (:func:`grounding.language.in_other_language`, py3langid, the evidence sentences' bar) is
    confident it is another language: the identifier alone mistakes short English questions for
    other languages now and then, and the BM25 vocabulary cannot tell, as the corpus holds Spanish,
    French and German
    abstracts too (docs/reliability.md "Security")."""
    if _latin_share(question) < 0.5:
        return NOT_ENGLISH
    words = re.findall(r"[a-z]+", question.casefold())
    if set(words) & ENGLISH_MARKERS or (words and words[0] in ENGLISH_OPENERS):
        return None
    return NOT_ENGLISH if in_other_language(question, "en") else None


def refusal_events(question: str, mode: str, text: str, t0: float) -> list[Any]:
    """The Prepared/Token/Done events of a question refused before retrieval."""
    import time

    from chains.result import AnswerResult, DoneEvent, PreparedEvent, TokenEvent

    elapsed = round(time.perf_counter() - t0, 4)
    result = AnswerResult(answer=text, mode=mode, question=question, searched_question=question,
                          refused=True, style="refused",
                          timings={"first_token_s": elapsed, "total_s": elapsed})
    return [PreparedEvent(searched_question=question), TokenEvent(text=text),
            DoneEvent(result=result)]
