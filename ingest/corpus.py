"""The corpus every later stage reads: which files, the articles in them, and a report.

``find_corpus_files(cfg)`` lists the files named by ``corpus.paths``; ``load_corpus(cfg)`` parses,
normalises, de-duplicates and filters them (see :mod:`ingest.preprocess` for the rules);
``corpus_checksum(files)`` tells an index whether its corpus changed; ``ensure_corpus(cfg)``
downloads from PubMed when there is nothing to read.
"""

from __future__ import annotations

import glob
import hashlib
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ingest.errors import CorpusError, CorpusNotFoundError, FetchError
from ingest.models import Article
from ingest.preprocess import MergeStats, drop_short, merge_records, normalize_article
from ingest.pubmed_xml import BadRecord, Deletion
from ingest.sources import file_format, iter_file
from settings.config import Config

# What a folder entry picks up; anything else (README.md, *.md5, *.part, state files) is ignored.
CORPUS_SUFFIXES = (".xml", ".xml.gz", ".txt", ".medline")
_GLOB_CHARS = frozenset("*?[")


@dataclass
class FileReport:
    path: str
    format: str
    records: int = 0  # articles read from this file
    bad: int = 0


@dataclass
class CorpusReport:
    """What loading the corpus did; printed by ``python -m app ingest``."""

    files: list[FileReport] = field(default_factory=list)
    records_read: int = 0
    duplicates_replaced: int = 0
    deletions: list[str] = field(default_factory=list)  # PMIDs removed by DeleteCitation
    dropped_short: int = 0
    min_abstract_chars: int = 0
    bad_records: list[BadRecord] = field(default_factory=list)
    articles: int = 0
    checksum: str = ""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["bad_records"] = [
            {"file": b.file, "position": b.position, "reason": b.reason, "pmid": b.pmid}
            for b in self.bad_records
        ]
        return data


@dataclass
class CorpusLoad:
    articles: list[Article]  # one per PMID, in first-seen file order
    report: CorpusReport
    files: list[Path]


def is_corpus_file(path: Path) -> bool:
    name = path.name.lower()
    return path.is_file() and not name.startswith(".") and name.endswith(CORPUS_SUFFIXES)


def _expand(entry: str, cfg: Config) -> list[Path]:
    path = cfg.resolve(entry)
    if _GLOB_CHARS & set(entry):
        matches = (Path(p) for p in glob.glob(str(path), recursive=True))
        return sorted(p for p in matches if p.is_file())
    if path.is_dir():
        return sorted(p for p in path.iterdir() if is_corpus_file(p))
    return [path] if path.is_file() else []


def find_corpus_files(cfg: Config, paths: Sequence[str] | None = None) -> list[Path]:
    """Corpus files named by ``corpus.paths`` (or ``paths``): folders (their .xml, .xml.gz, .txt
    and .medline files), globs and files, relative to the config file. Entries that do not exist
    are skipped; each file is listed once, in entry order then name order. Without ``paths``,
    the user's library (``library.dir``: searches added from PubMed) comes last."""
    entries = list(cfg.corpus.paths if paths is None else paths)
    files: dict[Path, None] = {}
    for entry in entries:
        for path in _expand(entry, cfg):
            files.setdefault(path.resolve(), None)
    if paths is None:
        from ingest.library import Library

        for path in Library.of(cfg).files():
            files.setdefault(path.resolve(), None)
    if not files:
        looked = ", ".join(str(cfg.resolve(e)) for e in entries) or "nowhere: corpus.paths is empty"
        raise CorpusNotFoundError(
            f"no corpus files found (looked in {looked}). Put PubMed XML (.xml, .xml.gz) or "
            "MEDLINE (.txt, .medline) files in one of those folders, list them in "
            "corpus.paths in cfg.yaml, or run `python -m app ingest --fetch` to download them"
        )
    return list(files)


