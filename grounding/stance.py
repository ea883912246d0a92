"""Stance per source: does this abstract's evidence say yes, no, or neither to the question?

Transparent rules over the abstract's own conclusion (its labelled conclusion, else its last
sentences) and its key findings, scoped to the question:

- a **null finding** or negated result ("did not improve", "no significant difference", "was not
  associated", "similar to", "failed to") says *no*;
- an **affirmative finding** ("was associated with", "improved", "predicted", "significantly
  higher") says *yes*;
- wording that only looks negative says *yes* when the rest is affirmative: "cannot be explained
  by", "regardless of", "independently of", "over and above", "not only";
- a negation scoped to something the question does not ask about ("improved attention, **but not**
  emotional state", "predicts gF in musicians **but not in nonmusicians**") is set aside;
- doubt ("unclear", "inconclusive", "mixed results", "remains to be") says *unclear*; hedges
  ("may", "suggest") weaken a stance.

Each stance carries the sentence that decided it (its offsets into the abstract) and a strength
in [0, 1]; :mod:`grounding.consensus` turns the stances into the verdict.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from grounding.concepts import stems_of, words_of
from grounding.sameness import DIFFERENCE_FOUND, SAMENESS_FOUND, asks_sameness
from grounding.sentences import Sentence
from grounding.sources import SourceText
from indexing.stems import stem
from indexing.tokenize import STOPWORDS

Stance = Literal["yes", "no", "unclear"]


def _rx(*alternatives: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(alternatives) + r")\b", re.IGNORECASE)


# Negative-looking wording that reports a robust positive result: removed before cues are read.
AFFIRMING_NEGATIONS = _rx(
    r"cannot (?:be )?(?:fully |entirely |solely |simply )?(?:explained|accounted for|attributed)",
    r"could not (?:be )?(?:fully |entirely )?(?:explained|accounted for|attributed)",
    r"regardless of", r"irrespective of", r"independent(?:ly)? of", r"over and above",
    r"above and beyond", r"not only", r"not just", r"not merely", r"no less than",
    r"even after (?:controlling|adjusting|accounting)", r"not limited to",
    r"not (?:been )?(?:previously )?(?:reported|described|known|studied|investigated|examined)",
    r"without compromising", r"without (?:loss|impairment|affecting)",
)  # fmt: skip

# A negation that only defines who was studied ("than those WHO HAD NOT RECEIVED radiotherapy",
# "women who did not exercise") or a condition ("IF a graft CANNOT BE found in time") states no
# finding: removed before cues are read.
NON_FINDING_NEGATIONS = re.compile(
    r"\b(?:who|whom)\s+(?:had|have|has|did|do|does|was|were|is|are|could|can|would)\s*(?:not|n't)"
    r"\s+(?:\w+)|\b(?:who|whom)\s+(?:cannot|can't|never)\s+\w+|"
    r"\b(?:if|unless)\s+(?:[\w-]+\s+){1,8}?(?:is|are|was|were|do|does|did|can|could)\s*(?:not|n't)"
    r"\s+\w+|\b(?:if|unless)\s+(?:[\w-]+\s+){1,8}?cannot\s+\w+",
    re.IGNORECASE,
)

# "..., but not in X": the negation is about X alone (up to four words; a scope the question may
# not ask about).
SCOPED_NOT = re.compile(
    r"(?:,?\s*\b(?:but|and|yet|though)\s+not\b|\(\s*not\b|,\s*not\b)\s*(?:(?:in|for|with|among|on|of|"
    r"by|to|at|during)\b)?\s*((?:[\w'-]+ ?){1,4})",
    re.IGNORECASE,
)

NULL_FINDING = _rx(
    r"no (?:[\w-]+ ){0,3}(?:differences?|effects?|associations?|correlations?|relationships?|"
    r"relations?|link|evidence|benefits?|advantage|impact|influence|improvements?|increase|"
    r"reduction|changes?|decline|impairment|deficits?|role|support)",
    r"no (?:statistically )?significant",
    r"(?:did|does|do|was|were|is|are|could|can|has|have|had|would|will|may|might|should|must)"
    r" not (?:\w+ ){0,2}?(?:\w+)",
    r"(?:didn't|doesn't|don't|wasn't|weren't|isn't|aren't|couldn't|cannot|can't|hasn't|haven't)"
    r" (?:\w+)",
    r"not (?:\w+ )?(?:significantly|statistically|associated|related|correlated|linked|different|"
    r"differ\w*|superior|better|worse|inferior|effective|affected|influenced|predictive|"
    r"predict\w*|improv\w*|increas\w*|reduc\w*|found|shown|observed|detected|demonstrated|"
    r"confirmed|supported|altered|changed|impaired|compromised|generali[sz]\w*|transfer\w*|"
    r"lead|result)",
    r"fail(?:ed|s)? to", r"unable to", r"neither", r"unaffected", r"unrelated", r"unchanged",
    r"ineffective", r"(?:similar|comparable|equivalent|identical|indistinguishable) "
    r"(?:[\w,'-]+ ){0,8}?(?:to|with|as|between|across)",
    r"(?:virtually|essentially|largely) (?:identical|the same|unchanged|similar)",
    r"(?:was|were|is|are|remained) (?:\w+ )?(?:normal|similar|comparable|preserved|intact)",
    r"lack of (?:\w+ )?(?:effect|association|difference|benefit|improvement)",
    r"absence of (?:\w+ )?(?:effect|association|difference|benefit|improvement)",
    r"non-?significant", r"no longer significant", r"did not reach significance",
)  # fmt: skip

AFFIRMATIVE = _rx(
    r"significant(?:ly)?", r"associated with", r"linked to", r"related to", r"correlated with",
    r"predict\w*", r"improv\w+", r"increas\w+", r"decreas\w+", r"reduc\w+", r"lower\w*",
    r"higher", r"greater", r"better", r"worse", r"poorer", r"superior", r"enhanc\w+",
    r"effective(?:ly|ness)?", r"efficacious", r"benefi\w+", r"risk factor", r"explain\w*",
    r"contribut\w+", r"led to", r"lead to", r"leads to", r"result(?:s|ed)? in", r"caus\w+",
    r"restor\w+", r"sustained", r"maintained", r"preserv\w+", r"achiev\w+", r"showed", r"shows",
    r"demonstrat\w+", r"confirm\w*", r"support\w*", r"promising", r"marked", r"substantial",
    r"strong(?:ly)?", r"robust", r"elevated", r"impair\w+", r"deficits?", r"declin\w+",
    r"more likely", r"less likely", r"increased risk", r"protect\w+", r"positive(?:ly)?",
    r"negative(?:ly)?", r"mediat\w+", r"moderat\w+", r"influenc\w+", r"affect\w*",
    r"help(?:s|ed)?", r"helpful",
)  # fmt: skip

DOUBT = _rx(
    r"unclear", r"uncertain", r"inconclusive", r"inconsistent", r"conflicting", r"mixed (?:results|"
    r"findings|evidence)", r"remains? (?:to be|unknown|unclear|controversial)", r"controversial",
    r"not clear", r"questionable", r"cannot be (?:excluded|ruled out|determined|concluded)",
    r"insufficient evidence", r"limited evidence", r"further (?:\w+ ){0,2}(?:needed|required|"
    r"warranted)", r"(?:is|are) needed to",
)  # fmt: skip

HEDGE = _rx(
    r"may", r"might", r"could", r"possibly", r"possible", r"potential(?:ly)?", r"appears?",
    r"seems?", r"suggest\w*", r"trend\w*", r"likely", r"perhaps", r"tend\w*",
)  # fmt: skip

# A strong null finding: the plain statement that something was not found.
STRONG_NULL = _rx(
    r"no (?:statistically )?significant", r"not (?:statistically )?significant(?:ly)?",
    r"no (?:[\w-]+ ){0,3}(?:differences?|effects?|associations?|correlations?|benefits?|"
    r"improvements?|evidence)",
    r"(?:did|does|do|was|were|is|are) not (?:significantly |substantially |appear to )?(?:be )?"
    r"(?:improv\w*|differ\w*|increas\w*|reduc\w*|decreas\w*|chang\w*|affect\w*|alter\w*|"
    r"predict\w*|associated|related|correlated|linked|generali[sz]\w*|transfer\w*|"
    r"influenc\w*|impair\w*|ameliorat\w*|provok\w*|confirm\w*|support\w*|superior|better|"
    r"worse|different|effective|beneficial|found|shown|observed|demonstrat\w*)",
    r"fail(?:ed|s)? to", r"unaffected", r"unchanged", r"ineffective",
)  # fmt: skip
QUESTION_NEGATED = _rx(r"not", r"\w+n't", r"no", r"without", r"never")
QUESTION_COMPARES = _rx(
    r"differ\w*", r"better", r"superior", r"more", r"less", r"worse", r"improve\w*",
    r"increase\w*", r"reduce\w*", r"raise\w*", r"lower", r"higher", r"affect\w*",
    r"effective", r"associated", r"related", r"predict\w*", r"influence\w*", r"impair\w*",
    r"lose", r"benefit\w*", r"change\w*", r"decline\w*",
)  # fmt: skip
EQUIVALENCE = _rx(
    r"similar", r"comparable", r"equivalent", r"identical", r"indistinguishable",
    r"non-?inferior", r"as (?:good|effective|safe|accurate) as",
)  # fmt: skip
# Feature names of the stance classifier, in its stored order.
STANCE_FEATURES: tuple[str, ...] = (
    "strong_null", "null", "null_near_question", "doubt", "affirmative", "affirm_near_question",
    "hedge", "equivalence_x_compares", "equivalence_x_other", "affirming_negation", "overlap",
    "q_negated", "q_compares", "scoped_not_asked", "n_sentences",
)  # fmt: skip


def _near_question(pattern: re.Pattern[str], text: str, question_stems: set[str]) -> int:
    """Matches of ``pattern`` with a question word among the 6 words around them."""
    count = 0
    for m in pattern.finditer(text):
        window = text[max(0, m.start() - 60) : m.end() + 60]
        if stems_of(window) & question_stems:
            count += 1
    return count


def stance_features(
    sentences: Sequence[str], question: str, question_stems: set[str]
) -> dict[str, float]:
    """The stance classifier's inputs for the sentences where a source states its answer:
    log(1 + count) of each cue (after scoping "but not X" and removing affirming negations),
    their nearness to the question's words, and properties of the question."""
    text = " ".join(sentences)
    body, asked = _scoped_out(text, question_stems)
    affirming = len(AFFIRMING_NEGATIONS.findall(body))
    body = AFFIRMING_NEGATIONS.sub(" ", body)
    compares = float(bool(QUESTION_COMPARES.search(question)))
    equivalence = len(EQUIVALENCE.findall(body))

    def log(k: int) -> float:
        return math.log1p(k)

    return {
        "strong_null": log(len(STRONG_NULL.findall(body))),
        "null": log(len(NULL_FINDING.findall(body))),
        "null_near_question": log(_near_question(NULL_FINDING, body, question_stems)),
        "doubt": log(len(DOUBT.findall(body))),
        "affirmative": log(len(AFFIRMATIVE.findall(body))),
        "affirm_near_question": log(_near_question(AFFIRMATIVE, body, question_stems)),
        "hedge": log(len(HEDGE.findall(body))),
        "equivalence_x_compares": log(equivalence) * compares,
        "equivalence_x_other": log(equivalence) * (1 - compares),
        "affirming_negation": log(affirming),
        "overlap": len(stems_of(text) & question_stems) / max(1, len(question_stems)),
        "q_negated": float(bool(QUESTION_NEGATED.search(question))),
        "q_compares": compares,
        "scoped_not_asked": float(asked is not None),
        "n_sentences": log(len(sentences)),
    }


