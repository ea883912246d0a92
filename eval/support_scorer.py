"""An independent, deliberately simple judge of answer sentences (shares no code with grounding/).

A sentence counts as supported when it cites at least one listed source and, for one of the cited
sources, every number it writes appears among that abstract's numbers and at least half of its
words (4+ letters, not stop words) occur in that abstract. A verdict line is not a claim about an
abstract and is left out of the count: a bare verdict ("Yes.", "No [1].") or one that only counts
the sources' stances ("No (3 of 3 studies) [1–3].", "Mixed evidence (1 yes [3], 2 no [1, 2]).",
"No clear answer (1 study, not plainly yes or no) [1]."). A lead that goes on to state a finding
("No (3 of 3 studies) [1–3]: Training did not improve fluid intelligence [1].") is scored on that
finding and ITS citations: the count before the colon is left out, the words after it are not.
A citation range ("[1–3]") cites each source in it (its digits are no numbers of the claim).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

WORD_SHARE = 0.5
_CITE = re.compile(r"\[\s*(\d+(?:\s*[,;–-]\s*\d+)*)\s*\]")
_RANGE = re.compile(r"(\d+)\s*[–-]\s*(\d+)")
_WORD = re.compile(r"[a-z][a-z-]{3,}")
_NUM = re.compile(r"(?<![\w.])\d+(?:\.\d+)?")
_STOP = frozenset(
    "that this these those with from were have been their there which than when where what "
    "into such also more most other only over under some both each very then them they will "
    "would could should about after before between among".split()
)
_VERDICT = re.compile(
    r"^(?:(?:yes|no|maybe)(?:\s*\(\d+ (?:of \d+ )?stud(?:y|ies)\))?"
    r"|mixed evidence \(\d+ yes \[[\d,\s–-]+\], \d+ no \[[\d,\s–-]+\]\)"
    r"|no clear answer \(\d+ stud(?:y|ies), not plainly yes or no\))"
    r"\s*(?:\[[\d,\s–-]+\])?\s*[.!]?$",
    re.IGNORECASE,
)
# "No (3 of 3 studies) [1–3]: " before a finding: the count, left out like a verdict line
_VERDICT_OPENING = re.compile(
    r"^(?:yes|no)\s*\(\d+ (?:of \d+ )?stud(?:y|ies)\)\s*(?:\[[\d,\s–-]+\])?\s*:\s*",
    re.IGNORECASE,
)
_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z\[])|(?<=\])\s+(?=[A-Z])")


def _num(raw: str) -> str:
    return raw.rstrip("0").rstrip(".") if "." in raw else raw


def sentences(answer: str) -> list[str]:
    """Answer sentences (a plain regex split) without bare verdicts; a lead's count before its
    finding is left out, the finding kept."""
    parts = [p.strip() for p in _SPLIT.split(answer.strip()) if p.strip()]
    return [_VERDICT_OPENING.sub("", p, count=1) for p in parts if not _VERDICT.match(p)]


def cites(sentence: str) -> list[int]:
    out: list[int] = []
    for m in _CITE.finditer(sentence):
        for part in re.split(r"\s*[,;]\s*", m.group(1)):
            r = _RANGE.fullmatch(part)
            out.extend(range(int(r.group(1)), int(r.group(2)) + 1) if r else [int(part)])
    return out


def supported(sentence: str, sources: Sequence[str]) -> bool:
    """``sources[i]`` is the text of source [i + 1]."""
    cited = [n for n in cites(sentence) if 1 <= n <= len(sources)]
    claim = _CITE.sub(" ", sentence).lower()
    words = {w for w in _WORD.findall(claim) if w not in _STOP}
    nums = {_num(n) for n in _NUM.findall(claim)}
    for n in cited:
        text = sources[n - 1].lower()
        src_words = set(_WORD.findall(text))
        src_nums = {_num(x) for x in _NUM.findall(text)}
        if not nums <= src_nums:
            continue
        if not words or len(words & src_words) / len(words) >= WORD_SHARE:
            return True
    return False


@dataclass(frozen=True)
class AnswerScore:
    sentences: int
    supported: int
    cites: bool

    @property
    def rate(self) -> float | None:
        return self.supported / self.sentences if self.sentences else None


def score_answer(answer: str, sources: Sequence[str]) -> AnswerScore:
    sents = sentences(answer)
    return AnswerScore(
        len(sents),
        sum(supported(s, sources) for s in sents),
        any(cites(s) for s in sents),
    )
