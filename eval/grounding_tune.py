"""Choose grounding's weights and thresholds on the PubMedQA DEV split (never test):
``python -m eval.grounding_tune [--limit N] [--json]``.

Evidence weights: grid over (similarity, overlap, prior); objective = mean ROUGE-L F1 of the gold
article's top evidence sentence against the article's own conclusion (``long_answer``), averaged
over two views: the whole abstract, and the abstract WITHOUT its conclusion (``contexts``), so the
prior cannot win by pointing at the CONCLUSIONS label alone.

Support thresholds: positives are the conclusion's sentences checked against the rest of their own
abstract (a human paraphrase of the results: supported, yet not copied); hard negatives are the
conclusion sentences of the most similar OTHER dev article, checked against this abstract. Chosen:
the (coverage, similarity, coverage_floor) that keeps most positives with at most 2% of negatives
passing. The relevance bar: the 2nd percentile of the best evidence cosine for questions whose
gold abstract is in the pool, reported beside how many mismatched (question, other abstract)
pairs fall under it.
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from grounding.evidence import select_evidence
from grounding.sources import SourcePool, load_encoder
from grounding.support import SupportChecker
from ingest.sentences import split_sentences
from settings.grounding import EvidenceWeights, GroundingSettings

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
FPR_MAX = 0.02


class CachedEncoder:
    """Encodes every distinct text once (the tuning re-reads the same sentences many times)."""

    def __init__(self, inner, texts: Sequence[str]) -> None:  # noqa: ANN001
        unique = sorted(set(texts))
        vecs = inner.encode(unique)
        self.cache = dict(zip(unique, vecs, strict=True))
        self.inner = inner

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in texts if t not in self.cache]
        if missing:
            self.cache.update(zip(missing, self.inner.encode(missing), strict=True))
        return np.stack([self.cache[t] for t in texts])


def _rouge():  # noqa: ANN202
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)


def load_dev(limit: int | None) -> list[dict]:
    from ingest.corpus import load_corpus
    from settings.config import load_config

    cfg = load_config(
        overrides={"corpus": {"paths": [str(SHARED / "pubmed" / "pubmedqa_pqal.xml.gz")]}}
    )
    arts = {a.pmid: a for a in load_corpus(cfg).articles}
    rows = []
    with (SHARED / "eval" / "pubmedqa_pqal.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            if r.get("split") != "dev" or r["gold_pmids"][0] not in arts:
                continue
            r["abstract"] = arts[r["gold_pmids"][0]].abstract
            r["context_text"] = " ".join(r["contexts"])
            rows.append(r)
            if limit and len(rows) >= limit:
                break
    return rows


def tune_weights(rows: list[dict], encoder, grid: Sequence[float]) -> dict:  # noqa: ANN001
    rouge = _rouge()
    pools = {
        view: [SourcePool.build(r["question"], [r[view]], encoder) for r in rows]
        for view in ("abstract", "context_text")
    }
    results = []
    for ws, wo, wp in itertools.product(grid, grid, grid):
        if ws + wo + wp == 0 or abs(ws + wo + wp - 1) > 1e-6:
            continue
        settings = GroundingSettings(
            weights=EvidenceWeights(similarity=ws, overlap=wo, prior=wp), evidence_per_source=1
        )
        per_view = {}
        for view, ps in pools.items():
            scores = []
            for r, pool in zip(rows, ps, strict=True):
                ev = select_evidence(pool, settings)[0]
                top = ev[0].text if ev else ""
                scores.append(rouge.score(r["long_answer"], top)["rougeL"].fmeasure)
            per_view[view] = float(np.mean(scores))
        results.append(
            ((ws, wo, wp), per_view, (per_view["abstract"] + per_view["context_text"]) / 2)
        )
    results.sort(key=lambda x: -x[2])
    best = results[0]
    return {
        "chosen": dict(zip(("similarity", "overlap", "prior"), best[0], strict=True)),
        "rougeL_abstract": round(best[1]["abstract"], 4),
        "rougeL_without_conclusion": round(best[1]["context_text"], 4),
        "top5": [[list(r[0]), round(r[2], 4)] for r in results[:5]],
        "similarity_only": next(
            {k: round(v, 4) for k, v in r[1].items()} for r in results if r[0] == (1.0, 0.0, 0.0)
        ),
    }


def support_pairs(rows: list[dict], encoder) -> tuple[list, list]:  # noqa: ANN001
    """(positives, negatives): (claim, pool) pairs as described in the module docstring."""
    qv = encoder.encode([r["question"] for r in rows])
    sims = qv @ qv.T
    np.fill_diagonal(sims, -1)
    pos, neg = [], []
    for i, r in enumerate(rows):
        own = SourcePool.build(r["question"], [r["context_text"]], encoder)
        full = SourcePool.build(r["question"], [r["abstract"]], encoder)
        for s in split_sentences(r["long_answer"]):
            pos.append((s.text, own))
        other = rows[int(sims[i].argmax())]
        for s in split_sentences(other["long_answer"]):
            neg.append((s.text, full))
    return pos, neg


def tune_support(pos: list, neg: list) -> dict:
    fixed = GroundingSettings().abstract_coverage  # not tuned: see settings.grounding

    def measures(pairs: list) -> list[tuple[float, float | None, bool]]:
        out = []
        for claim, pool in pairs:
            checker = SupportChecker(pool, GroundingSettings(min_terms=0))
            vec = pool.encoder.encode([claim])[0]
            s = checker.source_support(claim, vec)[0]
            out.append((s.coverage, s.similarity, s.numbers_ok and s.abstract_coverage >= fixed))
        return out

    mp, mn = measures(pos), measures(neg)

    def rate(ms: list, cov: float, sim: float, floor: float) -> float:
        ok = [n and (c >= cov or (s >= sim and c >= floor)) for c, s, n in ms]
        return float(np.mean(ok)) if ok else 0.0

    best = None
    for cov in np.arange(0.3, 0.95, 0.05):
        for sim in np.arange(0.5, 1.01, 0.05):
            for floor in np.arange(0.0, cov + 1e-9, 0.1):
                fpr = rate(mn, cov, sim, floor)
                if fpr > FPR_MAX:
                    continue
                tpr = rate(mp, cov, sim, floor)
                key = (tpr, -fpr, cov, sim)
                if best is None or key > best[0]:
                    best = (key, float(cov), float(sim), float(floor), tpr, fpr)
    assert best is not None
    _, cov, sim, floor, tpr, fpr = best
    only_cov = max(
        (rate(mp, c, 2.0, 1.0), float(c))
        for c in np.arange(0.3, 0.95, 0.05)
        if rate(mn, c, 2.0, 1.0) <= FPR_MAX
    )
    return {
        "coverage": round(cov, 2),
        "similarity": round(sim, 2),
        "coverage_floor": round(floor, 2),
        "positives_kept": round(tpr, 4),
        "negatives_passed": round(fpr, 4),
        "n_positives": len(mp),
        "n_negatives": len(mn),
        "abstract_coverage (fixed)": fixed,
        "coverage_only": {
            "coverage": round(only_cov[1], 2),
            "positives_kept": round(only_cov[0], 4),
        },
    }


def tune_relevance(rows: list[dict], encoder, settings: GroundingSettings) -> dict:  # noqa: ANN001
    gold, mismatched = [], []
    n = len(rows)
    for i, r in enumerate(rows):
        pool = SourcePool.build(r["question"], [r["abstract"]], encoder)
        gold.append(max((e.similarity for e in select_evidence(pool, settings)[0]), default=-1))
        other = SourcePool.build(r["question"], [rows[(i + n // 2) % n]["abstract"]], encoder)
        mismatched.append(
            max((e.similarity for e in select_evidence(other, settings)[0]), default=-1)
        )
    bar = float(np.percentile(gold, 2))
    return {
        "relevance_bar": round(bar, 2),
        "gold_below_bar": round(float(np.mean(np.array(gold) < round(bar, 2))), 4),
        "mismatched_below_bar": round(float(np.mean(np.array(mismatched) < round(bar, 2))), 4),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="first N dev questions")
    parser.add_argument("--parts", default="evidence,support,relevance",
                        help="comma-separated: evidence, support, relevance (without evidence, "
                        "the weights in settings.grounding are used)")  # fmt: skip
    args = parser.parse_args(argv)
    parts = set(args.parts.split(","))
    from settings.config import load_config

    rows = load_dev(args.limit)
    texts = [r["question"] for r in rows]
    for r in rows:
        for field in ("abstract", "context_text", "long_answer"):
            texts.extend(s.text for s in split_sentences(r[field]))
    encoder = CachedEncoder(load_encoder(load_config()), texts)
    report: dict = {"n_questions": len(rows)}
    settings = GroundingSettings()
    if "evidence" in parts:
        weights = tune_weights(rows, encoder, [round(x, 1) for x in np.arange(0, 1.01, 0.1)])
        report["evidence"] = weights
        settings = GroundingSettings(weights=EvidenceWeights(**weights["chosen"]))
    if "support" in parts:
        report["support"] = tune_support(*support_pairs(rows, encoder))
    if "relevance" in parts:
        report["relevance"] = tune_relevance(rows, encoder, settings)
        report["relevance"]["weights"] = settings.weights.model_dump()
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
