"""The project's one sentence splitter: abstracts, chunks, answers, with character offsets.

Written here rather than taken from a library because what matters is biomedical: effect sizes
("OR 1.8 (95% CI 1.2-2.4)", "p < 0.05", "73%"), abbreviations ("vs.", "et al.", "e.g.", "Fig."),
labelled sections ("RESULTS:" at a paragraph start or inline, as MEDLINE text and re-joined chunks
have them), and offsets that point back into the text so a sentence can be highlighted. pysbd
was measured against it on 2,000 shared abstracts (``python -m bench.sentence_split``,
docs/measurements-answers.md): it leaves section labels inside sentences (4,335 times against
10), splits inside parentheses twice as often, and is 30-50x slower.

A boundary is ``.``/``!``/``?`` (plus closing quotes/brackets) followed by white space and a
capital letter, a digit or an opening bracket, unless the word before the stop is a known
abbreviation or the stop sits inside an open parenthesis that closes soon after. A section label
starts a new sentence and is kept out of the sentence's span but recorded as its ``section``.
The abstracts' rule also ends a sentence where PubMed's text lost the white space after it
("rates.Conclusions In ...", "(BMI).We surveyed": ``SplitRule.glued``; 249 of the 16,656 shared
abstracts have one).

That is :data:`ABSTRACTS`, the rule grounding, the chat and the evaluations read abstracts with.
Three callers keep a plainer :class:`SplitRule` of the same splitter, because what they produce
is fixed by it (each rule is defined where it is used, with its reason): the index's chunk
boundaries (``indexing.chunking.CHUNKS``: a new rule re-chunks and re-embeds every article, and
every retrieval figure was measured on these chunks), the passage the PubMedQA verdict
classifier was calibrated on (``eval.verdict.evidence.VERDICT_PASSAGE``) and the sentence sample
``eval tokenizer`` reports on (``eval.tokenizer.SAMPLE_SENTENCES``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

# Words that end in a full stop without ending a sentence (matched case-insensitively on the word
# right before the stop). "al" covers "et al.", "e.g"/"i.e" the Latin forms with inner stops.
# Units ("min.", "yr.") and "MS." (multiple sclerosis) are left out: in abstracts they end
# sentences far more often than they abbreviate.
ABBREVIATIONS = frozenset(
    "al e.g i.e eg ie cf vs approx ca dr mr mrs prof st resp inc ltd corp jr dept univ "
    "incl viz".split()
)
# Abbreviations that hold a boundary only before a number: "Fig. 2", "No. 5", "Ref. 12".
NUMBERED_ABBREVIATIONS = frozenset("no nos fig figs tab ref refs eq eqs vol".split())

# An upper-case section label: "RESULTS:", "METHODS AND FINDINGS:", "CONCLUSIONS/SIGNIFICANCE:".
# At a paragraph start, or inline after a sentence end (MEDLINE text, re-joined chunks).
_LABEL = re.compile(r"(?:(?<![^\n])|(?<=[.!?)\]]\s))\s*([A-Z][A-Z0-9 ,&/()-]{2,60}[A-Z)]):\s+")
# A heading glued to the stop before it ("rates.Conclusions In a whole ...", "follow-up.Setting
# Scotland."), as the lost line break leaves a structured abstract's mixed-case headings; a
# capital or a digit must follow, so "accuracy.Participants were aged" stays a sentence.
_GLUED_LABEL = re.compile(
    r"(?<=[A-Za-z0-9][a-z)\]%][.!?])((?:Background|Introduction|Objectives?|Aims?|Purpose|Context|"
    r"Methods?|Materials and methods|Design|Setting|Participants|Patients|Interventions?|"
    r"Measurements|Main outcome measures?|Results?|Main results|Findings|Conclusions?|"
    r"Interpretation|Discussion|Limitations|Significance))[:.]?\s+(?=[A-Z0-9])"
)
_WORD_BEFORE = re.compile(r"([A-Za-z][A-Za-z.]*)$")
_PAREN_LOOKAHEAD = 250  # an open "(" must close within this many characters to hold a boundary

# Section names whose sentences carry results or conclusions (see ``section_kind``).
_RESULT_LABEL = re.compile(r"RESULT|FINDING|OUTCOME", re.IGNORECASE)
_CONCLUSION_LABEL = re.compile(
    r"CONCLU|INTERPRETATION|IMPLICATION|SIGNIFICANCE|SUMMARY|DISCUSSION", re.IGNORECASE
)


@dataclass(frozen=True)
class SplitRule:
    """Where a sentence may end: a stop (``.``/``!``/``?``, then any of ``closers``), white space,
    and one of ``starts``; the checks that may hold such a boundary; what else cuts the text."""

    closers: str  # characters allowed between the stop and the white space ('"', ")", "]" ...)
    starts: str  # a regex character-class body: what the next sentence may start with
    abbreviations: bool  # "et al.", "vs.", "Fig. 2" hold the boundary
    parentheses: bool  # a stop inside an open "(" / "[" that closes soon holds the boundary
    section_labels: bool  # "RESULTS:" starts a sentence and becomes its ``section``
    lines: bool  # every line is a paragraph of its own (else a newline is white space)
    # "rates.Conclusions In ..." / "(BMI).We surveyed": a stop after a lower-case letter, ")",
    # "]" or "%" (itself after a letter or digit: "p.Arg12His" and "J.Smith" stay whole) and
    # straight before a capitalised word ends a sentence without white space
    # (PubMed text that lost the line break between two paragraphs or sections; a known heading
    # there becomes the next sentence's ``section``). Off for the rules whose output is fixed.
    glued: bool = False


ABSTRACTS = SplitRule(
    closers="\"'”’)]",
    starts='A-Z0-9(\\["“',
    abbreviations=True,
    parentheses=True,
    section_labels=True,
    lines=True,
    glued=True,
)


@cache
def _patterns(rule: SplitRule) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(the stop, the white space and next sentence's first character) of a rule."""
    closers = f"[{re.escape(rule.closers)}]*" if rule.closers else ""
    glued = r"|(?<=[A-Za-z0-9][a-z)\]%])[.!?](?=[A-Z][a-z])" if rule.glued else ""
    # the stop is followed by white space, or glued to the next word: either way ``\s*``
    return re.compile(rf"[.!?]+{closers}(?=\s){glued}"), re.compile(rf"\s*([{rule.starts}])")


