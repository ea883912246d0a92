"""``python -m app eval autolabel``: yes/no questions labelled by the corpus itself (as PubMedQA's
PQA-A), and the judgement scored on them.

``--out FILE``: every title of the corpus that states a finding in one of a few plain shapes
becomes a yes/no question, its answer the title's polarity; the abstract is the context, read
WITHOUT its title (the title is the label):

- "X is (not) associated with / related to / linked to / correlated with Y" ->
  "Is X associated with Y?" (yes / no);
- "X improves / predicts / reduces ... Y", "X did not improve Y", "X has no effect on Y",
  "No association between X and Y", "Lack of effect of X on Y" -> "Does X improve Y?",
  "Is X associated with Y?", "Does X affect Y?" (yes / no).

Titles that hedge ("may", "might", a question mark), contrast ("but", "whereas", "not only") or
state no finding are left out. The file is data: write it outside the repository.

``--score FILE``: for every item, the answer's judgement on its one abstract (title removed):
the question's essential concepts and their coverage (:mod:`grounding.concepts`, with the
index's corpus counts when an index is loadable), the abstract's stance
(:mod:`grounding.stance`, with the stance classifier) and the verdict (:mod:`grounding.consensus`).
Reported as ``eval verdicts`` reports a question file: coverage, precision, contradictions, and
``not_addressed`` (the share wrongly told that the abstract does not address the question).
No retrieval and no model: it measures the judgement alone, at scale.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, cast

import numpy as np

from settings.config import Config

# base form -> it is a finding verb of a title ("X improves Y")
VERBS = frozenset(
    """
    improve predict increase reduce decrease enhance impair affect influence alter modulate
    moderate mediate protect worsen lower raise explain cause prevent promote boost attenuate
    delay accelerate determine shape benefit impact facilitate disrupt restore rescue
    ameliorate reverse induce mitigate modify elevate diminish exacerbate amplify strengthen
    weaken slow hinder hamper compromise support
    """.split()
)
# finding verbs whose base form is as often a noun ("the functional impact of ...")
NOUN_TOO = frozenset("impact influence support shape cause benefit delay increase decrease slow "
                     "affect raise lower boost".split())
RELATIONS = ("associated with", "related to", "linked to", "correlated with", "predictive of")
_HEDGED = re.compile(
    r"\b(?:may|might|could|possibly|potential(?:ly)?|suggest\w*|whether|if|but|whereas|"
    r"although|while|not only|not just|yet|vs\.?|versus)\b|\?",
    re.IGNORECASE,
)
_BE = r"(?P<be>is|are|was|were)"
_ADVERB = r"(?:(?:\w+ly|not) )?"


@dataclass(frozen=True)
class Item:
    """One auto-labelled question."""

    pmid: str
    question: str
    answer: str  # yes | no
    title: str
    shape: str  # which title shape made it

    def row(self, abstract: str) -> dict[str, Any]:
        return {
            "qid": f"al{self.pmid}",
            "question": self.question,
            "answer": self.answer,
            "gold_pmids": [self.pmid],
            "title": self.title,
            "shape": self.shape,
            "context": abstract,
        }


def _verb_base(word: str) -> tuple[str, str] | None:
    """(base form, "Does" or "Did") of a finding verb written in the 3rd person or the past
    ("improves", "reduced"); None for any other word."""
    w = word.lower()
    candidates: list[tuple[str, str]] = []
    if w.endswith("ies"):
        candidates.append((w[:-3] + "y", "Does"))
    if w.endswith("es"):
        candidates.append((w[:-2], "Does"))
    if w.endswith("s"):
        candidates.append((w[:-1], "Does"))
    if w in VERBS and w not in NOUN_TOO:  # a plural subject: "Video games improve ..."
        candidates.append((w, "Do"))
    for base, aux in candidates:
        if base in VERBS:
            return base, aux
    return None


# words after which a base-form verb is no verb ("to improve", "may reduce", "the impact")
_NOT_SUBJECT_END = frozenset(
    "to the a an and or of for in on with by may might can could will would should must "
    "does do did not that which who how what".split()
)


def aux_for_base(word: str, before: str) -> str | None:
    """The verb's question auxiliary, or None when the word cannot be the title's verb here."""
    found = _verb_base(word)
    if found is None or before.lower() in _NOT_SUBJECT_END or not word.islower():
        return None
    return found[1]


def _lower_first(text: str) -> str:
    """The phrase as it reads inside a question: its first letter lower-cased unless the first
    word is an acronym or a name ("IQ", "APOE", "Deary's")."""
    first = text.split(" ", 1)[0]
    if len(first) > 1 and (first[1:] != first[1:].lower() or first.isupper()):
        return text
    return text[:1].lower() + text[1:]


# a subject that names no exposure ("How intelligence ...", "Impact of ...", "[Title in
# translation]") or ends in a coordination ("natural and unnatural causes" read as a verb)
_NO_SUBJECT = re.compile(
    r"^(?:how|why|what|whether|when|where|which|impact|effects?|role|influence|do|does|is|are)\b"
    r"|^\W|\b(?:and|or|of|on|in|from|with|for|to|the|a|an|this|these)$",
    re.IGNORECASE,
)


def _ok(x: str, y: str) -> bool:
    wx, wy = x.split(), y.split()
    return 1 <= len(wx) <= 12 and 1 <= len(wy) <= 14 and not _NO_SUBJECT.search(x)


def question_from_title(title: str) -> tuple[str, str, str] | None:
    """(question, answer, shape) for a title that states a finding, else None."""
    text = re.sub(r"\s+", " ", title).strip().rstrip(".")
    if not text or _HEDGED.search(text):
        return None
    for clause in [p.strip() for p in text.split(":")][:2]:
        found = _from_clause(clause)
        if found is not None:
            return found
    return None


def _from_clause(clause: str) -> tuple[str, str, str] | None:
    rel = "|".join(RELATIONS)
    m = re.match(
        r"^no (?:significant |clear )?(?:association|relationship|correlation|link) between "
        r"(?P<x>.+?) and (?P<y>.+)$",
        clause,
        re.IGNORECASE,
    )
    if m and _ok(m["x"], m["y"]):
        return f"Is {_lower_first(m['x'])} associated with {m['y']}?", "no", "no association"
    m = re.match(
        r"^(?:no|lack of|absence of) (?:significant |clear )?(?:effect|impact|influence|benefit) "
        r"of (?P<x>.+?) on (?P<y>.+)$",
        clause,
        re.IGNORECASE,
    )
    if m and _ok(m["x"], m["y"]):
        return f"Does {_lower_first(m['x'])} affect {m['y']}?", "no", "no effect"
    m = re.match(
        rf"^(?P<x>.+?) {_BE} (?P<neg>not )?(?:(?:\w+ly) )?(?P<rel>{rel}) (?P<y>.+)$",
        clause,
        re.IGNORECASE,
    )
    if m and _ok(m["x"], m["y"]):
        answer = "no" if m["neg"] else "yes"
        be = m["be"].capitalize()
        return (f"{be} {_lower_first(m['x'])} {m['rel'].lower()} {m['y']}?", answer,
                "not related" if m["neg"] else "related")  # fmt: skip
    m = re.match(
        r"^(?P<x>.+?) (?:has|have|had) no (?:significant |clear )?(?:effect|impact|influence) "
        r"on (?P<y>.+)$",
        clause,
        re.IGNORECASE,
    )
    if m and _ok(m["x"], m["y"]):
        return f"Does {_lower_first(m['x'])} affect {m['y']}?", "no", "has no effect"
    m = re.match(
        r"^(?P<x>.+?) (?P<aux>does|do|did) not (?P<v>\w+) (?P<y>.+)$", clause, re.IGNORECASE
    )
    if m and m["v"].lower() in VERBS and _ok(m["x"], m["y"]):
        aux = "Did" if m["aux"].lower() == "did" else "Does"
        return f"{aux} {_lower_first(m['x'])} {m['v'].lower()} {m['y']}?", "no", "does not"
    m = re.match(
        rf"^(?P<x>.+?) {_BE} (?P<neg>not )?(?P<what>(?:an? |the )?(?:\w+ )?(?:risk factor|"
        rf"predictor|marker|determinant|mediator|moderator|correlate|cause)s? (?:for|of)) "
        rf"(?P<y>.+)$",
        clause,
        re.IGNORECASE,
    )
    if m and _ok(m["x"], m["y"]):
        be = m["be"].capitalize()
        return (f"{be} {_lower_first(m['x'])} {m['what'].lower()} {m['y']}?",
                "no" if m["neg"] else "yes", "is a predictor")  # fmt: skip
    m = re.match(
        rf"^(?P<x>.+?) {_BE} (?P<neg>not )?(?P<adj>higher|lower|greater|reduced|increased|"
        rf"impaired|elevated|decreased|preserved|altered|improved|enhanced|diminished) "
        rf"(?P<y>(?:in|among|after|following|with|by) .+)$",
        clause,
        re.IGNORECASE,
    )
    if m and _ok(m["x"], m["y"]):
        be = m["be"].capitalize()
        return (f"{be} {_lower_first(m['x'])} {m['adj'].lower()} {m['y']}?",
                "no" if m["neg"] else "yes", "is higher in")  # fmt: skip
    m = re.match(
        r"^(?P<x>.+?) (?:is|are|was|were) (?:unrelated|unassociated) (?:to|with) (?P<y>.+)$",
        clause,
        re.IGNORECASE,
    )
    if m and _ok(m["x"], m["y"]):
        return f"Is {_lower_first(m['x'])} related to {m['y']}?", "no", "unrelated"
    m = re.match(r"^(?P<x>.+?) (?:fails?|failed) to (?P<v>\w+) (?P<y>.+)$", clause, re.IGNORECASE)
    if m and m["v"].lower() in VERBS and _ok(m["x"], m["y"]):
        return f"Does {_lower_first(m['x'])} {m['v'].lower()} {m['y']}?", "no", "fails to"
    words = clause.split(" ")
    for i in range(1, len(words) - 1):
        verb = _verb_base(words[i])
        if verb is None:
            continue
        x, y = " ".join(words[:i]), " ".join(words[i + 1 :])
        if aux_for_base(words[i], words[i - 1]) is None:
            continue
        if re.search(r"\b(?:is|are|was|were|be|been|not|no)$", x, re.IGNORECASE):
            return None  # passive or negated in a shape not handled
        if words[i - 1].lower() == "and" or re.search(r"\b(?:and|or) \S+$", x):
            return None  # "mortality from natural and unnatural causes": no verb
        if _ok(x, y) and not y.lower().startswith(("on ", "of ")):
            base, aux = verb
            return f"{aux} {_lower_first(x)} {base} {y}?", "yes", "verb"
        return None
    return None


def _articles(paths: Iterable[Path]) -> Iterator[tuple[str, str, str]]:
    """(pmid, title, abstract) of every article of the PubMed XML files."""
    from ingest.models import Article
    from ingest.pubmed_xml import iter_pubmed_xml

    for path in paths:
        with (gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb")) as fh:
            for record in iter_pubmed_xml(cast(BinaryIO, fh), str(path)):
                if isinstance(record, Article) and record.title and record.abstract:
                    yield record.pmid, record.title, record.abstract


def generate(paths: Iterable[Path], min_abstract: int = 400) -> Iterator[dict[str, Any]]:
    """An auto-labelled row for every article whose title states a finding."""
    seen: set[str] = set()
    for pmid, title, abstract in _articles(paths):
        if pmid in seen or len(abstract) < min_abstract:
            continue
        seen.add(pmid)
        found = question_from_title(title)
        if found is not None:
            question, answer, shape = found
            yield Item(pmid, question, answer, title, shape).row(abstract)


# -- scoring -------------------------------------------------------------------------------------


class _NoEncoder:
    def encode(self, texts: Any) -> np.ndarray:  # never called: coverage runs without one
        raise RuntimeError("no encoder")


def judge_item(row: dict[str, Any], corpus: Any = None, classify: Any = None,
               encoder: Any = None) -> dict[str, Any]:  # fmt: skip
    """The judgement of one item's question on its abstract alone (title removed)."""
    from grounding.concepts import check_coverage, question_concepts, question_stems
    from grounding.consensus import judge
    from grounding.sources import SourcePool, SourceText
    from grounding.stance import asked_outcome, source_stance

    source = SourceText.build(1, row["context"], pmid=row["gold_pmids"][0], title="")
    pool = SourcePool(row["question"], [source], encoder or _NoEncoder(),
                      np.zeros(1), np.zeros((0, 1)), [])  # fmt: skip
    concepts = question_concepts(row["question"], corpus)
    coverage = check_coverage(concepts, pool, encoder, outcome=asked_outcome(row["question"]))
    stems = question_stems(row["question"])
    stances = [source_stance(source, row["question"], stems, (), classify)
               for _ in coverage.complete]  # fmt: skip
    j = judge(coverage, stances, yes_no=True)
    st = stances[0] if stances else None
    return {
        "qid": row.get("qid"),
        "question": row["question"],
        "gold": row["answer"],
        "verdict": j.verdict,
        "reason": j.reason,
        "missing": j.missing,
        "stance": st.stance if st else None,
        "sentence": st.sentence if st else "",
        "cue": st.cue if st else "",
    }


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Coverage, precision and contradictions over the labelled items; over the items with no
    answer (:mod:`eval.concept_swap`'s negatives), how many were addressed and got a verdict."""
    unanswerable = [r for r in rows if r["gold"] is None]
    rows = [r for r in rows if r["gold"] is not None]
    n = len(rows)
    shown = [r for r in rows if r["verdict"]]
    right = sum(r["verdict"] == r["gold"] for r in shown)
    report = {
        "n": n,
        "gold": dict(Counter(r["gold"] for r in rows)),
        "coverage": round(len(shown) / n, 4) if n else None,
        "precision": round(right / len(shown), 4) if shown else None,
        "contradictions": round((len(shown) - right) / n, 4) if n else None,
        "not_addressed": round(sum(r["reason"] == "not_addressed" for r in rows) / n, 4)
        if n else None,
        "reasons": dict(Counter(r["reason"] for r in rows)),
        "precision_by_gold": {
            g: round(sum(r["verdict"] == g for r in shown if r["gold"] == g)
                     / max(1, sum(1 for r in shown if r["gold"] == g)), 4)
            for g in ("yes", "no")
        },  # fmt: skip
    }
    if unanswerable:
        m = len(unanswerable)
        report["unanswerable"] = {
            "n": m,
            "addressed": round(sum(r["reason"] != "not_addressed" for r in unanswerable) / m, 4),
            "verdicts_shown": sum(bool(r["verdict"]) for r in unanswerable),
        }
    return report


def _corpus_and_classifier(cfg: Config) -> tuple[Any, Any]:
    from grounding.classifier import load_stance_classifier

    classify = load_stance_classifier(Path(__file__).resolve().parents[1] / "prompts")
    try:
        from retrievers.loading import load_retriever

        corpus = load_retriever(cfg).corpus
    except Exception as err:  # no index: concepts from English word rarity alone
        print(f"no index ({err}): concepts without corpus counts", file=sys.stderr)
        corpus = None
    return corpus, classify


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--out", type=Path, help="write the auto-labelled set (JSONL) here")
    group.add_argument("--score", type=Path, help="score the judgement on this set")
    parser.add_argument("--corpus", nargs="*", type=Path, default=None,
                        help="PubMed XML files (default: the configured corpus)")  # fmt: skip
    parser.add_argument("--limit", type=int, default=None, help="first N items only")
    parser.add_argument("--sample", type=int, default=0,
                        help="with --out: also print N random items to read by hand")  # fmt: skip
    parser.add_argument("--rows", type=Path, default=None,
                        help="with --score: write one judged row per item")  # fmt: skip
    parser.add_argument("--swap", type=Path, default=None,
                        help="with --out: write negatives built from this auto-labelled set "
                        "(eval.concept_swap) instead of reading the corpus")  # fmt: skip
    parser.add_argument("--encoder", action="store_true",
                        help="with --score: MiniLM word similarity in coverage, as the chat has")
    parser.add_argument("--json", action="store_true")


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]  # fmt: skip