# Labelled sections where an abstract states its answer.
_ANSWER_SECTIONS = ("conclusion", "result")


@dataclass(frozen=True)
class SourceStance:
    """What one source says to the question, and the sentence that says it."""

    source: int  # [n]
    stance: Stance
    sentence: str = ""  # the deciding sentence ("" when none decided)
    start: int = 0
    end: int = 0
    strength: float = 0.0  # how plainly the sentence states it, in [0, 1]
    cue: str = ""  # the wording that decided ("did not improve", "associated with")


@dataclass(frozen=True)
class SentenceStance:
    stance: Stance | None  # None: the sentence states no finding
    strength: float
    cue: str


def _scoped_out(text: str, question_stems: set[str]) -> tuple[str, str | None]:
    """``text`` with "but not X" parts removed when X is not what the question asks about;
    returns (text left, the cue of a scoped negation that IS about the question, if any)."""
    asked: str | None = None

    def drop(m: re.Match[str]) -> str:
        nonlocal asked
        # the negation is about the first word after it ("bilateral but not UNILATERAL hearing
        # loss", "improved mood, but not ATTENTION"): about the question only if that word is
        words = [w for w in words_of(m.group(1)) if w not in STOPWORDS]
        if words and stem(words[0]) in question_stems:
            asked = asked or m.group(0).strip(" ,(")
            return m.group(0)
        return " "

    return SCOPED_NOT.sub(drop, text), asked


