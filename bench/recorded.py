"""``python -m app bench recorded record OUT`` / ``... compare A B``: a fixed set of real answers,
recorded and compared token for token, to show that a refactoring changed no behaviour.

``record`` runs :data:`CASES` (yes/no, open, follow-up with history, filtered, abstaining,
refused, not English, a blank question; the three modes) through the real
:class:`~chains.assistant.Assistant` in each ``--styles`` (default: extractive and generative,
with the configured LLM, SmolLM2-135M by default) and writes, per case and style, the streamed
token pieces and the whole result (``ask --json``'s, every source field included) to one JSON
file; timings, which vary from run to run, are left out. ``compare`` reports which recorded
answers differ (the stream token by token, then the first differing field of the result) and
exits 1 if any does.

Point ``--config`` at a copy of cfg.yaml whose ``index`` is the one to record on (the test suite's
~450-article index: ``index: {dir: <repo>/.cache/test-index, name: <key>}`` with
``retrieval.score_threshold: 0.25``, as ``tests/conftest.py`` builds it), with ``llm.timeout_s``
raised (3600) so that a loaded machine cannot cut a generated answer short. A case whose question
retrieves a retracted article would be recorded as any other (the shared corpora hold none).
Two recordings of the same code on one machine were identical, token for token (62 of 62).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chains.result import AnswerResult, DoneEvent, TokenEvent
from settings.config import Config
from settings.errors import UserFacingError

STYLES = ("extractive", "generative")

ADHD_TURN = (
    "Is methylphenidate associated with better working memory in children with ADHD?",
    "Methylphenidate improved working memory in children with ADHD [1].",
)


@dataclass(frozen=True)
class Case:
    id: str
    question: str
    mode: str = "plain"
    history: tuple[tuple[str, str], ...] = ()


CASES: tuple[Case, ...] = (
    # yes/no questions (the verdict and its lead)
    Case("yn-wm-training", "Does working memory training improve fluid intelligence?"),
    Case("yn-testosterone", "In young and middle-aged men with hypogonadotropic hypogonadism, "
         "does two years of testosterone replacement improve attention, executive function and "
         "psychomotor speed?"),  # fmt: skip
    Case("yn-simvastatin", "In children with neurofibromatosis type 1, does a year of simvastatin "
         "raise full-scale IQ or reduce attention problems compared with placebo?"),  # fmt: skip
    Case("yn-cmv", "In children with congenital cytomegalovirus infection, is a larger volume of "
         "white matter lesions on MRI associated with lower IQ?"),  # fmt: skip
    Case("yn-lace-plant", "Do mitochondria play a role in remodelling lace plant leaves during "
         "programmed cell death?"),  # fmt: skip
    Case("yn-mammography", "Can tailored interventions increase mammography use among HMO women?"),
    Case("yn-vlbw", "Do vlbw young adults report more problems regarding attention / executive "
         "function in daily life than controls?"),  # fmt: skip
    # open questions
    Case("open-ubiquinone", "What is suggested about the relationship between ubiquinone levels "
         "and ADHD pathogenesis?"),  # fmt: skip
    Case("open-16q24", "What are some characteristic features of the 16q24.3 microdeletion "
         "syndrome?"),  # fmt: skip
    Case("open-heart-surgery", "What factors independently predicted a poorer intelligence "
         "quotient at 4 years in infants undergoing open-heart surgery for congenital heart "
         "disease?"),  # fmt: skip
    Case("open-ai-ethics", "What approach is recommended for ensuring sound and ethical "
         "decisions when utilizing artificial intelligence in precision medicine?"),  # fmt: skip
    # filtered
    Case("filter-rct", "Does methylphenidate improve attention in children with ADHD? RCTs only"),
    Case("filter-after-2015", "What is known about intelligence and ADHD after 2015?"),
    Case("filter-between", "Is working memory training effective between 2013 and 2016?"),
    Case("filter-humans", "Does stimulant medication affect IQ scores in humans?"),
    # abstaining: on topic words, but no abstract answers it / a drug no abstract mentions
    Case("abstain-inclisiran", "Does twice-yearly inclisiran lower LDL cholesterol in adults "
         "with heterozygous familial hypercholesterolemia?"),  # fmt: skip
    Case("abstain-mavacamten", "Does mavacamten improve intelligence in children with ADHD?"),
    # refused: nothing retrieved, off-topic, not English, blank
    Case("refused-offtopic", "How do I bake a sourdough bread with a crispy crust?"),
    Case("refused-football", "Who won the football world cup final?"),
    Case("refused-spanish", "¿Cuál es la relación entre la inteligencia y la mortalidad?"),
    Case("refused-blank", "   "),
    # conversational: first turns and follow-ups with history
    Case("conv-first", "What is known about ubiquinone in children with ADHD?", "conversational"),
    Case("conv-followup-marker", "Is it a marker of their antioxidant system?", "conversational",
         (("What is known about ubiquinone in children with ADHD?",
           "Ubiquinone levels were lower in children with ADHD [1]."),)),  # fmt: skip
    Case("conv-followup-eeg", "What did their EEG power spectrum show?", "conversational",
         (("How is working memory studied in children with learning disorders?",
           "Working memory was studied with EEG in children with learning disorders [1]."),)),
    Case("conv-followup-yn", "Does it also improve attention?", "conversational", (ADHD_TURN,)),
    Case("conv-followup-filter", "and in RCTs only?", "conversational", (ADHD_TURN,)),
    Case("conv-followup-offtopic", "How do I bake bread?", "conversational", (ADHD_TURN,)),
    # multi-query (the LLM writes the sub-queries)
    Case("mq-yn", "Does working memory training improve fluid intelligence?", "multi-query"),
    Case("mq-open", "What is the 16q24.3 microdeletion syndrome?", "multi-query"),
    Case("mq-abstain", "Does mavacamten improve intelligence in children with ADHD?",
         "multi-query"),  # fmt: skip
    Case("mq-refused", "How do I bake a sourdough bread with a crispy crust?", "multi-query"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True)
    rec = sub.add_parser("record", help="answer every case and write the answers to OUT")
    rec.add_argument("out", help="JSON file to write")
    rec.add_argument("--styles", nargs="+", choices=("extractive", "generative", "auto"),
                     default=list(STYLES))  # fmt: skip
    rec.add_argument("--only", nargs="*", default=None, help="case ids (default: all)")
    cmp = sub.add_parser("compare", help="compare two recorded files token for token")
    cmp.add_argument("before")
    cmp.add_argument("after")


def _result_record(result: AnswerResult) -> dict[str, Any]:
    data = result.model_dump(mode="json")
    data.pop("timings", None)
    return data


async def _answer(assistant: Any, case: Case) -> dict[str, Any]:
    from chains.question_checks import validate_question

    pieces: list[str] = []
    try:
        question = validate_question(case.question, assistant.cfg.chains.max_question_chars)
        result: AnswerResult | None = None
        async for event in assistant.astream(question, mode=case.mode, history=list(case.history)):
            if isinstance(event, TokenEvent):
                pieces.append(event.text)
            elif isinstance(event, DoneEvent):
                result = event.result
    except UserFacingError as err:
        return {"error": str(err), "tokens": pieces}
    assert result is not None
    return {"tokens": pieces, "result": _result_record(result)}


def record(cfg: Config, styles: list[str], only: list[str] | None = None) -> dict[str, Any]:
    from chains.assistant import Assistant
    from retrievers.loading import load_retriever

    retriever = load_retriever(cfg)
    cases = [c for c in CASES if only is None or c.id in only]
    llm = None
    answers: list[dict[str, Any]] = []
    for style in styles:
        styled = cfg.model_copy(
            update={"answer": cfg.answer.model_copy(update={"style": style})}
        )
        assistant = Assistant(styled, retriever, llm)
        for case in cases:
            out = asyncio.run(_answer(assistant, case))
            answers.append({"id": case.id, "style": style, "mode": case.mode,
                            "question": case.question, "history": case.history, **out})  # fmt: skip
            print(f"{style:10s} {case.id:24s} {(out.get('result') or out)['answer'][:90]!r}"
                  if "result" in out else f"{style:10s} {case.id:24s} error: {out['error']}",
                  file=sys.stderr, flush=True)  # fmt: skip
        llm = assistant._llm  # loaded once, shared by the next style
    return {
        "index": str(cfg.index_dir),
        "llm": cfg.llm.model_dump(mode="json"),
        "answers": answers,
    }


def _first_difference(a: Any, b: Any, path: str = "") -> str | None:
    if type(a) is not type(b):
        return f"{path or '.'}: {a!r} != {b!r}"
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{path}.{key}: only in {'after' if key in b else 'before'}"
            found = _first_difference(a[key], b[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            found = _first_difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None if len(a) == len(b) else f"{path}: {len(a)} items != {len(b)}"
    return None if a == b else f"{path or '.'}: {a!r} != {b!r}"


def compare(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """One line per recorded answer that differs (empty: identical, token for token)."""
    def keyed(data: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
        return {(a["id"], a["style"]): a for a in data["answers"]}

    old, new = keyed(before), keyed(after)
    out = [f"{k[1]} {k[0]}: only in {'before' if k in old else 'after'}"
           for k in sorted(set(old) ^ set(new))]  # fmt: skip
    for key in sorted(set(old) & set(new)):
        a, b = old[key], new[key]
        if a.get("tokens") != b.get("tokens"):
            out.append(f"{key[1]} {key[0]}: streamed tokens differ: "
                       f"{''.join(a.get('tokens', []))!r} != {''.join(b.get('tokens', []))!r}")
            continue
        found = _first_difference(
            {k: v for k, v in a.items() if k != "tokens"},
            {k: v for k, v in b.items() if k != "tokens"},
        )
        if found:
            out.append(f"{key[1]} {key[0]}: {found[:400]}")
    return out


def run(cfg: Config, args: argparse.Namespace) -> int:
    if args.action == "record":
        data = record(cfg, args.styles, args.only)
        Path(args.out).write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n",
                                  encoding="utf-8")  # fmt: skip
        print(f"{len(data['answers'])} answers written to {args.out}")
        return 0
    before = json.loads(Path(args.before).read_text(encoding="utf-8"))
    after = json.loads(Path(args.after).read_text(encoding="utf-8"))
    differ = compare(before, after)
    n = len({(a["id"], a["style"]) for a in before["answers"]})
    for line in differ:
        print(line)
    print(f"{n - len(differ)} of {n} recorded answers identical, token for token"
          + (f"; {len(differ)} differ" if differ else ""))  # fmt: skip
    return 1 if differ else 0
