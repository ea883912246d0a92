"""What the abstracts' sentence rule would change where a plainer rule is kept:
``python -m bench.split_rules``.

Over every article of the shared corpus: how many articles' chunks differ when the chunker packs
``ingest.sentences.ABSTRACTS`` sentences instead of its own ``CHUNKS`` ones, and how many verdict
passages (``eval.verdict.evidence.verdict_passage`` over the article's last chunk, its title as the
question) differ under ``ABSTRACTS`` instead of ``VERDICT_PASSAGE`` (docs/design.md, "One sentence
splitter").
"""

from __future__ import annotations

import argparse
import json
from unittest import mock

import eval.verdict.evidence as verdict_evidence
import indexing.chunking as chunking
from bench.sentence_split import SHARED_PUBMED
from indexing.lexical import load_tokenizer
from ingest.corpus import load_corpus
from ingest.sentences import ABSTRACTS
from settings.config import load_config


def measure() -> dict[str, int]:
    cfg = load_config(overrides={"corpus": {"paths": [str(SHARED_PUBMED)]}})
    articles = load_corpus(cfg).articles
    chunker = chunking.TokenChunker(
        load_tokenizer(cfg), cfg.index.chunk_size, cfg.index.chunk_overlap
    )
    out = {"articles": len(articles), "chunks": 0, "chunks_differ": 0, "passages_differ": 0}
    for article in articles:
        kept = chunker.chunk_text(article.abstract)
        with mock.patch.object(chunking, "CHUNKS", ABSTRACTS):
            other = chunker.chunk_text(article.abstract)
        out["chunks"] += len(kept) or 1
        out["chunks_differ"] += kept != other
        tail = (kept or [article.title])[-1]
        passage = verdict_evidence.verdict_passage(article.title, tail)
        with mock.patch.object(verdict_evidence, "VERDICT_PASSAGE", ABSTRACTS):
            changed = verdict_evidence.verdict_passage(article.title, tail)
        out["passages_differ"] += (passage.text, passage.conclusion) != (
            changed.text,
            changed.conclusion,
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    print(json.dumps(measure(), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