def sentence_stance(
    text: str, question_stems: set[str], *, asks_sameness: bool = False
) -> SentenceStance:
    """The stance one sentence takes toward the question (see the module docstring).
    ``asks_sameness``: the question asks whether two things are the same (:data:`ASKS_SAMENESS`)."""
    if asks_sameness:
        return _sameness_stance(text)
    body, asked = _scoped_out(text, question_stems)
    if asked is not None:  # "..., but not <what the question asks about>"
        return SentenceStance("no", 0.7, asked)
    body = NON_FINDING_NEGATIONS.sub(" ", AFFIRMING_NEGATIONS.sub(" ", body))
    doubt = DOUBT.search(body)
    null = NULL_FINDING.search(body)
    yes = AFFIRMATIVE.search(body)
    hedged = HEDGE.search(body) is not None
    if null is not None:
        strength = 0.75 if hedged else 0.9
        return SentenceStance("no", strength, null.group(0))
    if doubt is not None:
        return SentenceStance("unclear", 0.5, doubt.group(0))
    if yes is not None:
        strength = 0.5 if hedged else 0.8
        return SentenceStance("yes", strength, yes.group(0))
    return SentenceStance(None, 0.0, "")


def _sameness_stance(text: str) -> SentenceStance:
    """A "same?" question: a similarity or a null difference says yes, a difference says no."""
    body = NON_FINDING_NEGATIONS.sub(" ", AFFIRMING_NEGATIONS.sub(" ", text))
    hedged = HEDGE.search(body) is not None
    same = SAMENESS_FOUND.search(body)
    if same is not None:
        return SentenceStance("yes", 0.5 if hedged else 0.8, same.group(0))
    differ = DIFFERENCE_FOUND.search(body)
    if differ is not None:
        return SentenceStance("no", 0.75 if hedged else 0.9, differ.group(0))
    doubt = DOUBT.search(body)
    if doubt is not None:
        return SentenceStance("unclear", 0.5, doubt.group(0))
    return SentenceStance(None, 0.0, "")


