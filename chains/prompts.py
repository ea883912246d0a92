"""Prompt files (paths from ``cfg.prompts``) and how sources are rendered into them.

Templates use ``{placeholder}`` names only for the values we fill; any other braces (the JSON
example in the yes/no prompt) are left as they are, so users can edit the files freely.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from settings.config import Config
from settings.errors import UserFacingError

_PLACEHOLDER = re.compile(r"\{(context|question|history|n|verdict|counts|findings)\}")


class PromptError(UserFacingError):
    """A prompt file is missing or lacks a placeholder it needs."""


@dataclass(frozen=True)
class Prompts:
    answer: str
    rewrite: str
    multi_query: str
    yes_no: str
    yes_no_path: Path
    lead: str = ""  # a yes/no answer's lead sentence, for a model that writes one (chains.lead)

    @classmethod
    def from_config(cls, cfg: Config) -> Prompts:
        p = cfg.prompts
        return cls(
            answer=_read(cfg.resolve(p.answer), "prompts.answer", ("context", "question")),
            rewrite=_read(cfg.resolve(p.rewrite), "prompts.rewrite", ("history", "question")),
            multi_query=_read(cfg.resolve(p.multi_query), "prompts.multi_query", ("question",)),
            yes_no=_read(cfg.resolve(p.yes_no), "prompts.yes_no", ("context", "question")),
            yes_no_path=cfg.resolve(p.yes_no),
            lead=_read(cfg.resolve(p.lead), "prompts.lead", ("verdict", "counts", "findings")),
        )


def _read(path: Path, key: str, needed: tuple[str, ...]) -> str:
    if not path.is_file():
        raise PromptError(f"{key}: prompt file not found: {path} (fix the path in cfg.yaml)")
    text = path.read_text(encoding="utf-8").strip()
    missing = [n for n in needed if "{" + n + "}" not in text]
    if missing:
        raise PromptError(
            f"{key}: {path} lacks the placeholder(s) " + ", ".join("{" + n + "}" for n in missing)
        )
    return text


def render(template: str, **values: object) -> str:
    """Fill ``{context}``, ``{question}``, ``{history}``, ``{n}``, ``{verdict}``, ``{counts}``,
    ``{findings}``; leave other braces alone."""
    return _PLACEHOLDER.sub(lambda m: str(values.get(m.group(1), m.group(0))), template)


def format_source(n: int, title: str, year: int | None, passage: str) -> str:
    head = f"[{n}] {title.strip()}" + (f" ({year})" if year else "")
    return f"{head}\n{passage.strip()}"


# The verdict line an answer opens with (grounding.consensus.lead_sentence), or the count that
# opens a lead stating its finding ("No (3 of 3 studies) [1–3]: ", grounding.lead)
VERDICT_LINE = re.compile(
    r"^\s*(?:(?:Yes|No) \(\d+ (?:of \d+ )?stud(?:y|ies)\)(?:\s*\[[^\]]*\])?\s*:\s*"
    r"|(?:(?:Yes|No) \(\d+ (?:of \d+ )?stud(?:y|ies)\)|Mixed evidence \([^)]*\)"
    r"|No clear answer \([^)]*\))[^.]*\.\s*)"
)


def format_history(turns: list[tuple[str, str]], max_answer_words: int = 50) -> str:
    """Earlier turns for the rewrite prompt; long answers are shortened (the question matters)
    and lose their verdict line ("No (3 of 3 studies) [1–3].": a count, not what was found; of a
    lead that states its finding, only the count goes)."""
    lines = []
    for user, assistant in turns:
        lines.append(f"User: {user.strip()}")
        assistant = VERDICT_LINE.sub("", assistant or "", count=1)
        if assistant:
            words = assistant.split()
            short = " ".join(words[:max_answer_words])
            if len(words) > max_answer_words:
                short += " …"
            lines.append(f"Assistant: {short}")
    return "\n".join(lines)
