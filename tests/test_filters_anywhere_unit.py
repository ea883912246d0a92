"""Filters anywhere in the question (retrievers.filters): a year phrase after a publication
word dates the publications wherever it stands; year, author, design and journal together; the
remaining words are what is searched; a refused question with filters names them."""

from __future__ import annotations

import pytest

from chains.answer import filters_note
from retrievers.filters import parse_filters


@pytest.mark.parametrize(
    ("question", "searched", "described"),
    [
        ("What did studies after 2020 find about AI reading chest X-rays?",
         "What did find about AI reading chest X-rays?", "year >= 2021"),
        ("Do studies after 2020 support AI reading chest X-rays?",
         "Do support AI reading chest X-rays?", "year >= 2021"),
        ("What did papers since 2019 report on fluoride and IQ?",
         "What did report on fluoride and IQ?", "year >= 2019"),
        ("Which studies before 2016 looked at lead and IQ?", "Which looked at lead and IQ?",
         "year <= 2015"),
        ("What did research from 2015 to 2018 show on IQ?", "What did show on IQ?",
         "years 2015-2018"),
        ("What did RCTs published in Lancet after 2019 find about statins?",
         "What did find about statins?", "year >= 2020, design: RCT, journal Lancet"),
        ("Which papers by Deary after 2015 examined childhood IQ and mortality?",
         "Which examined childhood IQ and mortality?", "year >= 2016, author Deary"),
    ],
)  # fmt: skip
def test_filters_mid_sentence(question: str, searched: str, described: str) -> None:
    text, filters = parse_filters(question)
    assert (text, filters.describe()) == (searched, described)


def test_a_year_that_dates_the_data_is_no_filter() -> None:
    question = "How did obesity rates change after 2010 in children?"
    text, filters = parse_filters(question)
    assert filters.is_empty() and text == question


def test_a_refused_question_with_filters_is_told_which() -> None:
    note = filters_note({"year_min": 2021, "designs": ["rct"]})
    assert note == ("No indexed abstract on this matches the filters (year >= 2021, design: "
                    "RCT); try without them.")  # fmt: skip