# A stance stated without a hedge (the rules' strength for an unhedged yes or no).
PLAIN = 0.8


def _says_both(
    stance: Stance,
    shared: set[str],
    question_stems: set[str],
    plain: Sequence[tuple[float, SentenceStance]],
) -> bool:
    """Does the abstract's conclusion also plainly state the OPPOSITE, in a sentence at least as
    close to the question ("no difference ... based on UNILATERAL hearing loss" beside "adversely
    affected by BILATERAL hearing loss")? Then the source is not read as a plain yes or no."""
    if stance not in ("yes", "no"):
        return False
    opposite = "no" if stance == "yes" else "yes"
    closeness = len(shared) / max(1, len(question_stems))
    return any(r.stance == opposite and overlap >= closeness for overlap, r in plain)


def _answer_sentences(source: SourceText, n_last: int = 3) -> list[Sentence]:
    """Where the abstract states its answer: the labelled conclusion, else the results, else its
    last ``n_last`` sentences."""
    sentences = source.sentences
    for kind in _ANSWER_SECTIONS:
        found = [s for s in sentences if s.kind == kind]
        if found:
            return found
    return sentences[-n_last:]


# (stance features) -> probability of each of "yes", "no", "maybe" (a fitted classifier)
StanceClassifier = Callable[[dict[str, float]], dict[str, float]]


