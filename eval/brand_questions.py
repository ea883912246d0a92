"""Questions asked with a brand name about papers on its drug class, drawn from the corpus
(``python -m app eval brands --out F.jsonl``; score with ``python -m app eval retrieval
--questions F.jsonl``).

Users ask about the pill they take ("Zoloft"); abstracts study the class ("selective serotonin
reuptake inhibitors") and rarely name the brand or even its generic name. For every article
whose title names a narrow drug class of WordNet 3.0 (at most
:data:`indexing.lay_terms.NARROW_CLASS` kinds, an uncommon word: "speed" is not searched for
amphetamines), one terse question names a trade name of a drug of that class and the title's
two rarest other words, as a user types it: "Does Xanax affect impairment intentional?" for a
title on benzodiazepines. Its gold is the article. The words are crude; the set measures how
often the search reaches the class from the brand, which the titles' full wording hides (asked
with the whole title and the brand, every item is found first either way).
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from wordfreq import zipf_frequency

from indexing.drug_names import DrugNames, drug_names
from indexing.lay_terms import NARROW_CLASS, LayTerms, lay_terms

# a class named by an everyday word is another thing in most titles ("speed", "poison")
COMMON_ZIPF = 4.0
_STOP = frozenset(
    "the of and in on for with to a an by from at as is are was were its their or vs versus "
    "among between after before during into than that this".split()
)


def class_brands(terms: LayTerms, names: DrugNames) -> dict[str, str]:
    """Each narrow class's names -> a trade name of one of its drugs (WordNet writes it with a
    capital, and the drug lexicon gives it a generic name)."""
    out: dict[str, str] = {}
    for cls, kinds in terms.kinds.items():
        if len(kinds) > NARROW_CLASS:
            continue
        brands = [lemma for k in kinds for lemma in terms.lemmas.get(k, ())
                  if "_" not in lemma and terms.trade_name(lemma)
                  and names.generic_of(lemma.lower())]  # fmt: skip
        if not brands:
            continue
        for lemma in terms.lemmas.get(cls, ()):
            name = lemma.replace("_", " ")
            common = zipf_frequency(name.lower(), "en") >= COMMON_ZIPF
            if (lemma.islower() or lemma.isupper()) and len(name) > 3 and not common:
                out.setdefault(name, brands[0])
    return out


def brand_items(titles: Iterable[tuple[str, str]], brands: dict[str, str],
                ) -> Iterator[dict[str, Any]]:
    """One terse brand question per (pmid, title) that names a class of ``brands``."""
    patterns = [(name, re.compile(rf"\b{re.escape(name)}(?:s|es)?\b", re.IGNORECASE), brand)
                for name, brand in brands.items()]  # fmt: skip
    for pmid, title in titles:
        for name, pattern, brand in patterns:
            m = pattern.search(title)
            if m is None:
                continue
            rest = pattern.sub(" ", title)  # every mention of the class goes
            words = [w for w in re.findall(r"[A-Za-z][A-Za-z-]+", rest) if w.lower() not in _STOP]
            rarest = sorted(dict.fromkeys(words), key=lambda w: zipf_frequency(w.lower(), "en"))
            yield {"qid": f"brand-{pmid}", "question": f"Does {brand} affect "
                   f"{' '.join(rarest[:2])}?", "gold_pmids": [pmid], "class": name,
                   "brand": brand, "title": title}  # fmt: skip
            break


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, required=True, help="write the set (JSONL) here")
    parser.add_argument("--corpus", nargs="*", type=Path, default=None,
                        help="PubMed XML files (default: the configured corpus)")  # fmt: skip


def run(cfg: Any, args: argparse.Namespace) -> int:
    from eval.autolabel import _articles
    from ingest.corpus import find_corpus_files

    paths = args.corpus or find_corpus_files(cfg)
    seen: dict[str, str] = {}
    for pmid, title, _ in _articles(paths):
        seen.setdefault(pmid, title)
    rows = list(brand_items(seen.items(), class_brands(lay_terms(), drug_names())))
    args.out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    print(json.dumps({"n": len(rows), "out": str(args.out)}))
    return 0
