"""The yes/no/maybe verdict: JSON generation parsed robustly, or calibrated option scoring."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from chains.steps import answer_messages
from chains.yesno import VERDICTS, Calibration, Verdict, parse_verdict_json

# The answer slot of the JSON the yes/no prompt asks for; the options are scored right after it.
SCORE_PREFIX = '{"draft": "", "answer": "'
OPTION_SPELLINGS: dict[str, tuple[str, ...]] = {
    "yes": ("yes", "Yes"),
    "no": ("no", "No"),
    "maybe": ("maybe", "Maybe"),
}


@dataclass
class VerdictOutcome:
    verdict: Verdict | None
    logprobs: dict[str, float]
    raw: str = ""
    draft: str = ""
    invalid: bool = False  # the JSON generation could not be parsed (then scoring decided)


def can_score(llm: BaseChatModel) -> bool:
    """Only local models expose option log-probabilities."""
    return callable(getattr(llm, "score_continuations", None))


def can_continue(llm: BaseChatModel) -> bool:
    """Local models can continue an assistant turn that is already begun (``assistant_prefix``)."""
    from chains.hf_chat import LocalHFChatModel

    return isinstance(llm, LocalHFChatModel)


def yes_no_messages(
    template: str, question: str, documents: Sequence[Document], max_words: int | None = 160
) -> list[BaseMessage]:
    return answer_messages(template, question, documents, max_words)


def option_logprobs(
    llm: BaseChatModel, messages: Sequence[BaseMessage], prefix: str = SCORE_PREFIX
) -> dict[str, float]:
    """log P(option | prompt, prefix) for yes/no/maybe, summed over spellings."""
    flat = [(v, s) for v in VERDICTS for s in OPTION_SPELLINGS[v]]
    scores = llm.score_continuations(messages, [s for _, s in flat], prefix=prefix)  # type: ignore[attr-defined]
    out: dict[str, float] = {}
    for v in VERDICTS:
        vals = [sc for (vv, _), sc in zip(flat, scores, strict=True) if vv == v]
        m = max(vals)
        out[v] = m + math.log(sum(math.exp(x - m) for x in vals)) if m > -math.inf else m
    return out


def score_verdict(
    llm: BaseChatModel,
    template: str,
    question: str,
    documents: Sequence[Document],
    calibration: Calibration,
    *,
    draft: str = "",
    max_words: int | None = 160,
) -> VerdictOutcome:
    msgs = yes_no_messages(template, question, documents, max_words)
    prefix = SCORE_PREFIX if not draft else '{"draft": ' + _json_str(draft) + ', "answer": "'
    lp = option_logprobs(llm, msgs, prefix)
    return VerdictOutcome(calibration.decide(lp), lp, draft=draft)


def generate_verdict(
    llm: BaseChatModel,
    template: str,
    question: str,
    documents: Sequence[Document],
    calibration: Calibration,
    *,
    max_new_tokens: int = 64,
    max_words: int | None = 160,
) -> VerdictOutcome:
    """Ask for the JSON; if it is broken, score the options (after the draft when one was read)."""
    from chains.llm import with_max_tokens

    msgs = yes_no_messages(template, question, documents, max_words)
    raw = str(with_max_tokens(llm, max_new_tokens).invoke(msgs).content)
    parsed = parse_verdict_json(raw)
    if parsed.verdict is not None:
        return VerdictOutcome(parsed.verdict, {}, raw, parsed.draft, invalid=not parsed.valid_json)
    if can_score(llm):
        out = score_verdict(
            llm, template, question, documents, calibration, draft=parsed.draft, max_words=max_words
        )
        out.raw, out.invalid = raw, True
        return out
    return VerdictOutcome(None, {}, raw, parsed.draft, invalid=True)


def _json_str(text: str) -> str:
    import json

    return json.dumps(text[:400])
