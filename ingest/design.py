"""Study design of an article, by transparent rules, keeping the rule that fired.

1. **Publication types** (PubMed's own indexing), where one names a design: Meta-Analysis,
   Systematic Review, Randomized Controlled Trial, Case Reports, Review (a narrative review unless
   its abstract says it is systematic), Editorial/Letter/Comment (other). "Journal Article",
   "Observational Study", "Clinical Trial" and funding types do not decide: the abstract does.
2. **The abstract's wording** (title + abstract), the first rule below that matches, in order.
   The intelligence corpus has no publication types, so most of its designs come from here.

Every result is a :class:`Design`: ``label`` (a key of :data:`DESIGNS`), ``source``
("publication type" or "abstract wording") and ``rule`` (the rule's name and the words that
matched), shown in the chat so a reader can check why an article was called an RCT.
``python -m app eval designs`` scores the wording rules against indexed labels.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ingest.models import Article

# label -> (badge text, strength for ``retrieval.prefer_design``: higher is stronger evidence)
DESIGNS: dict[str, tuple[str, int]] = {
    "meta_analysis": ("Meta-analysis", 6),
    "systematic_review": ("Systematic review", 5),
    "rct": ("RCT", 4),
    "cohort": ("Cohort", 3),
    "case_control": ("Case-control", 2),
    "cross_sectional": ("Cross-sectional", 2),
    "case_report": ("Case report/series", 0),
    "narrative_review": ("Narrative review", 1),
    "animal_in_vitro": ("Animal/in vitro", 0),
    "modelling": ("Modelling/AI development", 1),
    "other": ("Other", 1),
}

PUBLICATION_TYPE = "publication type"
WORDING = "abstract wording"

# A design set by the wording rules is shown only when those rules were right at least this
# often against NLM's labels (``python -m app eval designs``, docs/study-designs.md); the others,
# and "other", are shown as NOT_STATED. A publication type (NLM's own) is always shown.
PRECISION_BAR = 0.9
SHOWN_WORDING = frozenset({"cohort", "animal_in_vitro"})  # measured >= PRECISION_BAR
NOT_STATED = "design not stated"


@dataclass(frozen=True)
class Design:
    label: str
    source: str
    rule: str

    @property
    def badge(self) -> str:
        return DESIGNS[self.label][0]


def badge(label: str | None) -> str:
    return DESIGNS.get(label or "", ("", 0))[0]


def shown_badge(label: str | None, source: str = "", rule: str = "") -> str:
    """What the chat shows for a design: its badge when PubMed typed the article (or typed it
    a Review that says it is systematic) or when its wording rule is reliable (SHOWN_WORDING);
    NOT_STATED for a guess below the bar and for "other"; "" for an index without designs."""
    if not label:
        return ""
    if label == "other":
        return NOT_STATED
    if source == PUBLICATION_TYPE or rule.startswith("Review + ") or label in SHOWN_WORDING:
        return badge(label)
    return NOT_STATED


def strength(label: str | None) -> int:
    return DESIGNS.get(label or "", ("", 1))[1]


# Publication types that decide, in priority order (UIs are MeSH's; names also match MEDLINE text)
_TYPE_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("meta_analysis", ("Meta-Analysis",)),
    ("systematic_review", ("Systematic Review",)),
    ("rct", ("Randomized Controlled Trial", "Randomized Controlled Trial, Veterinary",
             "Pragmatic Clinical Trial", "Equivalence Trial")),
    ("case_report", ("Case Reports",)),
)
_OTHER_TYPES = ("Editorial", "Letter", "Comment", "News", "Published Erratum",
                "Retraction of Publication", "Practice Guideline", "Guideline")

_HUMAN = r"\b(?:patients?|participants?|children|adults?|adolescents?|women|men|infants?|" \
    r"volunteers?|subjects|students?|individuals|people|persons|twins|respondents|humans?|" \
    r"hospitali[sz]ed|pregnan\w*|mortality)\b"
_ANIMAL = r"\b(?:mice|mouse|rats?|murine|rodents?|zebrafish|drosophila|monkeys?|macaques?|" \
    r"primates?|pigs?|piglets?|dogs?|cats?|sheep|rabbits?|chickens?|honeybees?|bees|ants|fish|" \
    r"birds?|crows?|ravens?|parrots?|in vitro|cell lines?|cultured cells|animal models?)\b" \
    r"(?! (?:oils?|intake|consumption|scan|scans|scanning)\b)"

# (label, rule name, pattern, where): where is "title", "text" (title + abstract)
_WORDING_RULES: tuple[tuple[str, str, str, str], ...] = (
    ("meta_analysis", "meta-analysis in the title", r"\bmeta-?analy[sz]", "title"),
    ("meta_analysis", "the authors' own meta-analysis",
     r"\b(?:we|this|present|current|our)\b[^.]{0,60}\bmeta-?analy[sz]|\bmeta-?analy[sz]\w*\s+"
     r"(?:was|were)\s+(?:performed|conducted|carried out)|\bpooled (?:analysis|estimates?)\b",
     "text"),
    ("systematic_review", "systematic review in the title", r"\bsystematic(?:ally)? review",
     "title"),
    ("modelling", "an economic or decision model",
     r"\bcost[- ](?:effectiveness|utility|benefit|comparison|minimi[sz]ation) (?:analys[ie]s|"
     r"model(?:l?ing)?|evaluation)|\bcosts and benefits\b|\bmarkov model|\bdecision[- ]"
     r"(?:analytic(?:al)? |tree )?model|\beconomic (?:evaluation|model)|\bbudget impact",
     "text"),
    ("systematic_review", "a database search",
     r"\b(?:systematic(?:ally)? (?:review|search)\w*|(?:searched|search of|searches of)\b[^.]{0,80}"
     r"\b(?:pubmed|medline|embase|cochrane|web of science|psycinfo|scopus|cinahl))", "text"),
    ("animal_in_vitro", "animals or cells, no people", _ANIMAL, "text"),
    ("rct", "randomised in the title",
     r"(?<!non-)(?<!non)(?<!quasi-)\brandomi[sz]ed\b(?! (?:trials|studies)\b)", "title"),
    ("rct", "randomised trial wording",
     r"\brandomi[sz]ed[- ](?:controlled[- ]|clinical[- ]|placebo[- ]controlled[- ]|"
     r"double[- ]blind(?:ed)?[- ]|crossover[- ]|pilot[- ])?trial|\b(?:were|was) randomi[sz]ed\b|"
     r"\brandomly (?:assigned|allocated|divided)\b|\bdouble[- ]blind(?:ed)?\b", "text"),
    ("case_report", "a reported case",
     r"\bcase reports?\b|\bcase series\b|\bwe (?:report|present|describe)\s+(?:a|an|the|two|"
     r"three|four|\d+)\s+(?:[\w-]+\s+){0,4}?(?:cases?|patients?|boy|girl|man|woman|infant)\b|"
     r"^(?:a|an)\s+(?:\w+\s+){0,3}?case of\b", "text"),
    ("narrative_review", "review in the title", r"\b(?:review|overview)\b", "title"),
    ("modelling", "a model or algorithm developed",
     r"\b(?:machine learning|deep learning|neural networks?|artificial intelligence|"
     r"reinforcement learning|computational model|simulations?|we (?:propose|develop|present|"
     r"introduce) (?:a|an)\s+(?:\w+\s+){0,3}?(?:model|method|algorithm|framework|approach|"
     r"system|architecture))\b", "text"),
    ("case_control", "cases and controls",
     r"\bcase[- ]control\b|\b(?:matched|healthy|normal) controls?\b|"
     r"\bcases and (?:\w+\s+){0,2}controls\b", "text"),
    ("cross_sectional", "cross-sectional wording",
     r"\bcross[- ]sectional\b|\bsurvey(?:ed)?\b|\bquestionnaires? (?:was|were) (?:sent|"
     r"administered|distributed)", "text"),
    ("cohort", "cohort or follow-up wording",
     r"\bcohort\b|\bprospective(?:ly)?\b|\bretrospective(?:ly)?\b|\blongitudinal(?:ly)?\b|"
     r"\b(?:at|during|after|median|mean|long[- ]term|\d+[- ](?:years?|months?|weeks?))[- ]"
     r"follow(?:ed)?[- ]up\b|\bfollow(?:ed)?[- ]up (?:period|visits?|of \d|at \d|assessments?|"
     r"examinations?|duration|time|interval|study|studies|data)\b|\bchart review|"
     r"\breviewed\b[^.]{0,40}\b(?:records|charts|"
     r"files|notes)\b|\brecords of\b[^.]{0,30}\bpatients\b|"
     r"\bfollowed\b[^.]{0,40}\b(?:years?|months?)\b|\bregistry\b", "text"),
    ("narrative_review", "a review's wording",
     r"\b(?:this|the present|our)\s+(?:\w+\s+)?"
     r"(?:review|article|chapter|paper)\s+(?:summari[sz]es|discusses|describes|examines|"
     r"considers|outlines|highlights|provides)|\bwe review\b|\bis reviewed\b", "text"),
)
# A rule that also needs this wording to fire: an AI term alone is often a review or comment on
# AI; a development study reports building a model or how well it performs.
_ALSO = {
    "modelling": re.compile(
        r"\b(?:we|this (?:study|paper|work|article))\b[^.]{0,80}\b(?:propose[sd]?|develop(?:ed|s)?|"
        r"present(?:ed|s)?|introduce[sd]?|train(?:ed|s)?|design(?:ed|s)?|buil[dt]|implement(?:ed|s)?|"
        r"construct(?:ed|s)?)\b|\b(?:was|were) (?:trained|developed|validated|built)\b|"
        r"\baccuracy\b|\bAUC\b|\barea under\b|\bsensitivity\b|\bF1\b|\bsimulat", re.IGNORECASE),
}
# A rule that does not fire when this wording is there too: an analysis of a trial's data in an
# observational design (a secondary or post-hoc analysis) is not itself the trial; a review
# rule's database search inside an economic model is the model's input, not a review.
_NOT = {
    "rct": re.compile(
        r"\bobservational\b|\b(?:secondary|post[- ]hoc|ancillary|exploratory) analys[ie]s\b|"
        r"\boriginally (?:a|an)\b|\b(?:data|participants|children|patients) (?:from|of|in) "
        r"(?:a|an|the) (?:\w+ ){0,3}randomi[sz]ed", re.IGNORECASE),
}
_COMPILED = tuple((lab, name, re.compile(pat, re.IGNORECASE), where)
                  for lab, name, pat, where in _WORDING_RULES)
_HUMAN_RE = re.compile(_HUMAN, re.IGNORECASE)


def classify(article: Article) -> Design:
    """The article's design: its publication types when they decide, else its wording."""
    names = {p.name for p in article.publication_types}
    for label, types in _TYPE_RULES:
        hit = next((t for t in types if t in names), None)
        if hit:
            return Design(label, PUBLICATION_TYPE, hit)
    if "Review" in names:
        found = classify_text(article.title, article.abstract)
        if found.label in ("systematic_review", "meta_analysis"):
            return Design(found.label, WORDING, f"Review + {found.rule}")
        return Design("narrative_review", PUBLICATION_TYPE, "Review")
    hit = next((t for t in _OTHER_TYPES if t in names), None)
    if hit:
        return Design("other", PUBLICATION_TYPE, hit)
    return classify_text(article.title, article.abstract)