def corpus_checksum(files: Sequence[Path]) -> str:
    """sha256 over each file's resolved path, size and modification time: cheap (no reading),
    and changes whenever a file is added, removed, replaced or rewritten."""
    digest = hashlib.sha256()
    for path in sorted(Path(p).resolve() for p in files):
        stat = path.stat()
        digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def load_corpus(cfg: Config, files: Sequence[Path] | None = None) -> CorpusLoad:
    """Parse ``files`` (default: :func:`find_corpus_files`) into normalised articles, one per PMID,
    without short abstracts. Bad records are reported, not raised."""
    if files is None:
        files = find_corpus_files(cfg)
    else:
        files = [Path(f) for f in files]
        missing = [str(f) for f in files if not f.is_file()]
        if missing:
            raise CorpusNotFoundError(
                f"corpus file not found: {', '.join(missing)} (check the path, or drop it)"
            )
    minimum = cfg.corpus.min_abstract_chars
    report = CorpusReport(min_abstract_chars=minimum, checksum=corpus_checksum(files))
    merge = MergeStats()
    merged = merge_records(_read(files, report), merge)
    articles, dropped = drop_short(merged.values(), minimum)
    report.records_read = merge.records
    report.duplicates_replaced = merge.duplicates_replaced
    report.deletions = merge.deleted
    report.dropped_short = len(dropped)
    report.articles = len(articles)
    if not articles:
        raise CorpusError(
            f"the corpus gave no usable article ({len(files)} file(s), {merge.records} records, "
            f"{len(dropped)} with an abstract under {minimum} characters, "
            f"{len(report.bad_records)} unreadable): check the files (`python -m app ingest`), "
            "or lower corpus.min_abstract_chars in cfg.yaml" + _unreadable_files(report)
        )
    return CorpusLoad(articles=articles, report=report, files=list(files))


MAX_FILES_NAMED = 20


def _unreadable_files(report: CorpusReport) -> str:
    """One line per file that gave no article, with its first problem."""
    lines = []
    for f in report.files:
        if f.records:
            continue
        problems = [b for b in report.bad_records if b.file == f.path]
        why = f"{problems[0].position}: {problems[0].reason}" if problems else "no records in it"
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        lines.append(f"\n  {f.path}: {why}{more}")
    if len(lines) > MAX_FILES_NAMED:
        lines = [*lines[:MAX_FILES_NAMED], f"\n  ... and {len(lines) - MAX_FILES_NAMED} more"]
    return "".join(lines)


def _read(files: Sequence[Path], report: CorpusReport) -> Iterator[Article | Deletion]:
    for path in files:
        file_report = FileReport(path=str(path), format=file_format(path))
        report.files.append(file_report)
        for record in iter_file(path):
            if isinstance(record, BadRecord):
                file_report.bad += 1
                report.bad_records.append(record)
            elif isinstance(record, Article):
                file_report.records += 1
                yield normalize_article(record)
            else:
                yield record


Fetcher = Callable[[Config], object]


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def ensure_corpus(cfg: Config, fetch: Fetcher | None = None) -> list[Path]:
    """The corpus files; when there are none, download them first into ``corpus.fetch.out_dir``
    (``make run`` uses this). Offline, the error says where to put files instead."""
    try:
        return find_corpus_files(cfg)
    except CorpusNotFoundError:
        pass
    out_dir = cfg.resolve(cfg.corpus.fetch.out_dir)
    if fetch is None:
        from ingest.fetch import fetch_corpus

        def fetch(c: Config) -> object:
            return fetch_corpus(c, log=_stderr)

    looked = ", ".join(str(cfg.resolve(e)) for e in cfg.corpus.paths) or "corpus.paths (empty)"
    _stderr(
        f"no corpus files found in {looked}: downloading corpus.fetch.query "
        f"({cfg.corpus.fetch.query!r}) from PubMed into {out_dir}, because `make run` needs a "
        "corpus to index (Ctrl+C stops it; put your own files there to skip the download)"
    )
    try:
        fetch(cfg)
    except FetchError as err:
        raise CorpusNotFoundError(
            f"no corpus files found and downloading from PubMed failed: {err}\n"
            f"Put PubMed XML (.xml/.xml.gz) or MEDLINE (.txt) files in {out_dir} "
            "(or any folder listed in corpus.paths in cfg.yaml) and run again"
        ) from None
    try:
        return find_corpus_files(cfg)
    except CorpusNotFoundError:
        return find_corpus_files(cfg, [str(out_dir)])  # out_dir is not listed in corpus.paths
