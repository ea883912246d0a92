"""Deciding per question: option log-probs after the yes/no prompt (``score``), the model's JSON
(``json``), or the classifier over the evidence's cues and the model's channel scores
(``classifier``). The model's batching lives in the chat-model class (``score_after_prefixes``)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage

from chains.prompts import render
from chains.steps import answer_messages
from eval.verdict.calibration import Calibration
from eval.verdict.cues import CHANNEL_FEATURES, LLM_FEATURES, cue_features
from eval.verdict.evidence import Evidence, verdict_evidence
from eval.verdict.labels import VERDICTS, parse_verdict_json
from grounding.yes_no import AnswerLabel
from llms.capabilities import LikelihoodScorer, as_scorer

# The answer slot of the JSON the yes/no prompt asks for; the options are scored right after it.
SCORE_PREFIX = '{"draft": "", "answer": "'
OPTION_SPELLINGS: dict[str, tuple[str, ...]] = {
    "yes": ("yes", "Yes"),
    "no": ("no", "No"),
    "maybe": ("maybe", "Maybe"),
}


@dataclass
class VerdictOutcome:
    verdict: AnswerLabel | None
    logprobs: dict[str, float]
    raw: str = ""
    draft: str = ""
    invalid: bool = False  # the JSON generation could not be parsed (then scoring decided)
    features: dict[str, float] = field(default_factory=dict)  # the classifier's inputs
    evidence: str = ""  # the sentences the classifier read
    sources: list[int] = field(default_factory=list)  # the documents read: 1 = the first given


def yes_no_messages(
    template: str, question: str, documents: Sequence[Document], max_words: int | None = 160
) -> list[BaseMessage]:
    return answer_messages(template, question, documents, max_words)


def option_logprobs(
    llm: LikelihoodScorer, messages: Sequence[BaseMessage], prefix: str = SCORE_PREFIX
) -> dict[str, float]:
    """log P(option | prompt, prefix) for yes/no/maybe, summed over spellings."""
    flat = [(v, s) for v in VERDICTS for s in OPTION_SPELLINGS[v]]
    scores = llm.score_continuations(messages, [s for _, s in flat], prefix=prefix)
    out: dict[str, float] = {}
    for v in VERDICTS:
        vals = [sc for (vv, _), sc in zip(flat, scores, strict=True) if vv == v]
        m = max(vals)
        out[v] = m + math.log(sum(math.exp(x - m) for x in vals)) if m > -math.inf else m
    return out


def score_verdict(
    llm: LikelihoodScorer,
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
    from llms.llm import with_max_tokens

    msgs = yes_no_messages(template, question, documents, max_words)
    raw = str(with_max_tokens(llm, max_new_tokens).invoke(msgs).content)
    parsed = parse_verdict_json(raw)
    if parsed.verdict is not None:
        return VerdictOutcome(parsed.verdict, {}, raw, parsed.draft, invalid=not parsed.valid_json)
    scorer = as_scorer(llm)
    if scorer is not None:
        out = score_verdict(
            scorer, template, question, documents, calibration,
            draft=parsed.draft, max_words=max_words,
        )  # fmt: skip
        out.raw, out.invalid = raw, True
        return out
    return VerdictOutcome(None, {}, raw, parsed.draft, invalid=True)


def _json_str(text: str) -> str:
    return json.dumps(text[:400])


# ---- evidence + classifier -----------------------------------------------------------------------

# The short prompt the options are scored after (``prompts/yes_no.evidence.txt`` overrides it).
EVIDENCE_TEMPLATE = (
    "{evidence}\n\nQuestion: {question}\nBased on the text above, answer yes, no or maybe."
)


# The channel prompt (``prompts/yes_no.channel.txt`` overrides it) and the assistant turn's start
# before the conclusion is scored (see :func:`channel_logprobs`).
CHANNEL_TEMPLATE = (
    "Question: {question}\nAnswer yes, no or maybe, then quote the study's conclusion."
)
CHANNEL_PREFIX = "{Option}. Conclusion:"


def companion_template(
    yes_no_prompt: Path, suffix: str, default: str, needed: tuple[str, ...]
) -> str:
    """The template in the file next to the yes/no prompt (``prompts/yes_no<suffix>``), or
    ``default`` when that file is absent or lacks one of the ``needed`` placeholders."""
    try:
        text = yes_no_prompt.with_suffix(suffix).read_text(encoding="utf-8").strip()
    except OSError:
        return default
    return text if all("{" + n + "}" in text for n in needed) else default


def load_evidence_template(yes_no_prompt: Path) -> str:
    """``prompts/yes_no.evidence.txt``, else :data:`EVIDENCE_TEMPLATE`."""
    return companion_template(
        yes_no_prompt, ".evidence.txt", EVIDENCE_TEMPLATE, ("evidence", "question")
    )


def evidence_messages(template: str, question: str, evidence: str) -> list[BaseMessage]:
    mark = "\x00evidence\x00"  # render() fills {question}; {evidence} is filled here
    text = render(template.replace("{evidence}", mark), question=question)
    return [HumanMessage(text.replace(mark, evidence or "(no sources)"))]


def verdict_features(
    llm: BaseChatModel | None,
    question: str,
    evidence: Evidence,
    template: str = EVIDENCE_TEMPLATE,
    *,
    with_llm: bool = True,
    with_channel: bool = False,
    channel_template: str = CHANNEL_TEMPLATE,
) -> tuple[dict[str, float], dict[str, float]]:
    """(features, option log-probs): the cues of the conclusion's wording; with ``with_llm`` and a
    model that can score, ``lp_no`` = log P(no) - log P(yes) and ``lp_maybe`` after the short
    evidence prompt; with ``with_channel``, ``ch_no`` = log P(conclusion | "No.") -
    log P(conclusion | "Yes.") and ``ch_maybe`` (see :func:`channel_logprobs`)."""
    features = cue_features(question, evidence.conclusion)
    logprobs: dict[str, float] = {}
    scorer = as_scorer(llm)
    if with_llm and scorer is not None:
        msgs = evidence_messages(template, question, evidence.text)
        logprobs = option_logprobs(scorer, msgs, prefix="")
        features["lp_no"] = logprobs["no"] - logprobs["yes"]
        features["lp_maybe"] = logprobs["maybe"] - logprobs["yes"]
    if with_channel and scorer is not None:
        ch = channel_logprobs(scorer, question, evidence.conclusion, channel_template)
        features["ch_no"] = ch["no"] - ch["yes"]
        features["ch_maybe"] = ch["maybe"] - ch["yes"]
    return features, logprobs


def classify_verdict(
    llm: BaseChatModel | None,
    question: str,
    documents: Sequence[Document],
    calibration: Calibration,
    *,
    template: str = EVIDENCE_TEMPLATE,
    article_tail: Callable[[Document], str | None] | None = None,
    channel_template: str = CHANNEL_TEMPLATE,
) -> VerdictOutcome:
    """The calibrated classifier's verdict from the selected evidence (one batched forward pass
    when its features include the model's channel scores, one more for the option log-probs)."""
    clf = calibration.classifier
    if clf is None:
        raise ValueError("calibration has no classifier: fit one with `eval answers --calibrate`")
    evidence = verdict_evidence(question, documents, article_tail)
    features, logprobs = verdict_features(
        llm, question, evidence, template,
        with_llm=clf.uses(LLM_FEATURES), with_channel=clf.uses(CHANNEL_FEATURES),
        channel_template=channel_template,
    )  # fmt: skip
    return VerdictOutcome(
        clf.decide(features), logprobs, features=features, evidence=evidence.text
    )


