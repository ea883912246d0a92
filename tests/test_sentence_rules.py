"""The one sentence splitter (``ingest.sentences``) under its four rules: the abstracts' rule
(grounding, the chat), the chunker's (``indexing.chunking.CHUNKS``) and the calibrated verdict
passage's (``eval.verdict.evidence.VERDICT_PASSAGE``), and the tokenizer check's sample
(``eval.tokenizer.SAMPLE_SENTENCES``). The last three must split exactly as the regular
expressions they replaced did: the published index's chunks, the verdict classifier's
calibration and the reported tokenizer sample were made with those (the whole shared corpus was
compared when they were replaced: docs/design.md "One sentence splitter")."""

from __future__ import annotations

import dataclasses
import re

import pytest

from eval.tokenizer import SAMPLE_SENTENCES
from eval.verdict.evidence import VERDICT_PASSAGE
from indexing.chunking import CHUNKS
from ingest.sentences import ABSTRACTS, sentence_texts, split_sentences

# What each replaced splitter was, kept here as the reference the rules must reproduce.
_OLD_CHUNK_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[])|\n+")
_OLD_VERDICT_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\[])")
_OLD_SAMPLE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[])")


def old_chunk_split(text: str) -> list[str]:
    return [s.strip() for s in _OLD_CHUNK_END.split(text) if s and s.strip()]


def old_verdict_split(text: str) -> list[str]:
    return [s.strip() for s in _OLD_VERDICT_END.split((text or "").strip()) if s.strip()]


def old_sample_split(text: str) -> list[str]:
    return [s.strip() for s in _OLD_SAMPLE_END.split(text) if s.strip()]


TRICKY = [
    "Smith et al. Reported it. Next one.",
    "Dose was 5 mg vs. 10 mg. 12 patients improved. (n = 3) rose.",
    'He said "stop." Then left. It ended.) Next [1] here.',
    "Risk rose (p < 0.05. The) rest. See Fig. 2 now.",
    "BACKGROUND: Aim.\nRESULTS: It worked\nbecause of x. CONCLUSION: Use it.",
    "A.\n\nb is lower.\r\nC is higher!  D? E",
    "  leading and trailing white space.   ",
    "Mean age 54.3 years. “Quoted” start. Ok...  Done",
    "Lower rates.Conclusions In all. Mass index (BMI).We surveyed 5%.The rest.",
    "",
]


@pytest.mark.parametrize("text", TRICKY)
def test_the_chunk_rule_splits_as_the_index_was_chunked(text: str) -> None:
    # mutation caught: CHUNKS.starts without digits ("A-Z(\\["), or lines=False
    assert sentence_texts(text, CHUNKS) == old_chunk_split(text)


@pytest.mark.parametrize("text", TRICKY)
def test_the_verdict_rule_splits_as_the_classifier_was_calibrated(text: str) -> None:
    # mutation caught: VERDICT_PASSAGE.lines=True (a newline alone ends a sentence), or digits
    # allowed in starts
    assert sentence_texts(text, VERDICT_PASSAGE) == old_verdict_split(text)


@pytest.mark.parametrize("text", TRICKY)
def test_the_tokenizer_sample_rule_splits_as_the_sample_was_drawn(text: str) -> None:
    # mutation caught: SAMPLE_SENTENCES.lines=True, or digits left out of its starts
    assert sentence_texts(text, SAMPLE_SENTENCES) == old_sample_split(text)


@pytest.mark.parametrize(
    ("switch", "text", "with_it", "without_it"),
    [
        (
            "abbreviations",
            "Lower vs. Placebo arm. Next.",
            ["Lower vs. Placebo arm.", "Next."],
            ["Lower vs.", "Placebo arm.", "Next."],
        ),
        (
            "parentheses",
            "It held (n = 12. Pooled) overall. Next.",
            ["It held (n = 12. Pooled) overall.", "Next."],
            ["It held (n = 12.", "Pooled) overall.", "Next."],
        ),
        (
            "section_labels",
            "Aim. RESULTS: It worked.",
            ["Aim.", "It worked."],
            ["Aim.", "RESULTS: It worked."],
        ),
        ("lines", "First line\nsecond line.", ["First line", "second line."], None),
        (
            "glued",
            "Lower rates.Conclusions In all. Mass index (BMI).We surveyed 5%.The rest.",
            ["Lower rates.", "In all.", "Mass index (BMI).", "We surveyed 5%.", "The rest."],
            ["Lower rates.Conclusions In all.", "Mass index (BMI).We surveyed 5%.The rest."],
        ),
    ],
)
def test_each_switch_of_a_rule_holds_or_makes_its_boundaries(
    switch: str, text: str, with_it: list[str], without_it: list[str] | None
) -> None:
    # mutation caught: the splitter ignoring that switch (e.g. the abbreviation check run
    # whatever ``rule.abbreviations`` says, or every line split whatever ``rule.lines`` says)
    off = dataclasses.replace(ABSTRACTS, **{switch: False})
    assert sentence_texts(text, ABSTRACTS) == with_it
    assert sentence_texts(text, off) == (without_it or [text])


def test_a_heading_glued_to_the_stop_before_it_becomes_the_next_sentences_section() -> None:
    # PubMed text that lost the line break between a structured abstract's sections
    # mutation caught: _GLUED_LABEL left out of _segments (the heading stays in the sentence),
    # or its look-ahead for a capital or digit dropped ("accuracy.Participants were" a heading)
    text = ("Prospective cohort study.Setting Scotland.Participants 33 536 men.Results IQ "
            "predicted death rates.Conclusions In a whole population it held. Test "
            "accuracy.Participants were aged 1 to 6 years.")
    assert [(s.section, s.text) for s in split_sentences(text)] == [
        (None, "Prospective cohort study."),
        ("Setting", "Scotland."),
        ("Participants", "33 536 men."),
        ("Results", "IQ predicted death rates."),
        ("Conclusions", "In a whole population it held."),
        ("Conclusions", "Test accuracy."),
        ("Conclusions", "Participants were aged 1 to 6 years."),
    ]
    assert split_sentences(text)[4].kind == "conclusion"


def test_a_stop_inside_a_name_or_a_variant_is_no_glued_boundary() -> None:
    # mutation caught: the two-character look-behind cut to one ("p.Arg123His" and "J.Smith"
    # split), or abbreviations not checked on a glued stop ("e.g.Smith" split)
    text = "The p.Arg123His variant by J.Smith (see e.g.Smith et al.). Logistic (Log.Regr.) fits."
    assert sentence_texts(text) == [
        "The p.Arg123His variant by J.Smith (see e.g.Smith et al.).",
        "Logistic (Log.Regr.) fits.",
    ]
    assert sentence_texts("See e.g.Smith for it.") == ["See e.g.Smith for it."]


def test_offsets_point_into_the_text_under_every_rule() -> None:
    # mutation caught: a line's offsets taken within its run, not within the text
    text = TRICKY[4]
    for rule in (ABSTRACTS, CHUNKS, VERDICT_PASSAGE, SAMPLE_SENTENCES):
        assert all(text[s.start : s.end] == s.text for s in split_sentences(text, rule=rule))
