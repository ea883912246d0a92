"""The streaming-memory bench: a file of repeated real records parses to all of them."""

from __future__ import annotations

from pathlib import Path

from bench.streaming import parse_peak, repeat_records
from tests.conftest import require_shared_data

REPO = Path(__file__).resolve().parents[1]


def test_repeated_file_parses_every_copy_in_a_fresh_process(tmp_path: Path) -> None:
    source = require_shared_data() / "pubmed" / "pubmedqa_pqal.xml.gz"
    one = parse_peak(source, REPO)
    target = tmp_path / "twice.xml.gz"
    repeat_records(source, target, 2)
    two = parse_peak(target, REPO)
    assert one["records"] == 1000
    assert two["records"] == 2 * one["records"]
    assert two["peak_rss_mb"] > 0
