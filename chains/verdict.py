"""The yes/no/maybe verdict: JSON generation parsed robustly, calibrated option scoring, or (the
default once fitted) a small classifier over the top article's conclusion: evidence cues plus the
tiny model's "channel" scores, log P(conclusion | "Yes." / "No." / "Maybe.")."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from chains.steps import answer_messages
from chains.yesno import (
    CHANNEL_FEATURES,
    LLM_FEATURES,
    VERDICTS,
    Calibration,
    Evidence,
    Verdict,
    cue_features,
    parse_verdict_json,
    select_evidence,
)

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
    features: dict[str, float] = field(default_factory=dict)  # the classifier's inputs
    evidence: str = ""  # the sentences the classifier read


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


class ArticleTails:
    """The last chunk of a retrieved article, where an abstract's conclusion is: retrieval returns
    each article's best-matching chunk, which holds the conclusion only about half the time.

    Asks the retriever's ``article_chunks(pmid)``; a retriever without it (a test double) leaves
    the retrieved chunk as it is."""

    def __init__(self, retriever: Any) -> None:
        by_pmid = getattr(retriever, "article_chunks", None)
        self._article_chunks = by_pmid if callable(by_pmid) else None

    def __call__(self, doc: Document) -> str | None:
        pmid = str(doc.metadata.get("pmid") or "")
        if not pmid or self._article_chunks is None:
            return None
        chunks = list(self._article_chunks(pmid) or [])
        if not chunks:
            return None
        last = max(chunks, key=lambda d: int(d.metadata.get("chunk_index", 0)))
        return last.page_content


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
    return select_evidence(question, text, max_words)


def evidence_messages(template: str, question: str, evidence: str) -> list[BaseMessage]:
    from langchain_core.messages import HumanMessage

    from chains.prompts import render

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
    scorable = llm is not None and can_score(llm)
    if with_llm and scorable:
        msgs = evidence_messages(template, question, evidence.text)
        logprobs = option_logprobs(llm, msgs, prefix="")  # type: ignore[arg-type]
        features["lp_no"] = logprobs["no"] - logprobs["yes"]
        features["lp_maybe"] = logprobs["maybe"] - logprobs["yes"]
    if with_channel and scorable:
        ch = channel_logprobs(llm, question, evidence.conclusion, channel_template)  # type: ignore[arg-type]
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
    llm: BaseChatModel,
    question: str,
    evidence: str,
    template: str = CHANNEL_TEMPLATE,
    max_tokens: int | None = 48,
) -> dict[str, float]:
    """log P(evidence | question, "<Option>. Conclusion:") for each option, over the evidence's
    first ``max_tokens`` tokens: one batched forward pass on a local transformers model, else
    three ``score_continuations`` calls."""
    from langchain_core.messages import HumanMessage

    from chains.prompts import render

    messages = [HumanMessage(render(template, question=question))]
    continuation = " " + (evidence or "(no sources)")
    prefixes = {v: CHANNEL_PREFIX.format(Option=v.capitalize()) for v in VERDICTS}
    model = getattr(llm, "model", None)
    tokenizer = getattr(llm, "tokenizer", None)
    if model is None or tokenizer is None or not callable(getattr(llm, "encode_messages", None)):
        if max_tokens is not None:  # about 1.3 tokens a word
            continuation = " ".join(continuation.split()[: max(1, int(max_tokens / 1.3))])
        return {
            v: llm.score_continuations(messages, [continuation], prefix=p)[0]  # type: ignore[attr-defined]
            for v, p in prefixes.items()
        }
    import torch

    prompt = llm.encode_messages(messages)  # type: ignore[attr-defined]
    cont = tokenizer(continuation, add_special_tokens=False)["input_ids"][:max_tokens]
    seqs = [prompt + tokenizer(p, add_special_tokens=False)["input_ids"] for p in prefixes.values()]
    starts = [len(s) for s in seqs]
    seqs = [s + cont for s in seqs]
    width = max(len(s) for s in seqs)
    pad = tokenizer.pad_token_id or tokenizer.eos_token_id or 0
    device = getattr(model, "device", "cpu")
    ids = torch.tensor([s + [pad] * (width - len(s)) for s in seqs], device=device)
    mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in seqs], device=device)
    lock = getattr(llm, "_lock", None)
    with lock if lock is not None else nullcontext(), torch.inference_mode():
        logits = model(input_ids=ids, attention_mask=mask).logits.float()
    logp = torch.log_softmax(logits, dim=-1)
    out: dict[str, float] = {}
    for row, (v, start) in enumerate(zip(prefixes, starts, strict=True)):
        targets = torch.tensor(cont, device=device)
        positions = torch.arange(start - 1, start - 1 + len(cont), device=device)
        out[v] = float(logp[row, positions, targets].sum())
    return out