def run(cfg: Config, args: argparse.Namespace) -> int:
    if args.out is not None and args.swap is not None:
        from eval.concept_swap import swap_items
        from grounding.sources import load_encoder

        items = _read(args.swap)
        corpus, _ = _corpus_and_classifier(cfg)
        negatives = list(swap_items(items, load_encoder(cfg), corpus))
        args.out.write_text("".join(json.dumps(r) + "\n" for r in negatives), encoding="utf-8")
        print(json.dumps({"n": len(negatives), "from": len(items), "out": str(args.out)}))
        return 0
    if args.out is not None:
        from ingest.corpus import find_corpus_files

        paths = args.corpus or find_corpus_files(cfg)
        rows = list(generate(paths))
        if args.limit:
            rows = rows[: args.limit]
        args.out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        report = {
            "n": len(rows),
            "answers": dict(Counter(r["answer"] for r in rows)),
            "shapes": dict(Counter(r["shape"] for r in rows)),
            "out": str(args.out),
        }
        print(json.dumps(report))
        for r in random.Random(35).sample(rows, min(args.sample, len(rows))):
            print(json.dumps({k: r[k] for k in ("qid", "title", "question", "answer")}))
        return 0
    items = _read(args.score)
    items = items[: args.limit] if args.limit else items
    corpus, classify = _corpus_and_classifier(cfg)
    encoder = None
    if args.encoder:
        from grounding.sources import load_encoder

        encoder = load_encoder(cfg)
    judged = [judge_item(r, corpus, classify, encoder) for r in items]
    if args.rows is not None:
        args.rows.write_text("".join(json.dumps(r) + "\n" for r in judged), encoding="utf-8")
    report = summarize(judged)
    print(json.dumps(report) if args.json else json.dumps(report, indent=2))
    return 0
