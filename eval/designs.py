"""``python -m app eval designs``: the design wording rules scored against indexers' labels.

The wording rules (:func:`ingest.design.classify_text`, title + abstract only) are what decides an
article's design when PubMed gives no publication type that names one (the whole intelligence
corpus). They are scored against two kinds of labels set by NLM's indexers, never read by the
rules themselves:

- **publication types** that name a design (Meta-Analysis, Systematic Review, Randomized
  Controlled Trial, Case Reports, Review), where a record has them (the efetch and MEDLINE
  fixtures);
- **MeSH study-design headings**, for records without such a type (the PubMedQA articles carry
  MeSH but no publication types): Random Allocation / Double-Blind Method / Single-Blind Method
  -> RCT; Case-Control Studies; Cross-Sectional Studies; Cohort Studies and the headings under it
  in the MeSH tree (Prospective, Retrospective, Longitudinal, Follow-Up Studies) -> cohort;
  Animals without Humans -> animal/in vitro. Where several apply, the most specific wins
  (animal, RCT, case-control, cross-sectional, cohort).

Articles with neither are left out. Precision of a design is over the labelled articles the rules
gave that design; recall over the articles labelled with it. A design whose precision reaches
:data:`ingest.design.PRECISION_BAR` (0.9) may be shown by the chat (``SHOWN_WORDING`` lists them,
checked against this score by tests/test_design_bar_real.py); below it, or with no labelled
article to measure it on, the chat says "design not stated".
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from ingest.design import _TYPE_RULES, DESIGNS, PRECISION_BAR, SHOWN_WORDING, classify_text
from ingest.models import Article

_MESH_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("rct", ("Random Allocation", "Double-Blind Method", "Single-Blind Method")),
    ("case_control", ("Case-Control Studies",)),
    ("cross_sectional", ("Cross-Sectional Studies",)),
    ("cohort", ("Cohort Studies", "Prospective Studies", "Retrospective Studies",
                "Longitudinal Studies", "Follow-Up Studies")),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="*", help="PubMed XML / MEDLINE files (default: the "
                        "corpus in cfg.yaml and ../shared/data/fixtures)")  # fmt: skip
    parser.add_argument("--json", action="store_true")


def reference_label(article: Article) -> tuple[str, str] | None:
    """(design, where the label came from) set by indexers, or None."""
    names = {p.name for p in article.publication_types}
    for label, types in _TYPE_RULES:
        if any(t in names for t in types):
            return label, "publication type"
    if "Review" in names:
        return "narrative_review", "publication type"
    mesh = set(article.mesh_terms)
    if "Animals" in mesh and "Humans" not in mesh:
        return "animal_in_vitro", "MeSH"
    for label, headings in _MESH_RULES:
        if mesh.intersection(headings):
            return label, "MeSH"
    return None


def score(articles: Iterable[Article]) -> dict:
    pairs: list[tuple[str, str]] = []
    sources: Counter[str] = Counter()
    unlabelled = 0
    for article in articles:
        ref = reference_label(article)
        if ref is None:
            unlabelled += 1
            continue
        sources[ref[1]] += 1
        pairs.append((ref[0], classify_text(article.title, article.abstract).label))
    per_design = {}
    for label in DESIGNS:
        predicted = sum(1 for _, p in pairs if p == label)
        actual = sum(1 for r, _ in pairs if r == label)
        hits = sum(1 for r, p in pairs if r == p == label)
        if predicted or actual:
            per_design[label] = {
                "labelled": actual,
                "predicted": predicted,
                "correct": hits,
                "precision": round(hits / predicted, 3) if predicted else None,
                "recall": round(hits / actual, 3) if actual else None,
            }
    return {
        "precision_bar": PRECISION_BAR,
        "above_bar": sorted(label for label, row in per_design.items()
                            if label != "other" and row["precision"] is not None
                            and row["predicted"] and row["precision"] >= PRECISION_BAR),
        "labelled_articles": len(pairs),
        "label_sources": dict(sources),
        "unlabelled_articles": unlabelled,
        "accuracy": round(sum(r == p for r, p in pairs) / len(pairs), 3) if pairs else None,
        "per_design": per_design,
        "confusions": Counter(f"{r} -> {p}" for r, p in pairs if r != p).most_common(8),
    }


def markdown(result: dict) -> str:
    lines = ["| design | labelled | predicted | correct | precision | recall | in the chat |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for label, row in result["per_design"].items():
        def fmt(v):
            return "–" if v is None else f"{v:.2f}"

        shown = ("never a badge" if label == "other" else "shown" if label in SHOWN_WORDING
                 else "design not stated")
        lines.append(f"| {DESIGNS[label][0]} | {row['labelled']} | {row['predicted']} | "
                     f"{row['correct']} | {fmt(row['precision'])} | {fmt(row['recall'])} | "
                     f"{shown} |")
    return "\n".join(lines)


def _default_files(cfg) -> list[Path]:
    from ingest.corpus import find_corpus_files

    files = list(find_corpus_files(cfg))
    fixtures = (Path(cfg.root) / ".." / "shared" / "data" / "fixtures").resolve()
    for sub, pattern in (("efetch", "*.xml"), ("medline", "*.txt")):
        files += sorted((fixtures / sub).glob(pattern))
    return files


def read_articles(files: Iterable[Path]) -> list[Article]:
    from ingest.sources import iter_file

    return [a for f in files for a in iter_file(Path(f)) if isinstance(a, Article)]


def run(cfg, args: argparse.Namespace) -> int:
    files = [Path(f) for f in args.files] or _default_files(cfg)
    result = score(read_articles(files))
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{result['labelled_articles']} articles with an indexer's design label "
          f"({result['label_sources']}), {result['unlabelled_articles']} without; "
          f"accuracy of the wording rules {result['accuracy']}")
    print(markdown(result))
    print(f"designs at or above the precision bar {PRECISION_BAR}: {result['above_bar']} "
          f"(the chat shows {sorted(SHOWN_WORDING)})")
    print("most frequent confusions (label -> rules):", result["confusions"])
    return 0