def classify_text(title: str, abstract: str) -> Design:
    """The first wording rule that matches ``title``/``abstract``; ``other`` when none does."""
    text = f"{title}\n{abstract}"
    for label, name, pattern, where in _COMPILED:
        match = pattern.search(title if where == "title" else text)
        if match is not None and label == "animal_in_vitro":  # "CAT" is a scan, not a cat
            match = next((m for m in pattern.finditer(text) if not m.group(0).isupper()), None)
        if match is None:
            continue
        if label == "animal_in_vitro" and _HUMAN_RE.search(text):
            continue  # people were studied too
        if label in _ALSO and not _ALSO[label].search(text):
            continue
        if where == "text" and label in _NOT and _NOT[label].search(text):
            continue  # the title's own wording still decides
        return Design(label, WORDING, f'{name}: "{_snippet(match)}"')
    return Design("other", WORDING, "no design wording")


def current_design(label: str | None, source: str, rule: str, title: str,
                   abstract: str) -> Design | None:
    """The design as today's rules give it: a design the wording rules set when the index was
    built is set again from the article's title and whole ``abstract`` (an index built before a
    rule change keeps its old guesses until it is rebuilt); a publication type, a PubMed
    Review's wording and an index without designs (``label`` None) are kept as stored."""
    if not label:
        return None
    if source != WORDING or rule.startswith("Review + ") or not abstract.strip():
        return Design(label, source, rule)
    return classify_text(title, abstract)


def _snippet(match: re.Match[str]) -> str:
    return " ".join(match.group(0).split())[:60]


def humans_flag(article: Article, label: str) -> bool | None:
    """True: people were studied (MeSH "Humans", or a human design); False: animals or cells
    only (MeSH "Animals" without "Humans", or the animal/in-vitro design); None: unknown."""
    mesh = set(article.mesh_terms)
    if "Humans" in mesh:
        return True
    if "Animals" in mesh or label == "animal_in_vitro":
        return False
    return True if _HUMAN_RE.search(f"{article.title}\n{article.abstract}") else None
