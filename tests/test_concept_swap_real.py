"""The concept-swap negatives on the real corpus, judged with the real MiniLM: questions whose
exposure their abstract never writes are refused ("not addressed"), as an unanswerable question
must be, while the same questions asked of their own abstracts are mostly addressed."""

from __future__ import annotations

from typing import Any

from app.config import Config
from eval.autolabel import Item, judge_item, question_from_title
from eval.concept_swap import swap_items


def test_real_negatives_are_refused_and_their_positives_addressed(
    shared_articles: Any, small_index_cfg: Config
) -> None:
    # mutations caught: check_coverage calling every source addressing (addressing = all) ->
    # the negatives are addressed; the essential-word check dropped (no word ever missing) ->
    # the same
    from grounding.sources import load_encoder

    items: list[dict[str, Any]] = []
    for article in shared_articles:
        found = question_from_title(article.title)
        if found is not None and len(article.abstract) >= 400:
            items.append(Item(article.pmid, found[0], found[1], article.title, found[2])
                         .row(article.abstract))  # fmt: skip
        if len(items) == 24:
            break
    encoder = load_encoder(small_index_cfg)
    negatives = list(swap_items(items, encoder))
    assert len(negatives) >= 18
    refused = [judge_item(r, None, None, encoder)["reason"] == "not_addressed" for r in negatives]
    kept = [judge_item(r, None, None, encoder)["reason"] != "not_addressed" for r in items]
    assert sum(refused) / len(refused) >= 0.7, sum(refused)
    assert sum(kept) / len(kept) >= 0.7, sum(kept)
