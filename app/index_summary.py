"""What the index holds, in words for the chat's landing page and Help: how many articles, from
which files, which years and which topics, read from the published build (its manifest and its
chunks' metadata), so it follows every rebuild and is never written by hand.

Topics are the words and word pairs that most titles use (stopwords and research boilerplate
such as "study" or "patients" left out; a pair shown replaces its words); years are the range of
publication years and the span holding nine articles in ten.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from indexing.store import location, read_manifest
from indexing.tokenize import STOPWORDS
from ingest.metadata import ChunkMeta
from settings.config import Config

log = logging.getLogger(__name__)

TOPICS_SHOWN = 8
PLACEHOLDER = "{index_summary}"  # where chainlit.md (Help) shows the summary
ADD_MORE = ("To add articles from PubMed, type `/pubmed` and a search in the chat (for example "
            "`/pubmed dapagliflozin heart failure`) or run `python -m app library add \"QUERY\"`. "
            "To add files, put PubMed XML or MEDLINE files in a folder listed under "
            "`corpus.paths` in cfg.yaml (or fetch a PubMed query with `python -m app ingest "
            "--fetch`), then run `python -m app index update` (or `make run`).")
# the landing page's short form (plain text)
ADD_FROM_CHAT = "To add articles from PubMed, type /pubmed and a search (Help says more)."


@dataclass(frozen=True)
class IndexSummary:
    articles: int
    files: list[str] = field(default_factory=list)
    first_year: int | None = None
    last_year: int | None = None
    mostly: tuple[int, int] | None = None  # the years of nine articles in ten
    topics: list[str] = field(default_factory=list)
    built_at: str = ""

    def years_text(self) -> str:
        if self.first_year is None or self.last_year is None:
            return ""
        text = (f"published {self.first_year}–{self.last_year}"
                if self.first_year != self.last_year else f"published in {self.first_year}")
        if self.mostly and self.mostly != (self.first_year, self.last_year):
            text += f", nine in ten between {self.mostly[0]} and {self.mostly[1]}"
        return text

    def sentence(self, plain: bool = False) -> str:
        """One line for the landing page: "The index holds 16,656 PubMed abstracts, published
        1989–2023, nine in ten between 2013 and 2022; frequent topics: …" (markdown, or
        ``plain`` text)."""
        count = f"{self.articles:,} PubMed abstracts"
        parts = [f"The index holds {count if plain else f'**{count}**'}"]
        years = self.years_text()
        if years:
            parts.append(years)
        text = ", ".join(parts)
        if self.topics:
            text += "; frequent topics: " + ", ".join(self.topics)
        return text + "."

    def landing(self) -> str:
        """The landing page's line (plain text): the sentence and how to add articles."""
        return f"{self.sentence(plain=True)} {ADD_FROM_CHAT}"

    def markdown(self) -> str:
        """The Help page's section: the sentence, the files it was built from, how to add more."""
        lines = [self.sentence()]
        if self.files:
            lines.append("Built from: " + ", ".join(f"`{Path(f).name}`" for f in self.files)
                         + (f" (on {self.built_at[:10]})" if self.built_at else "") + ".")
        lines.append(ADD_MORE)
        return "\n\n".join(lines)


def _years(years: list[int]) -> tuple[int | None, int | None, tuple[int, int] | None]:
    if not years:
        return None, None, None
    ordered = sorted(years)
    n = len(ordered)
    low = ordered[int(0.05 * (n - 1))]
    high = ordered[int(round(0.95 * (n - 1)))]
    return ordered[0], ordered[-1], (low, high)


# research boilerplate that says nothing about a topic
_GENERIC = frozenset("""
study studies analysis review systematic meta trial randomized randomised controlled clinical
effect effects association associations associated relationship role impact use using based new
patients patient results evidence case report data approach model models among versus vs across
outcomes outcome factors factor risk treatment evaluation assessment comparison compared early
high low test tests level levels development different two one three during after before within
through cross sectional cohort prospective retrospective pilot survey scale validation measure
does can may not how what why whether its their more less among toward towards
""".split())
_WORD = re.compile(r"[a-z][a-z0-9'-]*[a-z0-9]")


def _title_terms(title: str) -> set[str]:
    words = [w for w in _WORD.findall(title.casefold())]
    keep = [w if w not in STOPWORDS and w not in _GENERIC and len(w) > 2 else "" for w in words]
    terms = {w for w in keep if w}
    terms |= {f"{a} {b}" for a, b in zip(keep, keep[1:], strict=False) if a and b}
    return terms


def _topics(rows: list[ChunkMeta]) -> list[str]:
    """The terms most titles use; a word is shown as its most frequent pair ("emotional
    intelligence") when that pair is in at least half the titles that have the word."""
    counts: Counter[str] = Counter()
    for meta in rows:
        counts.update(_title_terms(meta.title))
    pairs: dict[str, list[str]] = {}
    for term in counts:
        if " " in term:
            for word in term.split():
                pairs.setdefault(word, []).append(term)
    floor = max(2, len(rows) // 200)
    chosen: list[str] = []
    for term, n in counts.most_common():
        if n < floor or len(chosen) >= TOPICS_SHOWN:
            break
        if " " in term:
            continue
        best = max(pairs.get(term, []), key=lambda p: counts[p], default="")
        shown = best if best and counts[best] * 2 >= n else term
        if shown not in chosen:
            chosen.append(shown)
    return chosen


def summarize_folder(folder: Path) -> IndexSummary:
    """The summary of one published build folder (manifest.json + chunks.parquet)."""
    import pyarrow.parquet as pq

    manifest = read_manifest(folder)
    table = pq.read_table(folder / "chunks.parquet", columns=["chunk_index", "metadata"])
    firsts = [json.loads(md) for i, md in zip(table.column("chunk_index").to_pylist(),
                                              table.column("metadata").to_pylist(), strict=True)
              if i == 0]  # one row per article
    metas = [ChunkMeta.from_metadata(md) for md in firsts]
    years = [m.year for m in metas if m.year is not None]
    first, last, mostly = _years(years)
    return IndexSummary(articles=manifest.articles, files=list(manifest.corpus_files),
                        first_year=first, last_year=last, mostly=mostly,
                        topics=_topics(metas), built_at=manifest.built_at)


_CACHE: dict[str, IndexSummary] = {}


def index_summary(cfg: Config) -> IndexSummary | None:
    """The summary of the index the chat uses now (None: no local FAISS index, or unreadable);
    computed once per published build."""
    if cfg.retrieval.backend != "faiss":
        return None
    folder = location(cfg).current()
    if folder is None:
        return None
    key = str(folder)
    if key not in _CACHE:
        try:
            _CACHE[key] = summarize_folder(folder)
        except Exception as err:  # the chat works without it; the log says why
            log.warning("could not summarise the index at %s: %s", folder, err)
            return None
    return _CACHE[key]


def help_markdown(text: str, summary: IndexSummary | None) -> str:
    """chainlit.md with its placeholder replaced by the summary (or by how to build one)."""
    if PLACEHOLDER not in text:
        return text
    body = summary.markdown() if summary else (
        "No index is built yet: run `make run` or `python -m app index build`.\n\n" + ADD_MORE)
    return text.replace(PLACEHOLDER, body)