@dataclass(frozen=True)
class Sentence:
    """One sentence: ``text == source[start:end]``; ``section`` is the label it falls under."""

    text: str
    start: int
    end: int
    index: int
    section: str | None = None

    @property
    def kind(self) -> str:
        return section_kind(self.section)


def section_kind(label: str | None) -> str:
    """``conclusion``, ``result``, ``other`` for a label, ``unlabelled`` without one."""
    if not label:
        return "unlabelled"
    if _CONCLUSION_LABEL.search(label):
        return "conclusion"
    if _RESULT_LABEL.search(label):
        return "result"
    return "other"


def _is_abbreviation(text: str, stop: int, next_char: str) -> bool:
    m = _WORD_BEFORE.search(text, max(0, stop - 40), stop)
    if not m:
        return False
    word = m.group(1).rstrip(".").lower()
    return word in ABBREVIATIONS or (word in NUMBERED_ABBREVIATIONS and next_char.isdigit())


def _inside_parenthesis(text: str, pos: int, seg_start: int, prefix_only: bool) -> bool:
    """An unclosed "(" or "[" before ``pos`` that closes within the look-ahead window (or at all
    with ``prefix_only``, where the decision may not depend on text not yet streamed)."""
    depth = 0
    for ch in text[seg_start:pos]:
        if ch in "([":
            depth += 1
        elif ch in ")]" and depth:
            depth -= 1
    if not depth:
        return False
    if prefix_only:
        return True
    ahead = text[pos : pos + _PAREN_LOOKAHEAD]
    return any(ch in ")]" for ch in ahead)


def _split_segment(
    text: str, start: int, end: int, rule: SplitRule, prefix_only: bool = False
) -> list[tuple[int, int]]:
    """Sentence spans within ``text[start:end]`` (a run of text with no label inside)."""
    stop, next_start = _patterns(rule)
    spans: list[tuple[int, int]] = []
    cur = start
    for m in stop.finditer(text, start, end):
        stop_end = m.end()
        nxt = next_start.match(text, stop_end, end)
        if not nxt:
            continue
        if (
            rule.abbreviations
            and m.group().startswith(".")
            and _is_abbreviation(text, m.start(), nxt.group(1))
        ):
            continue
        if rule.parentheses and _inside_parenthesis(text, m.start(), cur, prefix_only):
            continue
        spans.append((cur, stop_end))
        cur = nxt.start(1)
    spans.append((cur, end))
    out = []
    for a, b in spans:  # trim white space at both ends
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if a < b:
            out.append((a, b))
    return out


def split_sentences(
    text: str, *, prefix_only: bool = False, rule: SplitRule = ABSTRACTS
) -> list[Sentence]:
    """Every sentence of ``text`` with offsets; section labels become ``section``, not text.

    ``prefix_only``: each boundary is decided from the text up to the next sentence's first
    character (a stop inside an open parenthesis never ends a sentence), so splitting a growing
    stream gives the same sentences as splitting the finished text. ``rule``: see
    :class:`SplitRule` (the default reads abstracts as this module's docstring says).
    """
    text = text or ""
    sentences: list[Sentence] = []
    for seg_start, seg_end, seg_label in _segments(text, rule):
        for a0, b0 in _paragraphs(text, seg_start, seg_end, rule):
            for a, b in _split_segment(text, a0, b0, rule, prefix_only):
                sentences.append(Sentence(text[a:b], a, b, len(sentences), seg_label))
    return sentences


def _segments(text: str, rule: SplitRule) -> list[tuple[int, int, str | None]]:
    """``(start, end, label)`` of the runs between section labels (one run without labels)."""
    if not rule.section_labels:
        return [(0, len(text), None)]
    segments: list[tuple[int, int, str | None]] = []
    pos, label = 0, None
    labels = list(_LABEL.finditer(text))
    if rule.glued:
        labels = sorted([*labels, *_GLUED_LABEL.finditer(text)], key=lambda m: m.start())
    for m in labels:
        segments.append((pos, m.start(1), label))
        pos, label = m.end(), m.group(1).strip()
    segments.append((pos, len(text), label))
    return segments


def _paragraphs(text: str, start: int, end: int, rule: SplitRule) -> list[tuple[int, int]]:
    """``(start, end)`` of each line of ``text[start:end]`` (the whole run without ``lines``)."""
    if not rule.lines:
        return [(start, end)]
    return [(start + m.start(), start + m.end()) for m in re.finditer(r"[^\n]+", text[start:end])]


def sentence_texts(text: str, rule: SplitRule = ABSTRACTS) -> list[str]:
    """The sentences' texts alone."""
    return [s.text for s in split_sentences(text, rule=rule)]
