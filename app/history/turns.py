"""What a stored conversation says about itself: each answer's record (kept in its message's
metadata, also what feedback is exported with), the conversational history rebuilt from those
records when a conversation is reopened or continued (:func:`followup_history`: the one place
that decides which turns a question is answered with), and the mode it was using."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from settings.config import MODE_NAMES, Config, OpenAILLMConfig

ANSWER_KEY = "pubmed_answer"  # the key in an answer message's metadata
MODE_KEY = "mode"  # the key in a thread's metadata (also the chat session's key)

QA = tuple[str, str]  # one turn of the conversational history: (question, answer)


def model_label(cfg: Config) -> str:
    """The model's name as the user configured it (``llm.model_path``'s file or folder name, the
    OpenAI model, or the built-in SmolLM2-135M-Instruct), with its backend."""
    if isinstance(cfg.llm, OpenAILLMConfig):
        name = cfg.llm.openai_model or "SmolLM2-135M-Instruct"
    elif cfg.llm.model_path:
        name = Path(cfg.llm.model_path).name
    else:
        name = "SmolLM2-135M-Instruct"
    return f"{name} ({cfg.llm.backend})"


def answer_record(question: str, result: Any, mode: str, cfg: Config) -> dict[str, Any]:
    """What is stored with an answer (``result`` is a chains.result.AnswerResult)."""
    return {
        "question": question,
        "answer": result.answer,
        "mode": result.mode or mode,
        "model": model_label(cfg),
        "style": result.style,
        "pmids": [s.pmid for s in result.sources],
        "refused": bool(result.refused),
    }


def _metadata(step: dict[str, Any]) -> dict[str, Any]:
    meta = step.get("metadata") or {}
    if isinstance(meta, str):
        try:
            meta = json.loads(meta)
        except ValueError:
            return {}
    return meta if isinstance(meta, dict) else {}


def answer_records(thread: dict[str, Any]) -> list[dict[str, Any]]:
    """The answer records of a stored thread, oldest first (steps come sorted by creation)."""
    out = []
    for step in thread.get("steps") or []:
        record = _metadata(step).get(ANSWER_KEY)
        if isinstance(record, dict) and isinstance(record.get("question"), str):
            out.append(record)
    return out


def history_of(records: Iterable[dict[str, Any]]) -> list[QA]:
    """(question, answer) of every answer record that was not a refusal, in order."""
    return [(r["question"], str(r.get("answer") or "")) for r in records if not r.get("refused")]


def rebuild_history(thread: dict[str, Any], limit: int) -> list[QA]:
    """The conversational mode's history, from the stored turns: (question, answer) of every
    answer that was not a refusal, the last ``limit`` of them (what the chat keeps while live)."""
    return history_of(answer_records(thread))[-limit:]


def unstored(memory: Sequence[QA], stored: Sequence[QA]) -> list[QA]:
    """The turns of ``memory`` not found, in order, among ``stored`` (each stored turn matches
    one remembered turn at most)."""
    missing: list[QA] = []
    at = 0
    for turn in memory:
        try:
            at = stored.index(turn, at) + 1
        except ValueError:
            missing.append(turn)
    return missing


def followup_history(memory: Sequence[QA], stored: Sequence[QA] | None, limit: int) -> list[QA]:
    """The turns the next question of a live chat is answered with (its last ``limit``).

    ``memory`` is what this chat session has seen (the turns it resumed with and those it
    answered); ``stored`` is the conversation as stored now, or None when history is off or the
    database cannot be read. The stored conversation is the truth: another tab on the same
    conversation may have added turns this session never saw, and a follow-up continues from
    them. A turn of this session not stored yet (Chainlit writes in the background; or the
    writes are failing) is kept, after the stored ones. Without a stored conversation, the
    session's memory is the history."""
    if stored is None:
        return list(memory)[-limit:]
    return [*stored, *unstored(memory, stored)][-limit:]


def stored_mode(thread: dict[str, Any], default: str) -> str:
    """The mode this conversation was using: the thread's metadata, else its last answer's."""
    meta = thread.get("metadata") or {}
    if isinstance(meta, str):
        try:
            meta = json.loads(meta)
        except ValueError:
            meta = {}
    mode = meta.get(MODE_KEY) if isinstance(meta, dict) else None
    if mode in MODE_NAMES:
        return str(mode)
    records = answer_records(thread)
    if records and records[-1].get("mode") in MODE_NAMES:
        return str(records[-1]["mode"])
    return default
