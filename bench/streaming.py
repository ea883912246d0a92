"""Does parsing stay flat in memory as a PubMed XML file grows? (``bench ingest --stream``)

A baseline-sized file is made by repeating the records of a real one (a 2025-DTD file from the
corpus) ``copies`` times; each file is parsed in a fresh process that keeps nothing, and that
process's peak RSS is reported. Streaming means the peaks match whatever the file size.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import tempfile
from pathlib import Path

_CHILD = """
import json, resource, sys
from pathlib import Path
from ingest.pubmed_xml import iter_pubmed_xml
from ingest.sources import open_binary
n = 0
with open_binary(Path(sys.argv[1])) as fh:
    for _ in iter_pubmed_xml(fh, sys.argv[1]):
        n += 1
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"records": n, "peak_rss_mb": round(peak, 1)}))
"""


def repeat_records(source: Path, target: Path, copies: int) -> None:
    """Write ``source``'s records ``copies`` times into one gzipped PubmedArticleSet."""
    opener = gzip.open if source.suffix == ".gz" else open
    with opener(source, "rb") as fh:
        data = fh.read()
    start = data.index(b">", data.index(b"<PubmedArticleSet")) + 1
    end = data.rindex(b"</PubmedArticleSet>")
    with gzip.open(target, "wb", compresslevel=1) as out:
        out.write(data[:start])
        for _ in range(copies):
            out.write(data[start:end])
        out.write(data[end:])


def parse_peak(path: Path, repo: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path)], cwd=repo, capture_output=True, text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def streaming_report(source: Path, copies: int, repo: Path) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "baseline_sized.xml.gz"
        repeat_records(source, big, copies)
        with gzip.open(big, "rb") as fh:
            big_mb = sum(len(b) for b in iter(lambda: fh.read(1 << 20), b"")) / 2**20
        one = parse_peak(source, repo)
        many = parse_peak(big, repo)
    return {
        "source": source.name,
        "copies": copies,
        "file_mb_uncompressed": round(big_mb, 1),
        "one_copy": one,
        "all_copies": many,
        "peak_rss_growth_mb": round(many["peak_rss_mb"] - one["peak_rss_mb"], 1),
    }
