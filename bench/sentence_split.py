"""Compare sentence splitters on the real shared abstracts: ``python -m bench.sentence_split``.

There is no gold segmentation for these abstracts, so each splitter is scored on error symptoms a
reader would flag: a sentence starting in lower case (a false split), one ending on an
abbreviation ("et al.", "vs.", "e.g."), unbalanced parentheses (a split inside "(95% CI ...)"),
numbers cut apart (the multiset of numbers over the sentences differs from the abstract's),
a section label left inside a sentence, a likely missed boundary (". The" inside a sentence), spans
that do not point back into the text, and time per abstract. Prints a table (or ``--json``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from ingest.sentences import ABBREVIATIONS, SplitRule, split_sentences

SHARED_PUBMED = Path(__file__).resolve().parents[2] / "shared" / "data" / "pubmed"
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_LABEL_INSIDE = re.compile(r"\b[A-Z][A-Z ]{3,}[A-Z]: ")
_MISSED = re.compile(r"\b([A-Za-z][A-Za-z.]*)\. (?:The|We|In|This|These|Our|A|Of|Results?)\b")

Splitter = Callable[[str], list[tuple[str, int, int]]]


def _ours(text: str) -> list[tuple[str, int, int]]:
    return [(s.text, s.start, s.end) for s in split_sentences(text)]


def _pysbd() -> Splitter:
    import pysbd

    seg = pysbd.Segmenter(language="en", clean=False, char_span=True)

    def run(text: str) -> list[tuple[str, int, int]]:
        return [(s.sent.strip(), s.start, s.end) for s in seg.segment(text)]

    return run


def _rule(rule: SplitRule) -> Splitter:
    def run(text: str) -> list[tuple[str, int, int]]:
        return [(s.text, s.start, s.end) for s in split_sentences(text, rule=rule)]

    return run


def splitters() -> dict[str, Splitter]:
    """The project's splitter under each of its rules (``ingest.sentences``), and pysbd."""
    from eval.verdict.evidence import VERDICT_PASSAGE
    from indexing.chunking import CHUNKS

    return {
        "grounding": _ours,
        "eval.verdict": _rule(VERDICT_PASSAGE),
        "indexing.chunking": _rule(CHUNKS),
        "pysbd": _pysbd(),
    }


def score(split: Splitter, abstracts: list[str]) -> dict[str, float]:
    c: Counter[str] = Counter()
    t0 = time.perf_counter()
    results = [split(a) for a in abstracts]
    elapsed = time.perf_counter() - t0
    for text, sents in zip(abstracts, results, strict=True):
        c["sentences"] += len(sents)
        for s, a, b in sents:
            body = s.strip()
            if not body:
                continue
            if body[0].islower():
                c["lower_start"] += 1
            last = re.search(r"([A-Za-z][A-Za-z.]*)\.$", body)
            if last and last.group(1).rstrip(".").lower() in ABBREVIATIONS:
                c["abbrev_end"] += 1
            if body.count("(") != body.count(")"):
                c["unbalanced_paren"] += 1
            if _LABEL_INSIDE.search(body[1:]):
                c["label_inside"] += 1
            for m in _MISSED.finditer(body):
                if m.group(1).rstrip(".").lower() not in ABBREVIATIONS and len(m.group(1)) > 1:
                    c["missed_boundary"] += 1
            if a >= 0 and text[a:b].strip() != body:
                c["bad_span"] += 1
        whole = Counter(_NUMBER.findall(text))
        parts = Counter(n for s, _, _ in sents for n in _NUMBER.findall(s))
        if whole != parts:
            c["abstracts_numbers_changed"] += 1
    out: dict[str, float] = {k: int(v) for k, v in sorted(c.items())}
    out["ms_per_abstract"] = round(1000 * elapsed / max(1, len(abstracts)), 3)
    return out


def load_abstracts(limit: int) -> list[str]:
    from ingest.corpus import load_corpus
    from settings.config import load_config

    if not SHARED_PUBMED.is_dir():
        sys.exit(f"shared PubMed data not found at {SHARED_PUBMED}")
    out: list[str] = []
    for name in ("pubmedqa_pqal.xml.gz", "intelligence_2013_2022.xml.gz"):
        cfg = load_config(overrides={"corpus": {"paths": [str(SHARED_PUBMED / name)]}})
        arts = [a.abstract for a in load_corpus(cfg).articles if a.abstract]
        out.extend(arts[: limit // 2])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=2000, help="abstracts (half from each corpus)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    abstracts = load_abstracts(args.limit)
    table = {name: score(fn, abstracts) for name, fn in splitters().items()}
    if args.json:
        print(json.dumps({"abstracts": len(abstracts), "splitters": table}, indent=2))
        return 0
    keys = sorted({k for row in table.values() for k in row})
    print(f"{len(abstracts)} abstracts")
    print(f"{'':28}" + "".join(f"{n:>19}" for n in table))
    for k in keys:
        print(f"{k:28}" + "".join(f"{row.get(k, 0):>19}" for row in table.values()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