def source_stance(
    source: SourceText,
    question: str,
    question_stems: set[str],
    key_findings: Sequence[tuple[int, int]] = (),
    classify: StanceClassifier | None = None,
) -> SourceStance:
    """The source's stance. The rules read its answer sentences (then its key findings) and the
    strongest stance among those that share words with the question decides, with its sentence;
    a conclusion sentence before a key finding, and doubt beats a weak yes. A sentence that
    shares no word with the question decides nothing unless it is the labelled conclusion
    ("No differences were found."): an unlabelled last sentence about something else ("Different
    hypotheses explaining these differences are compared.") once gave a confident "Yes".

    With ``classify`` (the stance classifier over the answer sentences' cues), the strength is
    the classifier's probability of that stance, and a stance the classifier does not also find
    most likely becomes "unclear": a yes/no stands only when rules and classifier agree.

    ``key_findings``: (start, end) offsets of the source's evidence sentences."""
    answer = list(_answer_sentences(source))
    findings = set(key_findings)
    candidates = answer + [
        s for s in source.sentences if (s.start, s.end) in findings and s not in answer
    ]
    best: tuple[float, Sentence, SentenceStance] | None = None
    sameness = asks_sameness(question)
    last = source.sentences[-1] if source.sentences else None
    plain: list[tuple[float, SentenceStance]] = []  # (overlap, read) of the plain answer sentences
    for order, sentence in enumerate(candidates):
        overlap = len(stems_of(sentence.text) & question_stems) / max(1, len(question_stems))
        if not overlap and sentence.kind != "conclusion":
            continue  # shares no word with the question: about something else
        read = sentence_stance(sentence.text, question_stems, asks_sameness=sameness)
        if read.stance is None:
            continue
        if sentence in answer and read.strength >= PLAIN:
            plain.append((overlap, read))
        # a plain statement near the question's words first; answer sentences before key
        # findings, and the abstract's last sentence (where it concludes) before the others
        score = read.strength * (0.5 + overlap) - 0.01 * order + 0.1 * (sentence is last)
        if best is None or score > best[0]:
            best = (score, sentence, read)
    if best is None:
        return SourceStance(source.n, "unclear")
    _, sentence, read = best
    stance: Stance = read.stance or "unclear"
    if _says_both(stance, stems_of(sentence.text) & question_stems, question_stems, plain):
        stance = "unclear"
    strength = read.strength
    if classify is not None and stance == "yes":
        probs = classify(stance_features([s.text for s in answer], question, question_stems))
        strength = probs.get("yes", 0.0)
        if max(probs, key=lambda k: probs[k]) != "yes":
            stance = "unclear"
    return SourceStance(
        source.n, stance, sentence.text, sentence.start, sentence.end, strength, read.cue
    )
