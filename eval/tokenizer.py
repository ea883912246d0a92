"""``python -m app eval tokenizer``: do gpt4all's llama.cpp and Hugging Face tokenise alike?

The gpt4all backend loads a copy of the packaged GGUF whose pre-tokenizer name is rewritten
(``llms/gguf_compat.py``), and counts prompt tokens with the Hugging Face tokenizer of the
original file. Both are only sound if the two give the same token ids. This compares them over
real corpus sentences, chosen to include numbers, hyphenated terms and non-ASCII text, and
reports the share of sentences whose ids differ (docs/models.md, "GPT4All backend").
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ingest.sentences import SplitRule, sentence_texts
from settings.config import Config, GPT4AllLLMConfig, llm_with_backend
from settings.errors import UserFacingError

# The corpus sentences compared: the project's splitter (ingest.sentences) under the plain rule the
# reported sample was drawn with (a stop, white space and a capital, digit or bracket; a newline
# is white space; no abbreviation, parenthesis or label checks). Another rule draws another sample.
SAMPLE_SENTENCES = SplitRule(
    closers="",
    starts="A-Z0-9(\\[",
    abbreviations=False,
    parentheses=False,
    section_labels=False,
    lines=False,
)
KINDS = {
    "digits": re.compile(r"\d"),
    "hyphen": re.compile(r"\w-\w"),
    "non_ascii": re.compile(r"[^\x00-\x7f]"),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n", type=int, default=3000, help="sentences (default 3000)")
    parser.add_argument("--gguf", default=None,
                        help="a GGUF for gpt4all, loaded as is (default: llm.backend gpt4all's "
                        "file for cfg.yaml, the packaged model's rewritten copy)")  # fmt: skip
    parser.add_argument("--reference-gguf", default=None,
                        help="the GGUF whose Hugging Face tokenizer is the reference (default: "
                        "the original of --gguf / the packaged model)")  # fmt: skip
    parser.add_argument("--examples", type=int, default=5, help="mismatches to print")
    parser.add_argument("--json", action="store_true")


def sentences(texts: Iterable[str]) -> list[str]:
    out = []
    for text in texts:
        for part in sentence_texts(text, SAMPLE_SENTENCES):
            if 20 <= len(part) <= 600:
                out.append(part)
    return out


def choose(pool: Sequence[str], n: int) -> list[str]:
    """``n`` sentences spread over the pool: a quarter each with digits, hyphenated words and
    non-ASCII characters, the rest any (evenly strided: deterministic, no clustering)."""
    chosen: dict[str, None] = {}
    quota = n // 4
    for pattern in KINDS.values():
        kind = [s for s in pool if pattern.search(s)]
        for s in _strided(kind, quota):
            chosen.setdefault(s)
    for s in _strided(pool, n):
        if len(chosen) >= n:
            break
        chosen.setdefault(s)
    return list(chosen)[:n]


def _strided(items: Sequence[str], n: int) -> list[str]:
    if not items or n <= 0:
        return []
    step = max(1, len(items) // n)
    return list(items[::step][:n])


@dataclass
class Agreement:
    n: int = 0
    mismatched: int = 0
    tokens: int = 0
    by_kind: dict[str, list[int]] = field(default_factory=lambda: {k: [0, 0] for k in KINDS})
    examples: list[dict] = field(default_factory=list)

    @property
    def mismatch_rate(self) -> float:
        return self.mismatched / self.n if self.n else 0.0

    def to_dict(self) -> dict:
        return {
            "sentences": self.n,
            "tokens": self.tokens,
            "mismatched": self.mismatched,
            "mismatch_rate": round(self.mismatch_rate, 6),
            "by_kind": {
                k: {"sentences": n, "mismatched": bad} for k, (n, bad) in self.by_kind.items()
            },
            "examples": self.examples,
        }


def compare(llama_ids, hf_ids, texts: Sequence[str], keep: int = 5) -> Agreement:  # noqa: ANN001
    """``llama_ids(text)`` and ``hf_ids(text)`` -> token ids; counted per sentence."""
    result = Agreement()
    for text in texts:
        a, b = list(llama_ids(text)), list(hf_ids(text))
        same = a == b
        result.n += 1
        result.tokens += len(b)
        result.mismatched += not same
        for kind, pattern in KINDS.items():
            if pattern.search(text):
                result.by_kind[kind][0] += 1
                result.by_kind[kind][1] += not same
        if not same and len(result.examples) < keep:
            result.examples.append({"text": text, "gpt4all": a, "huggingface": b})
    return result


def corpus_texts(cfg: Config) -> list[str]:
    from ingest.corpus import load_corpus

    return [a.abstract for a in load_corpus(cfg).articles]


def run(cfg: Config, args: argparse.Namespace) -> int:
    from llms.gguf_compat import cached_tokenizer
    from llms.llm import build_llm, locate_model

    llm_cfg = llm_with_backend(cfg.llm, "gpt4all")
    if args.gguf:
        llm_cfg = llm_cfg.model_copy(update={"model_path": str(Path(args.gguf).resolve())})
    assert isinstance(llm_cfg, GPT4AllLLMConfig)
    model = build_llm(llm_cfg, root=cfg.root)
    loc = locate_model(llm_cfg, cfg.root)
    if args.reference_gguf:
        reference = Path(args.reference_gguf)
    elif loc.gguf_file:
        reference = loc.folder / loc.gguf_file
    else:
        raise UserFacingError("eval tokenizer compares a GGUF's tokenizer: give --reference-gguf")
    cache = cfg.resolve(llm_cfg.gguf_cache)
    folder = cached_tokenizer(reference.resolve(), cache)
    if folder is None:
        print(f"transformers cannot build a tokenizer from {reference}", file=sys.stderr)
        return 1
    from tokenizers import Tokenizer

    hf = Tokenizer.from_file(str(folder / "tokenizer.json"))
    texts = choose(sentences(corpus_texts(cfg)), args.n)
    result = compare(
        model.token_ids,  # type: ignore[attr-defined]
        lambda t: hf.encode(t, add_special_tokens=False).ids,
        texts,
        keep=args.examples,
    )
    report = {"gguf": str(model.client.config["path"]), "reference": str(reference),  # type: ignore[attr-defined]
              **result.to_dict()}  # fmt: skip
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
        return 0
    print(f"gpt4all file: {report['gguf']}\nreference:    {report['reference']}")
    print(f"sentences: {result.n}  tokens: {result.tokens}  mismatched: {result.mismatched} "
          f"({result.mismatch_rate:.4%})")  # fmt: skip
    for kind, (n, bad) in result.by_kind.items():
        print(f"  {kind:<10} {n:>6} sentences, {bad} mismatched")
    for ex in result.examples:
        print(f"- {ex['text'][:120]!r}\n  gpt4all {ex['gpt4all'][:24]}\n  hf      "
              f"{ex['huggingface'][:24]}")  # fmt: skip
    return 0
