"""``python -m app <command>``: one entry point. Each command lives in the module that owns it.

A command module exposes ``add_arguments(parser)`` and ``run(cfg, args) -> int``; it is imported
only when its command runs (or its ``--help`` is asked for), so ``--help`` and light commands do
not import the others' dependencies.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from settings.config import ConfigError, load_config
from settings.errors import UserFacingError
from settings.offline import offline_env

# command -> (help, module) or command -> (help, {subcommand: (help, module)})
COMMANDS: dict[str, tuple[str, str | dict[str, tuple[str, str]]]] = {
    "ingest": (
        "read the corpus (or fetch it from PubMed) and report what was parsed",
        "ingest.command",
    ),
    "index": (
        "build, update or inspect the search indices",
        {
            "build": (
                "build the index from the corpus (resumes an interrupted build)",
                "indexing.commands.build",
            ),
            "update": (
                "embed only new or changed PMIDs into the index",
                "indexing.commands.update",
            ),
            "stats": ("print what the index holds", "indexing.commands.stats"),
        },
    ),
    "library": (
        "your own additions from PubMed: add a search, list, remove (README \"Your library\")",
        {
            "add": ("search PubMed, add the new articles and index them in seconds",
                    "indexing.commands.library_add"),
            "list": ("each search: date, query, PubMed's match count, fetched, new",
                     "indexing.commands.library_list"),
            "remove": ("take a search (query or id) or --pmids out of the library and index",
                       "indexing.commands.library_remove"),
            "sync": ("index what the library holds (after an interrupted addition)",
                     "indexing.commands.library_sync"),
        },
    ),
    "ask": ("answer a question from the index", "chains.command"),
    "eval": (
        "score retrieval or answers on a question file",
        {
            "retrieval": ("hit@k, MRR, nDCG for BM25, dense and hybrid", "eval.retrieval"),
            "answers": ("PubMedQA-style yes/no/maybe accuracy", "eval.answers"),
            "tokenizer": ("gpt4all vs Hugging Face token ids on corpus text", "eval.tokenizer"),
            "grounding": (
                "supported-sentence rate, citing, abstention and ROUGE-L of answers",
                "eval.grounding",
            ),
            "followups": (
                "two-turn conversations: the follow-up's hit@k and MRR with and without history",
                "eval.followups",
            ),
            "conversations": (
                "conversations of 3-4 turns: each later turn's hit@k and MRR asked with the "
                "conversation, and how close the searched question is to the ideal standalone one",
                "eval.conversations",
            ),
            "multiquery": (
                "multi-query retrieval from stored model outputs: every parsed line vs the "
                "sub-queries kept (hit@k, MRR)",
                "eval.multi_query",
            ),
            "designs": (
                "study-design rules: precision and recall per design against indexers' labels",
                "eval.designs",
            ),
            "verdicts": (
                "verdict coverage, precision and contradictions; abstention on unanswerable "
                "questions",
                "eval.verdicts",
            ),
            "autolabel": (
                "yes/no questions labelled by the corpus's own titles; the judgement scored on "
                "them",
                "eval.autolabel",
            ),
            "brands": (
                "questions naming a brand, drawn from the titles that name its drug class "
                "(score them with eval retrieval)",
                "eval.brand_questions",
            ),
        },
    ),
    "bench": (
        "measure speed and memory",
        {
            "ingest": ("parse, chunk and embed throughput; index size; peak RSS", "bench.ingest"),
            "retrieval": ("query latency and how it grows with corpus size", "bench.retrieval"),
            "answer": ("time to first token and full-answer time per mode", "bench.answer"),
            "grounding": ("ms per question for evidence and the support check", "bench.grounding"),
            "library": (
                "adding ~100 abstracts from a PubMed search (local replay server): search, "
                "fetch, ingest, embed, BM25, publish, beside a rebuild",
                "bench.library",
            ),
            "chat": (
                "many users at once through the real chat server: time to answer, queueing, "
                "peak RSS, no mixed histories",
                "bench.chat",
            ),
            "recorded": (
                "record a fixed set of real answers, or compare two recordings token for token",
                "bench.recorded",
            ),
            "api": (
                "many API clients at once (and chat users) through the real server: all "
                "answered, own sources, no mixed histories, p50/p95, peak RSS",
                "bench.api",
            ),
        },
    ),
    "serve": ("start the Chainlit chat at http://localhost:8000 (and the API beside it)",
              "app.serve"),
    "api": ("serve the HTTP API, OpenAI-compatible endpoint and MCP alone (no chat)",
            "app.api.service"),
    "mcp": ("the MCP tools over stdio (for an MCP client that starts the server)",
            "app.api.mcp_stdio"),
    "keys": ("API keys: add NAME --user USER (printed once), list, revoke NAME",
             "app.api.keys"),
    "feedback": (
        "the ratings given in the chat",
        {
            "export": (
                "every rated answer as an eval-file line (question, gold_pmids from up-rated "
                "answers' sources)",
                "app.history.feedback",
            ),
        },
    ),
    "users": (
        "who may sign in when ui.auth is password",
        {"add": ("add a user, or set a new password (asked for, or read from stdin)",
                 "app.auth")},
    ),
}


def named_command(argv: Sequence[str]) -> list[str]:
    """The command (and subcommand) ``argv`` names, read as the parser will read them but without
    importing anything: the first words, skipping ``--config`` and its value (also written
    ``--config=FILE``, ``-cFILE`` or abbreviated, e.g. ``--conf FILE``)."""
    words: list[str] = []
    args = iter(argv)
    for arg in args:
        if arg.startswith("-"):
            if words:  # the command's own options begin
                break
            if arg == "-c" or (len(arg) > 2 and "--config".startswith(arg)):
                next(args, None)  # the option's value
            continue
        words.append(arg)
        target = COMMANDS.get(words[0], ("", ""))[1]
        if len(words) == 2 or isinstance(target, str):  # a command without subcommands
            break
    return words


def _add(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    help_: str,
    module: str,
    load: bool = True,
) -> None:
    parser = sub.add_parser(name, help=help_, description=help_)
    parser.set_defaults(_module=module)
    if not load:
        return
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as err:  # a command whose module is not installed/built yet
        parser.set_defaults(_missing=str(err))
        return
    if hasattr(mod, "add_arguments"):
        mod.add_arguments(parser)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The command line. With ``argv``, only the module of the command it names is imported (the
    other commands' options are not needed to parse it); without, every command's."""
    named = None if argv is None else named_command(argv)
    parser = argparse.ArgumentParser(prog="python -m app", description="PubMed research assistant")
    parser.add_argument(
        "--config", "-c", default=None, help="path to cfg.yaml (default: the repo's)"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (help_, target) in COMMANDS.items():
        if isinstance(target, str):
            _add(sub, name, help_, target, load=named is None or named == [name])
        else:
            group = sub.add_parser(name, help=help_, description=help_)
            inner = group.add_subparsers(dest="subcommand", required=True)
            for sub_name, (sub_help, module) in target.items():
                load = named is None or named == [name, sub_name]
                _add(inner, sub_name, sub_help, module, load=load)
    return parser


# Libraries that log routine events at INFO, which the chat's INFO log would show. faiss's loader
# reports each CPU build it could not load ("ModuleNotFoundError ... swigfaiss_avx2") before the
# one that loads: a normal start that reads like a failure.
QUIET_LOGGERS = ("faiss.loader",)


def main(argv: list[str] | None = None) -> int:
    offline_env()
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv).parse_args(argv)
    if getattr(args, "_missing", None):
        print(f"error: this command is not available: {args._missing}", file=sys.stderr)
        return 2
    try:
        cfg = load_config(args.config)
        module = importlib.import_module(args._module)
        return int(module.run(cfg, args) or 0)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except UserFacingError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