# ---- the channel direction: how likely is the evidence after each answer? ------------------------
# A 135M model barely reads a question, so P(answer | evidence) is nearly flat; P(evidence | answer)
# ("noisy channel" scoring) lets it compare the evidence's wording with "Yes." / "No." / "Maybe."
# written just before it, which it can do.


def load_channel_template(yes_no_prompt: Path) -> str:
    """``prompts/yes_no.channel.txt``, else :data:`CHANNEL_TEMPLATE`."""
    return companion_template(yes_no_prompt, ".channel.txt", CHANNEL_TEMPLATE, ("question",))


def channel_logprobs(
    llm: LikelihoodScorer,
    question: str,
    evidence: str,
    template: str = CHANNEL_TEMPLATE,
    max_tokens: int | None = 48,
) -> dict[str, float]:
    """log P(evidence | question, "<Option>. Conclusion:") for each option, over the evidence's
    first ``max_tokens`` tokens (the model batches the three prefixes where it can)."""
    messages = [HumanMessage(render(template, question=question))]
    continuation = " " + (evidence or "(no sources)")
    prefixes = {v: CHANNEL_PREFIX.format(Option=v.capitalize()) for v in VERDICTS}
    scores = llm.score_after_prefixes(
        messages, list(prefixes.values()), continuation, max_tokens=max_tokens
    )
    return dict(zip(prefixes, scores, strict=True))
