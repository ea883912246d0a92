"""Evidence sentences: per source, the one or two abstract sentences that best answer the question.

A sentence's score mixes three signals the project already trusts, each scaled to [0, 1]:
MiniLM cosine to the (searched) question, BM25 of the sentence for the question within this
question's sentence pool (normalised by the pool's best), and a prior for where answers sit in an
abstract: results/conclusion sections where labelled, the last sentences otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from rank_bm25 import BM25Okapi

from grounding.language import in_other_language
from grounding.sources import SourcePool
from indexing.tokenize import tokenize
from settings.grounding import GroundingSettings

_KIND_PRIOR = {"conclusion": 1.0, "result": 0.8, "other": 0.0}


@dataclass(frozen=True)
class EvidenceSentence:
    """One highlighted sentence: ``abstract[start:end] == text`` of source ``[source]``."""

    source: int
    text: str
    start: int
    end: int
    score: float
    similarity: float
    section: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "start": self.start,
            "end": self.end,
            "score": round(self.score, 4),
            "similarity": round(self.similarity, 4),
            "section": self.section,
        }


def position_prior(index: int, count: int, kind: str) -> float:
    """Labelled: results/conclusions score; unlabelled: later sentences score (linearly)."""
    if kind != "unlabelled":
        return _KIND_PRIOR.get(kind, 0.0)
    return 1.0 if count <= 1 else index / (count - 1)


def _bm25_scores(pool: SourcePool) -> np.ndarray:
    docs = [tokenize(pool.sources[si].sentences[j].text) for si, j in pool.rows]
    query = tokenize(pool.question)
    if not docs or not query or not any(docs):
        return np.zeros(len(docs), dtype=np.float32)
    scores = np.asarray(BM25Okapi([d or ["\x00"] for d in docs]).get_scores(query))
    scores = np.clip(scores, 0, None)
    top = scores.max()
    return (scores / top).astype(np.float32) if top > 0 else np.zeros_like(scores)


def sentence_scores(pool: SourcePool, settings: GroundingSettings) -> tuple[np.ndarray, np.ndarray]:
    """(combined score, MiniLM cosine) of every pool sentence, in ``pool.rows`` order."""
    sims = pool.question_similarities()
    if not len(sims):
        return sims, sims
    overlap = _bm25_scores(pool)
    prior = np.array(
        [
            position_prior(j, len(pool.sources[si].sentences), pool.sources[si].sentences[j].kind)
            for si, j in pool.rows
        ],
        dtype=np.float32,
    )
    w = settings.weights
    total = w.similarity + w.overlap + w.prior or 1.0
    combined = (w.similarity * np.clip(sims, 0, 1) + w.overlap * overlap + w.prior * prior) / total
    return combined, sims


def select_evidence(
    pool: SourcePool, settings: GroundingSettings | None = None
) -> list[list[EvidenceSentence]]:
    """For each source (in order), its best ``evidence_per_source`` sentences, in abstract order.

    A second sentence is kept only when it scores at least ``evidence_relative_floor`` of the
    source's best, so a weak filler sentence is not highlighted beside a strong one. Sentences in
    another language than ``evidence_language`` (a record's translated abstract) are never chosen.
    """
    settings = settings or GroundingSettings()
    combined, sims = sentence_scores(pool, settings)
    out: list[list[EvidenceSentence]] = []
    for si, source in enumerate(pool.sources):
        rows = [
            r
            for r in pool.sentence_rows(si)
            if not in_other_language(
                source.sentences[pool.rows[r][1]].text, settings.evidence_language
            )
        ]
        ranked = sorted(rows, key=lambda r: -combined[r])[: settings.evidence_per_source]
        if ranked:
            best = combined[ranked[0]]
            ranked = [r for r in ranked if combined[r] >= settings.evidence_relative_floor * best]
        chosen = sorted(ranked, key=lambda r: pool.rows[r][1])
        out.append(
            [
                EvidenceSentence(
                    source.n,
                    source.sentences[pool.rows[r][1]].text,
                    source.sentences[pool.rows[r][1]].start,
                    source.sentences[pool.rows[r][1]].end,
                    float(combined[r]),
                    float(sims[r]),
                    source.sentences[pool.rows[r][1]].section,
                )
                for r in chosen
            ]
        )
    return out


def answers_question(evidence: list[list[EvidenceSentence]], settings: GroundingSettings) -> bool:
    """False when no evidence sentence reaches the relevance bar: the honest-abstention case."""
    return any(e.similarity >= settings.relevance_bar for per in evidence for e in per)
