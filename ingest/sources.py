"""Reading one corpus file: gzip or not, PubMed XML or MEDLINE text (told apart by content).

Problems with a file (unreadable, not a corpus format, not UTF-8) come out as a
:class:`~ingest.pubmed_xml.BadRecord` for that file, so one bad file never stops a load.
"""

from __future__ import annotations

import gzip
import io
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Literal, cast

from ingest.medline import iter_medline
from ingest.pubmed_xml import BadRecord, Record, iter_pubmed_xml

Format = Literal["pubmed-xml", "medline", "unknown"]

_GZIP_MAGIC = b"\x1f\x8b"


@contextmanager
def open_binary(path: Path) -> Iterator[BinaryIO]:
    """Open ``path`` for reading, decompressing gzip whatever the file is called."""
    with path.open("rb") as raw:
        if raw.read(2) == _GZIP_MAGIC:
            raw.seek(0)
            with gzip.GzipFile(fileobj=raw) as gz:
                yield gz  # type: ignore[misc]
        else:
            raw.seek(0)
            yield raw


def sniff_format(head: bytes) -> Format:
    """PubMed XML starts with ``<``, MEDLINE text with ``PMID``."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text.startswith(b"<"):
        return "pubmed-xml"
    if text.startswith(b"PMID"):
        return "medline"
    return "unknown"


def _peek(stream: BinaryIO) -> tuple[BinaryIO, bytes]:
    """The first bytes without consuming them (files and GzipFile both have ``peek``)."""
    if not hasattr(stream, "peek"):
        stream = io.BufferedReader(cast(io.RawIOBase, stream))
    return stream, stream.peek(1024)[:1024]


def iter_file(path: Path) -> Iterator[Record]:
    """Every record of one corpus file; file-level problems as one :class:`BadRecord`."""
    name = str(path)
    try:
        with open_binary(path) as stream:
            buffered, head = _peek(stream)
            fmt = sniff_format(head)
            if fmt == "pubmed-xml":
                yield from iter_pubmed_xml(buffered, name=name)
            elif fmt == "medline":
                yield from _iter_medline_text(buffered, name)
            elif not head.strip():
                yield BadRecord(name, "line 1", "empty file (download it again or remove it)")
            elif path.suffix.lower() == ".gz" and not isinstance(stream, gzip.GzipFile):
                yield BadRecord(
                    name,
                    "line 1",
                    f"named .gz but not gzip data (starts with {head[:30]!r}): download it "
                    "again, or remove it from corpus.paths",
                )
            else:
                yield BadRecord(
                    name,
                    "line 1",
                    f"neither PubMed XML nor MEDLINE text (starts with {head[:30]!r}): remove "
                    "it or export it from PubMed as XML or in 'PubMed' (MEDLINE) format",
                )
    except OSError as err:  # includes gzip.BadGzipFile
        yield BadRecord(name, "line 1", f"cannot read the file ({err})")
    except (EOFError, zlib.error) as err:
        yield BadRecord(name, "line 1", f"damaged gzip data ({err}): download it again")


def _iter_medline_text(stream: BinaryIO, name: str) -> Iterator[Record]:
    text = io.TextIOWrapper(stream, encoding="utf-8-sig", newline=None)
    try:
        yield from iter_medline(text, name=name)
    except UnicodeDecodeError as err:
        yield BadRecord(name, "?", f"not UTF-8 text ({err.reason}): save it as UTF-8")
    except (EOFError, gzip.BadGzipFile, zlib.error) as err:
        yield BadRecord(name, "end", f"compressed data ends early or is damaged ({err})")


def file_format(path: Path) -> Format:
    """The format of one corpus file, from its first bytes (``unknown`` if unreadable)."""
    try:
        with open_binary(path) as stream:
            return sniff_format(_peek(stream)[1])
    except (OSError, EOFError, zlib.error):
        return "unknown"
