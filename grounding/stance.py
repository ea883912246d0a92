"""Stance per source: does this abstract's evidence say yes, no, or neither to the question?

Transparent rules over the abstract's own conclusion (its labelled conclusion, else its last
sentences) and its key findings, scoped to the question:

- a **null finding** or negated result ("did not improve", "no significant difference", "was not
  associated", "similar to", "failed to") says *no*;
- an **affirmative finding** ("was associated with", "improved", "predicted", "significantly
  higher") says *yes*;
- wording that only looks negative says *yes* when the rest is affirmative: "cannot be explained
  by", "regardless of", "independently of", "over and above", "not only";
- a finding "not explained by" something (:data:`EXPLAINED_AWAY`: "the association was not
  explained by SES") holds that something constant and states the finding, unless the question
  asks what explains it;
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
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Literal

from grounding.concepts import Concept, stems_of, words_of
from grounding.harms import STEMS as HARM_STEMS
from grounding.sameness import DIFFERENCE_FOUND, SAMENESS_FOUND, asks_sameness
from grounding.sources import SourceText
from indexing.stems import stem
from indexing.tokenize import STOPWORDS
from indexing.word_classes import word_classes
from ingest.ages import GROWN, YOUNG, other_age_group
from ingest.sentences import Sentence

Stance = Literal["yes", "no", "unclear"]


def _rx(*alternatives: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(alternatives) + r")\b", re.IGNORECASE)


# Negative-looking wording that reports a robust positive result: removed before cues are read.
AFFIRMING_NEGATIONS = _rx(
    r"cannot (?:be )?(?:fully |entirely |solely |simply )?(?:explained|accounted for|attributed)",
    r"could not (?:be )?(?:fully |entirely )?(?:explained|accounted for|attributed)",
    r"regardless of", r"irrespective of", r"independent(?:ly)? of", r"over and above",
    r"above and beyond", r"not only", r"not just", r"not merely", r"no less than",
    r"even after (?:controlling|adjusting|accounting)", r"not (?:limited|confined|restricted) to",
    # "comparable to or higher than": at least as much, a finding of its own
    r"(?:similar|comparable|equal|equivalent) (?:to |with )?or (?:higher|greater|better|larger|"
    r"stronger|more \w+) than",
    r"as (?:\w+ )as or (?:higher|greater|better|larger|stronger|more \w+) than",
    r"not (?:been )?(?:previously )?(?:reported|described|known|studied|investigated|examined)",
    r"without compromising", r"without (?:loss|impairment|affecting)",
)  # fmt: skip

# A negation that only defines who was studied ("than those WHO HAD NOT RECEIVED radiotherapy",
# "women who did not exercise"), a condition ("IF a graft CANNOT BE found in time") or what else
# was not found ("NO OTHER differential improvements were observed, suggesting that ...") states
# no finding about the relation: removed before cues are read.
NON_FINDING_NEGATIONS = re.compile(
    r"\b(?:who|whom)\s+(?:had|have|has|did|do|does|was|were|is|are|could|can|would)\s*(?:not|n't)"
    r"\s+(?:\w+)|\b(?:who|whom)\s+(?:cannot|can't|never)\s+\w+|"
    r"\b(?:if|unless)\s+(?:[\w-]+\s+){1,8}?(?:is|are|was|were|do|does|did|can|could)\s*(?:not|n't)"
    r"\s+\w+|\b(?:if|unless)\s+(?:[\w-]+\s+){1,8}?cannot\s+\w+"
    # "NO OTHER differential improvements were observed": nothing besides the finding stated
    r"|\bno\s+other\b",
    re.IGNORECASE,
)

# "..., but not in X": the negation is about X alone (up to four words; a scope the question may
# not ask about).
SCOPED_NOT = re.compile(
    r"(?:,?\s*\b(?:but|and|yet|though)\s+not\b|\(\s*not\b|,\s*not\b)\s*(?:(?:in|for|with|among|on|of|"
    r"by|to|at|during)\b)?\s*((?:(?!(?:or|nor)\b)[\w'-]+ ?){1,4}"
    # a coordinated list is negated as a whole ("but not technical innovation rate OR BRAIN SIZE")
    r"(?:,?\s*(?:or|nor)\s+(?:(?!(?:or|nor)\b)[\w'-]+ ?){1,4})*)",
    re.IGNORECASE,
)
# What a sentence holds constant ("... predicted Y after ADJUSTING FOR Z", "X predicted Y
# INDEPENDENT OF Z") is a covariate, no side of its relation: a sentence that names a concept
# of the question only there states another relation.
COVARIATE = re.compile(
    r"\b(?:after\s+|when\s+|while\s+)?(?:controll?ing|adjusting|accounting|correcting)\s+for"
    r"\s+[^,;:.()]+|\b(?:adjusted|controlled|corrected)\s+for\s+[^,;:.()]+"
    r"|\b(?:after|with|following)\s+(?:statistical\s+)?adjustment\s+for\s+[^,;:.()]+"
    r"|\b(?:independent(?:ly)?\s+of|regardless\s+of|irrespective\s+of|over\s+and\s+above"
    r"|above\s+and\s+beyond)\s+[^,;:.()]+"
    r"|\b(?:even\s+)?(?:when|after|once|with)\s+(?:[\w'-]+\s+){1,8}?(?:was|were|is|are)\s+"
    r"(?:held\s+constant|(?:statistically\s+)?controlled(?:\s+for)?|adjusted(?:\s+for)?"
    r"|accounted\s+for|taken\s+into\s+account|partiall?ed\s+out)",
    re.IGNORECASE,
)
# A finding that something does not explain ("The ASSOCIATIONS between intelligence and biological
# age WERE NOT EXPLAINED BY differences in childhood health or parental SES", "these effects were
# not attributable to ..."): the negation rules out an alternative explanation, so it affirms the
# finding, and what follows is held constant like a covariate. Its subject must name a finding;
# "Fatigue is not due to fibromyalgia" (and "The results show that fatigue is not due to ...")
# denies a relation and is read as written. The group
# "away" is the span set aside; "not only due to X but also Y" is no such phrase.
EXPLAINED_AWAY = re.compile(
    r"\b(?:associations?|relationships?|relations?|links?|correlations?|effects?|differences?"
    r"|gaps?|disparit(?:y|ies)|findings?|results?|benefits?|advantages?|deficits?|impairments?"
    r"|improvements?|gains?)\b"
    # ... up to the negated verb, in the same clause: "the results SHOW THAT fatigue is not due
    # to X" denies a relation of fatigue, the clause after "that"
    r"(?:(?!\b(?:that|shows?|showed|shown|indicat\w*|suggest\w*|demonstrat\w*|reveal\w*"
    r"|confirm\w*)\b)[^.;:]){0,150}?(?P<away>\b(?:was|were|is|are|be|been)\s+not\s+"
    r"(?:(?:fully|entirely|solely|completely|wholly|simply|primarily|mainly|largely|"
    r"consistently)\s+)?(?:explained|accounted\s+for|attributable|attributed|due|driven"
    r"|confounded)\s+(?:by|to)\s+[^,;:.()]+)",
    re.IGNORECASE,
)
# A question about what explains or causes something: there, "not explained by X" answers it.
ASKS_EXPLANATION = _rx(
    r"explain\w*", r"due to", r"caus\w*", r"driven by", r"attribut\w*", r"accounts? for",
    r"confound\w*", r"because of", r"mediat\w*", r"result of",
)  # fmt: skip


# A question about a relation holding on its own, other factors aside, and a finding that it
# does not: what it is "secondary to", "explained by", "mediated by" (negated, "not explained
# by" is :data:`EXPLAINED_AWAY`, which affirms it)
ASKS_INDEPENDENCE = _rx(r"independent(?:ly)?", r"independent of", r"in (?:its|their) own right")
EXPLAINED_BY_ANOTHER = re.compile(
    r"\b(?:is|was|are|were|be|been)\s+(?!not\b)(?:\w+\s+){0,2}?(?:secondary\s+to|"
    r"(?:explained|mediated|confounded)\s+by|attributable\s+to|accounted\s+for\s+by)\b",
    re.IGNORECASE,
)


# A predictor-of-response finding: what predicts or moderates the outcome OF a treatment or
# exposure ("The clinical outcome of stimulant medication was best predicted by EEG parameters",
# "predictors of response to methylphenidate"). The treatment sits in the outcome's place; the
# sentence says who responds, not whether the treatment works.
PREDICTS_RESPONSE = _rx(
    r"(?:outcomes?|responses?|responsiveness|improvements?|efficacy|effectiveness|benefits?|"
    r"effects?|success) (?:of|to) (?:[\w-]+ ){1,6}(?:was|were|is|are|can be|could be|may be|"
    r"might be) (?:\w+ ){0,2}(?:predicted|moderated|determined) by",
    r"(?:predictors?|moderators?|determinants?) of (?:the )?(?:\w+ ){0,2}(?:response|"
    r"responsiveness|treatment outcomes?|efficacy|effectiveness)",
    r"predict\w* (?:the |a |better |poorer |greater |good |poor )?(?:\w+ )?(?:response|"
    r"responsiveness|outcomes?) (?:to|of)",
)  # fmt: skip
# A question about who responds or what predicts or moderates an outcome: there a
# PREDICTS_RESPONSE sentence answers it.
ASKS_PREDICTION = _rx(r"predict\w*", r"moderat\w*", r"respon(?:d|ds|ders?|se)",
                      r"who (?:benefits?|improves?)")


def _away_spans(text: str) -> list[tuple[int, int]]:
    return [m.span("away") for m in EXPLAINED_AWAY.finditer(text)]


def without_explained_away(text: str, asks_explanation: bool) -> str:
    """``text`` with its :data:`EXPLAINED_AWAY` phrases set aside, unless the question asks what
    explains something (:data:`ASKS_EXPLANATION`)."""
    return text if asks_explanation else _cut(text, _away_spans(text))


def _merged(spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans sorted, overlapping ones joined."""
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _cut(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """``text`` without the (sorted, disjoint) ``spans``."""
    for a, b in reversed(spans):
        text = text[:a] + " " + text[b:]
    return text


# Where a negated list's items part ("but not X, Y or Z"): each item's first word is checked
_LIST_ITEM_BREAK = re.compile(r",|\b(?:or|nor)\b", re.IGNORECASE)

NULL_FINDING = _rx(
    r"no (?:[\w-]+ ){0,2}?(?:increased|higher|greater|elevated|excess|additional|heightened|"
    r"decreased|lower|reduced|poorer|worse|better) (?:[\w-]+ ){0,2}?(?:risks?|odds|rates?|"
    r"likelihood|prevalence|incidence|levels?|scores?|performance|frequency|chances?)",
    r"not (?:at |an? )?(?:increased|higher|greater|elevated) (?:[\w-]+ )?risk",
    r"without (?:an? )?(?:\w+ )?(?:increased|enhanced|higher|greater|elevated) risk",
    r"(?:was|were|is|are|seems?|appears?) (?:\w+ )?unlikely to",
    r"not (?:\w+ )?(?:useful|necessary|needed|required|helpful|beneficial|valuable|essential|"
    r"justified|warranted|indicated|advantageous|worthwhile)",
    r"no (?:\w+ )?(?:additional|added|incremental|further|clinical|prognostic|diagnostic) "
    r"(?:value|benefit|role|advantage)",
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
    # it does not do what was asked well enough ("have limited ability to risk-stratify
    # patients", "lacks the necessary sensitivity", "has a limited role in hepatic staging")
    r"(?:limited|poor|little) (?:ability|capacity) to",
    r"lack(?:s|ed)? (?:the )?(?:necessary |sufficient |adequate |required )?(?:sensitivity|"
    r"specificity|accuracy|ability|power) ",
    r"(?:only )?an? (?:limited|minor|minimal|marginal) role",
)  # fmt: skip

# Not enough for the task ("insufficient for predicting prognosis"), and a test that does not
# tell cases apart ("has a poor specificity for cortisol excess"): a "no" in the rules, kept out
# of the stance classifier's cues (a new cue there moves its probabilities without a refit: a
# plain "can change learners' attitudes" fell below the verdict bar). A measure the question
# itself names is a trait, not a test's failing ("low maternal SENSITIVITY was related to ...").
NOT_ENOUGH = _rx(r"(?:insufficient|inadequate) (?:for|to)")
POOR_MEASURE = re.compile(
    r"\b(?:poor|low|limited) (?:diagnostic )?(?P<measure>sensitivity|specificity|accuracy|"
    r"reliability|validity|(?:positive |negative )?predictive (?:value|power|ability))\b",
    re.IGNORECASE,
)
# A relation denied in words the classifier was not fitted on either: what "is an unlikely
# explanation" of the outcome, an outcome "not dependent on" the exposure ("imitation of alcohol
# consumption is a robust phenomenon not dependent on individual stress levels")
DENIED_RELATION = _rx(
    r"(?:an? )?unlikely (?:explanation|cause|reason|source|mechanism|contributor)",
    r"not (?:\w+ )?(?:dependent|contingent) (?:on|upon)",
)


def _rule_only_null(body: str, question_stems: set[str]) -> str:
    """The wording by which ``body`` says something is not good enough for what is asked
    (:data:`NOT_ENOUGH`, :data:`POOR_MEASURE`) or denies a relation (:data:`DENIED_RELATION`),
    "" when it says none."""
    found = NOT_ENOUGH.search(body) or DENIED_RELATION.search(body)
    if found is not None:
        return found.group(0)
    for m in POOR_MEASURE.finditer(body):
        if not stems_of(m.group("measure")) & question_stems:
            return m.group(0)
    return ""


# An evaluation a question asks ("are radiologists SATISFIED with ...", "is it SAFE", "an
# ACCURATE test") and its negative-prefixed form in a sentence ("significant DISSATISFACTION",
# "unsafe", "inaccurate"): the sentence denies the evaluation. Only evaluations: the prefixed form
# of a thing studied is another exposure ("physical INACTIVITY", "UNEMPLOYMENT"), not a denial.
_EVALUATIONS = ("satisf", "success", "effective", "efficien", "safe", "accura", "appropriat",
                "adequa", "reliab", "valid", "feasib", "sufficien", "favorab", "favourab",
                "acceptab", "comfortab", "practical", "correct", "complete")  # fmt: skip
_NEGATED_EVALUATION = re.compile(
    r"\b(?:dis|un|in|im|non-?)(?P<base>(?:" + "|".join(_EVALUATIONS) + r")\w*)", re.IGNORECASE
)
_EVALUATION = re.compile(r"\b(?:" + "|".join(_EVALUATIONS) + r")\w*", re.IGNORECASE)

# a noun names the evaluation as a topic ("attitudes towards patient SAFETY", "SATISFACTION was
# measured"); an adjective or participle states it ("safe", "satisfied", "successful")
_EVALUATION_NOUN = re.compile(r"(?:ty|ness|ion|cy|ance|ence|ss)$", re.IGNORECASE)


def _stated_evaluation(body: str, question_stems: set[str]) -> str:
    """The evaluation the question asks, stated in ``body`` in the question's own form of it
    ("patients were SATISFIED", asked "are patients satisfied ...?"), "" when there is none: a
    noun only names it ("satisfaction was measured", "attitudes towards patient safety")."""
    for m in _EVALUATION.finditer(body):
        word = m.group(0)
        if not _EVALUATION_NOUN.search(word) and stem(word.lower()) in question_stems:
            return word
    return ""


def _denied_evaluation(body: str, question_stems: set[str]) -> str:
    """The negative-prefixed form in ``body`` of an evaluation the question asks
    (:data:`_EVALUATIONS`), "" when there is none."""
    for m in _NEGATED_EVALUATION.finditer(body):
        base = stem(m.group("base").lower())
        if any(q[:5] == base[:5] for q in question_stems if len(q) >= 4):
            return m.group(0)
    return ""

AFFIRMATIVE = _rx(
    r"significant(?:ly)?", r"associated with", r"linked to", r"related to", r"correlated with",
    r"predict\w*", r"improv\w+", r"increas\w+", r"decreas\w+", r"reduc\w+", r"lower\w*",
    r"higher", r"greater", r"better", r"worse", r"poorer", r"superior", r"enhanc\w+",
    r"effective(?:ly|ness)?", r"efficacious", r"benefi\w+", r"risk factor", r"explain\w*",
    r"contribut\w+", r"led to", r"lead to", r"leads to",
    # "X results in Y", not the noun ("these results in the context of ...")
    r"(?<!the )(?<!these )(?<!those )(?<!our )(?<!their )(?<!its )(?<!such )(?<!study )"
    r"result(?:s|ed)? in", r"caus\w+",
    r"restor\w+", r"sustained", r"maintained", r"preserv\w+", r"achiev\w+", r"showed", r"shows",
    r"demonstrat\w+", r"confirm\w*", r"support\w*", r"promising", r"marked", r"substantial",
    r"strong(?:ly)?", r"robust", r"elevated", r"impair\w+", r"deficits?", r"declin\w+",
    r"more likely", r"less likely", r"increased risk", r"protect\w+",
    # "positive" and "negative" state a finding only of a relation ("negatively associated", "a
    # positive effect"); alone they name other things ("negative emotions", "HIV-negative",
    # "negative symptoms"), and "negative results" is a null finding
    r"(?:positive|negative)(?:ly)? (?:[\w-]+ )?(?:associat\w+|correlat\w+|relat\w+|link\w*|"
    r"predict\w+|effects?|impacts?|influenc\w+|affect\w*)",
    r"(?:associat\w+|correlat\w+|relat\w+|linked|predict\w+) (?:\w+ )?(?:positive|negative)ly",
    r"mediat\w+", r"moderat\w+", r"influenc\w+",
    r"affect(?:s|ed|ing)?",  # the verb: "affective disorders" names an illness, not an effect
    r"help(?:s|ed)?", r"helpful",
)  # fmt: skip
# A relation named as a noun and reported found ("An association was found between X and Y",
# "We identified a significant correlation between ..."): a yes in the rules. "No association
# was found" is a null finding, and a negation left in the clause keeps it from reading yes
# (_guarded). Not one of the stance classifier's cues: it was fitted on AFFIRMATIVE's, and a new
# cue counted there moves its probabilities without a refit (seen: a subgroup trap's weak "yes"
# became a shown one).
FOUND_RELATION = _rx(
    # a role found ("Cancellous bone plays an important role in primary stability"); "no role",
    # "a limited role" are null findings (NULL_FINDING)
    r"(?:plays?|played|playing|has|have|had) (?:an? |the )?(?:\w+ )?role in",
    r"(?:associations?|relationships?|correlations?|links?) [^.;:]{0,80}?(?:was|were|has been|"
    r"have been) (?:\w+ )?(?:found|observed|identified|detected|seen|noted)",
    r"(?:found|observed|identified|detected|noted) (?:an? |the )?(?:[\w-]+ )?(?:associations?|"
    r"relationships?|correlations?|links?) (?:between|of|with)",
)  # fmt: skip

DOUBT = _rx(
    r"unclear", r"uncertain", r"inconclusive", r"inconsistent", r"conflicting", r"mixed (?:results|"
    r"findings|evidence)", r"remains? (?:to be|unknown|unclear|controversial)", r"controversial",
    r"not clear", r"questionable", r"cannot be (?:excluded|ruled out|determined|concluded)",
    r"insufficient evidence", r"limited evidence",
    # the evidence itself is said to be missing ("a lack of quality evidence of the effect")
    r"(?:lack|absence|paucity|dearth|shortage) of (?:[\w-]+ ){0,2}evidence",
    r"(?:little|scant|sparse|scarce) (?:[\w-]+ )?evidence",
    r"further (?:\w+ ){0,2}(?:needed|required|warranted)", r"(?:is|are) needed to",
)  # fmt: skip

HEDGE = _rx(
    r"may", r"might", r"could", r"possibly", r"possible", r"potential(?:ly)?", r"appears?",
    r"seems?", r"suggest\w*", r"trend\w*", r"likely", r"perhaps", r"tend\w*",
)  # fmt: skip

# A strong null finding: the plain statement that something was not found.
STRONG_NULL = _rx(
    r"no (?:increased|higher|greater|elevated|excess) (?:[\w-]+ ){0,2}?(?:risks?|odds|rates?|"
    r"likelihood|prevalence|incidence)",
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
# A recommendation, an aim or future work states no finding: such a sentence never decides
# ("we must develop integrated care packages", "future studies should ...", "is needed").
RECOMMENDATION = _rx(
    r"(?:we|clinicians|physicians|practitioners|researchers|policy ?makers|governments?|"
    r"programs?|programmes?|interventions?|efforts?|studies|research|work|trials?|schools?|"
    r"parents|services|there) (?:\w+ )?(?:must|should|need to|needs to|ought to|have to|has to)",
    r"(?:should|must|ought to) (?:also )?(?:be|include|consider|focus|target|take|receive|"
    r"address|aim|prioriti[sz]e|develop|promote|encourage)",
    r"(?:future|further|more|additional|larger|longitudinal|prospective) (?:\w+ )?(?:research|"
    r"studies|study|work|trials?|RCTs?|investigations?|efforts?|examination)",
    # the research agenda: whether studies can or should be run ("conduct of such RCTs may not
    # be feasible"), not what a study found
    r"(?:conduct|conducting|performing|undertaking) (?:of )?(?:such |further |new |future |more "
    r"|additional |larger |these )?(?:[\w-]+ )?(?:RCTs?|trials?|studies|research)",
    r"(?:RCTs?|trials?|studies) (?:[\w-]+ ){0,3}(?:may|might|would|could|will)(?: not)? be "
    r"(?:feasible|infeasible|unfeasible|impractical|unethical|difficult)",
    # future work named at length ("future working memory training studies")
    r"future (?:[\w-]+ ){0,4}(?:research|studies|study|work|trials?|investigations?)",
    # the paper's own discussion, not a finding ("We discuss these results in the context ...")
    r"(?:we|this (?:paper|article|review|chapter)) (?:discuss|outline|"
    r"summari[sz]e|introduce|focus)\w*",
    # what the authors tried or meant to do ("We tried to analyze the advantages ...")
    r"(?:we|this (?:paper|article|review|chapter)) (?:tried|attempted|aims?) to",
    # an objective written as an infinitive ("To examine the attitudes of players ...")
    r"^to (?:examine|assess|determine|investigate|evaluate|compare|explore|identify|test|"
    r"establish|estimate|analy[sz]e|describe)",
    r"(?:is|are|remains?|will be) (?:urgently |still |therefore |thus |clearly )?(?:needed|"
    r"warranted|required|necessary|recommended|indicated)",
    r"it is (?:therefore |thus )?(?:important|essential|necessary|crucial|imperative|vital|"
    r"advisable|recommended) (?:to|that)",
    r"recommend\w*", r"(?:we|this study) (?:aimed|aim|sought|set out|hypothesi[sz]ed)",
    # a need pointed out ("This study demonstrates THE NEED TO further educate physicians",
    # "highlights the need for ..."): what should be done, not what was found; a need changed
    # is a finding ("reduced the need for ventilation")
    r"(?:demonstrat|highlight|underscor|underlin|emphasi[sz]|stress|illustrat|point|reinforc"
    r"|indicat|suggest|show|confirm|reveal)\w* (?:to )?(?:the |a |an )?(?:urgent |clear |"
    r"continued |continuing |ongoing |further |great |strong |critical |pressing |important )?"
    r"needs? (?:to|for)",
    # what is left to study ("The relative importance of ... needs to be studied")
    r"(?:needs?|deserves?|merits?|warrants?) (?:to be )?(?:further |more |additional |better )?"
    r"(?:studied|investigated|explored|examined|evaluated|researched)",
    r"(?:the )?(?:aim|objective|purpose|goal) (?:of|was|is)",
    # a prospect, what something may turn into ("... could become a very helpful information
    # system"), not a finding; a change of state ("patients may become dependent") still is one
    r"(?:could|may|might|will|would|can) (?:\w+ )?become (?:a|an|the|that|one)\b",
)  # fmt: skip
# What a study did, not what it found: an analysis or instrument "was used to" do something
# ("Multiple logistic regression was used to identify the elements ... for predicting
# aspiration"). Never decides a stance (:meth:`Relation.no_finding`).
METHOD_STATEMENT = _rx(
    r"(?:was|were) (?:then |also |further |subsequently )?used to (?:identify|assess|determine|"
    r"examine|evaluate|compare|estimate|analy[sz]e|test|model|investigate|explore|calculate|"
    r"measure|predict|adjust|control|quantify|characteri[sz]e|classify|select|detect)",
)  # fmt: skip
# What earlier work reported, not what this study found: a present-perfect passive of a
# reporting verb ("Haploinsufficiency of HDAC4 HAS BEEN REPORTED TO result in ...") or earlier
# studies as the subject ("some PREVIOUS STUDIES may have failed to uncover the effect"). Such a
# sentence is the abstract's background wherever it stands, and never decides a stance
# (:meth:`Relation.no_finding`).
PRIOR_WORK = _rx(
    r"(?:has|have) (?:\w+ )?been (?:previously |widely |repeatedly |frequently |often |"
    r"commonly |generally |recently |consistently )?(?:reported|suggested|proposed|"
    r"hypothesi[sz]ed|postulated|documented|described|implicated|thought|believed|assumed|"
    r"claimed|speculated)",
    r"(?:previous|prior|earlier|past|existing|other|some) (?:[\w-]+ )?(?:studies|research|"
    r"reports|work|literature|trials|investigations|findings) (?:\w+ ){0,3}?(?:have|has|had) "
    r"(?:\w+ )?(?:shown|found|reported|suggested|failed|demonstrated|indicated|observed)",
    r"(?:is|are) (?:well )?known to", r"it is (?:well )?(?:known|established) that",
)  # fmt: skip
# The names of a diagnostic test's accuracy measures: "positive predictive value" reports how
# often a positive result is right, not that anything predicts the outcome. A sentence giving
# such figures ("a sensitivity of 47%, ... positive predictive value (PPV) of 50%") says how
# well the test does: an evaluation of them (NULL_FINDING's "lacks the necessary
# sensitivity", POOR_MEASURE's "poor specificity") or their size (:func:`accuracy_stance`)
# takes a side, never the measure's name.
ACCURACY_MEASURE = _rx(r"(?:positive|negative) predictive values?")
# ... but the figures themselves answer whether the test can do it: a test that misses or
# mislabels 40% or more of what it is for (a reported figure below LOW_ACCURACY) cannot be said
# to detect, predict or exclude it; one whose every reported figure is HIGH_ACCURACY or more
# can; between the two, the figures alone take no side. A figure is the percentage (or the
# area under the curve, as a fraction) written right after a measure's name, never a
# confidence interval's "95%".
_MEASURE_NAME = (r"(?:sensitivit(?:y|ies)|specificit(?:y|ies)|(?:positive|negative) predictive "
                 r"values?|PPVs?|NPVs?|(?:diagnostic |overall |predictive )?accuracy)")
ACCURACY_FIGURE = re.compile(
    r"\b" + _MEASURE_NAME + r"\b[^.;%,]{0,150}?(?<![\d.])(\d{1,3}(?:\.\d+)?)\s?%"
    r"(?!\s*(?:CI|confidence))"
    r"|\b(?:AUCs?|AUROCs?|area under the (?:[\w-]+ ){0,4}curves?)\b[^;%]{0,30}?"
    r"(?<![\d.])(0?\.\d+|1\.0+)\b",
    re.IGNORECASE,
)
LOW_ACCURACY = 60.0
HIGH_ACCURACY = 80.0


def accuracy_stance(body: str) -> SentenceStance | None:
    """What a test's reported accuracy figures in ``body`` say of whether it can do what it is
    for (:data:`ACCURACY_FIGURE`); None when the sentence reports none."""
    figures = [float(pct) if pct else 100 * float(auc)
               for pct, auc in ACCURACY_FIGURE.findall(body)]  # fmt: skip
    figures = [f for f in figures if 0 < f <= 100]
    if not figures:
        return None
    if min(figures) < LOW_ACCURACY:
        return SentenceStance("no", PLAIN, f"an accuracy of {min(figures):g}%")
    if min(figures) >= HIGH_ACCURACY:
        return SentenceStance("yes", PLAIN, f"an accuracy of {min(figures):g}% or more")
    return SentenceStance(None, 0.0, "")
# Where a sentence's clauses part: each clause may state a different relation ("X was not
# related to Y, but Z predicted W"); only a clause stating the question's relation decides.
CLAUSE_BREAK = re.compile(
    r";|:\s|,?\s+\b(?:but|whereas|while|although|though|however|yet|in contrast|unlike)\b"
    r"|,\s+(?:and|which|whereas|with)\b",
    re.IGNORECASE,
)
# The word of a question that relates its exposure to its outcome ("Does X IMPROVE Y?").
RELATION_WORD = _rx(
    r"associated", r"related", r"linked", r"correlated", r"tied", r"connected", r"predict\w*",
    r"improv\w*", r"increas\w*", r"reduc\w*", r"decreas\w*", r"rais\w*", r"lower\w*",
    r"affect\w*", r"influenc\w*", r"impair\w*", r"enhanc\w*", r"boost\w*", r"protect\w*",
    r"prevent\w*", r"caus\w*", r"lead to", r"leads to", r"explain\w*", r"mediat\w*",
    r"moderat\w*", r"benefit\w*", r"help\w*", r"hurt\w*", r"harm\w*", r"worsen\w*",
    r"alter\w*", r"change\w*", r"differ\w*", r"higher", r"greater", r"more", r"less",
    r"better", r"worse", r"risk", r"effect", r"impact\w*",
)  # fmt: skip
# Populations a finding may be scoped to; a clause about one the question does not ask about
# ("... in women", asked "in men") decides nothing.
POPULATIONS: tuple[frozenset[str], ...] = (
    frozenset({"men", "man", "male", "males", "boys", "boy"}),
    frozenset({"women", "woman", "female", "females", "girls", "girl"}),
)
# A finding scoped to one population alone ("..., but only in women", "restricted to boys"): it
# says the relation does not hold in the group it leaves out.
_GROUP_WORD = "|".join(sorted((w for g in POPULATIONS for w in g), key=len, reverse=True))
ONLY_IN = re.compile(
    rf"\b(?:only|solely|exclusively)\s+(?:in|among|for)\s+(?:the\s+)?(?:{_GROUP_WORD})\b"
    rf"|\b(?:restricted|limited|confined)\s+to\s+(?:the\s+)?(?:{_GROUP_WORD})\b",
    re.IGNORECASE,
)
# the stems of every word that names a group (who a finding is about, not what)
_GROUP_STEMS = frozenset(stem(w) for g in (YOUNG, GROWN, *POPULATIONS) for w in g)
# Feature names of the stance classifier, in its stored order.
STANCE_FEATURES: tuple[str, ...] = (
    "strong_null", "null", "null_near_question", "doubt", "affirmative", "affirm_near_question",
    "hedge", "equivalence_x_compares", "equivalence_x_other", "affirming_negation", "overlap",
    "q_negated", "q_compares", "scoped_not_asked", "n_sentences",
)  # fmt: skip


def _near_question(pattern: re.Pattern[str], text: str, question_stems: set[str]) -> int:
    """Matches of ``pattern`` with a question word among the 6 words around them, in the one
    sentence ``text`` is: a cue is near what its own sentence says ("MPH was not associated with
    growth delays" is no null finding near "children with ADHD" that ends the sentence before)."""
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
    asks = bool(ASKS_EXPLANATION.search(question))
    sentences = [without_explained_away(s, asks) for s in sentences]
    text = " ".join(sentences)
    body, asked = _scoped_out(text, question_stems)
    affirming = len(AFFIRMING_NEGATIONS.findall(body))
    body = AFFIRMING_NEGATIONS.sub(" ", body)
    # each sentence as the whole text is read ("but not X" scoped out, affirming negations out)
    each = [AFFIRMING_NEGATIONS.sub(" ", _scoped_out(s, question_stems)[0]) for s in sentences]
    compares = float(bool(QUESTION_COMPARES.search(question)))
    equivalence = len(EQUIVALENCE.findall(body))

    def log(k: int) -> float:
        return math.log1p(k)

    return {
        "strong_null": log(len(STRONG_NULL.findall(body))),
        "null": log(len(NULL_FINDING.findall(body))),
        "null_near_question": log(sum(_near_question(NULL_FINDING, s, question_stems)
                                      for s in each)),
        "doubt": log(len(DOUBT.findall(body))),
        "affirmative": log(len(AFFIRMATIVE.findall(body))),
        "affirm_near_question": log(sum(_near_question(AFFIRMATIVE, s, question_stems)
                                        for s in each)),
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


# Asked whether a relation holds independently, a sentence stating it explained by another
# factor says no (:meth:`Relation.explained_by_another`)
EXPLAINED_BY_ANOTHER_FACTOR = SentenceStance("no", 0.8, "explained by another factor")


def _scoped_out(text: str, question_stems: set[str]) -> tuple[str, str | None]:
    """``text`` with "but not X" parts removed when X is not what the question asks about;
    returns (text left, the cue of a scoped negation that IS about the question, if any)."""
    asked: str | None = None

    def drop(m: re.Match[str]) -> str:
        nonlocal asked
        # the negation is about the first word after it ("bilateral but not UNILATERAL hearing
        # loss", "improved mood, but not ATTENTION"), or each item's of a negated list ("but
        # not technical innovation rate or BRAIN size"): about the question only if one is
        firsts = [next((w for w in words_of(item) if w not in STOPWORDS), "")
                  for item in _LIST_ITEM_BREAK.split(m.group(1))]  # fmt: skip
        if any(w and stem(w) in question_stems for w in firsts):
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
    measured = ACCURACY_MEASURE.sub(" ", body)  # a measure's name is no finding
    yes = AFFIRMATIVE.search(measured) or FOUND_RELATION.search(measured)
    yes_cue = yes.group(0) if yes is not None else _stated_evaluation(body, question_stems)
    hedged = HEDGE.search(body) is not None
    denied = (null.group(0) if null is not None else
              _rule_only_null(body, question_stems) or _denied_evaluation(body, question_stems))
    if denied:
        strength = 0.75 if hedged else 0.9
        return SentenceStance("no", strength, denied)
    if doubt is not None:
        return SentenceStance("unclear", 0.5, doubt.group(0))
    if yes_cue:
        strength = 0.5 if hedged else 0.8
        return SentenceStance("yes", strength, yes_cue)
    return accuracy_stance(body) or SentenceStance(None, 0.0, "")


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


# A negation word a "yes" clause must not hold once affirming and non-finding negations are
# removed: the final guard against quoting a sentence that says the opposite of the verdict.
_NEGATION = _rx(r"not", r"no", r"neither", r"nor", r"never", r"without", r"\w+n't", r"cannot",
                r"unlikely",
                r"fail\w*", r"lack\w*", r"absen\w+", r"none")  # fmt: skip


def _stems_with(text: str, aliases: dict[str, frozenset[str]] | None) -> set[str]:
    """The stems of ``text``, with the long forms of the abbreviations it uses."""
    stems = stems_of(text)
    for w in words_of(text):
        stems |= (aliases or {}).get(w.lower(), frozenset())
    return stems


@dataclass(frozen=True)
class Relation:
    """What the question asks about, as a sentence must state it to decide: its concepts (the
    stems of each concept's words) and the populations it names."""

    concepts: tuple[frozenset[str], ...]  # each concept's specific (essential) words' stems
    populations: frozenset[str] = frozenset()
    # the concepts' sides of the question's relation word (0: before it, the exposure or
    # subject; 1: after it, the outcome); () when the question has no relation word
    sides: tuple[int, ...] = ()
    # each concept's words' stems, all of them: what names it when the abstract never uses its
    # specific words ("heart anomalies" for "congenital heart defects")
    broad: tuple[frozenset[str], ...] = ()
    # the concepts the question itself holds constant ("... even after accounting for earlier
    # mental health problems?"): a sentence holding them constant too still states the relation
    controlled: frozenset[int] = frozenset()
    # the question asks what explains or causes something (:data:`ASKS_EXPLANATION`)
    asks_explanation: bool = False
    # the question asks who responds or what predicts an outcome (:data:`ASKS_PREDICTION`)
    asks_prediction: bool = False

    # each concept's level as the question asks it ("LOW maternal ferritin": "low"; "" none)
    levels: tuple[str, ...] = ()
    # a comparison the question asks ("HIGHER vitamin D levels THAN those taking valproic
    # acid"): its direction ("high" / "low"; "" none) and the stems of what follows "than"
    compared: tuple[str, frozenset[str]] = ("", frozenset())
    # the direction of change the question asks of its outcome ("lead to LESS utilization":
    # "down"; "" none) and the stems of that outcome (:func:`_asked_direction`)
    direction: tuple[str, frozenset[str]] = ("", frozenset())
    # the question asks whether the relation holds independently ("Is hypoalbuminemia an
    # INDEPENDENT prognostic factor ...?"; :data:`ASKS_INDEPENDENCE`)
    asks_independence: bool = False

    def explained_by_another(self, text: str) -> bool:
        """Whether ``text`` says its finding is explained by another factor ("the relation
        between hypoalbuminemia and poor survival is SECONDARY TO that of the systemic
        inflammatory response"), asked whether the relation holds independently: a finding
        against independence, not for it. One that "cannot be explained by" other factors
        (:data:`AFFIRMING_NEGATIONS`) says the opposite: it holds on its own."""
        return self.asks_independence and EXPLAINED_BY_ANOTHER.search(
            AFFIRMING_NEGATIONS.sub(" ", text)) is not None

    def opposite_direction(self, text: str) -> bool:
        """Whether ``text`` states a change of the question's outcome only in the other
        direction ("lead to an INCREASE in the utilization of preventive health services",
        asked whether healthier lifestyles lead to LESS utilization): a finding against what
        was asked, not for it."""
        asked, outcome = self.direction
        if not asked:
            return False
        said = _directions_on(words_of(text), outcome)
        return bool(said) and said == {_OTHER_WAY[asked]}

    def with_outcome_named_as(self, title: str) -> Relation:
        """This relation with the outcome's names in a study's title that asks it ("less
        UTILIZATION of healthcare resources", asked "use less healthcare"): the study's own
        question names the outcome in the abstract's words, which its conclusion changes
        ("lead to an increase in the utilization ...")."""
        asked, outcome = self.direction
        if not asked:
            return self
        _, named = question_relation(title).direction
        return replace(self, direction=(asked, outcome | named))

    def comparison_stance(self, text: str) -> Stance | None:
        """A sentence's answer to the question's comparison (its outcome named: checked by the
        caller, :func:`relation_stance`): "yes" when it compares the same two
        arms in the same direction, "no" in the opposite one ("Those taking oxcarbazepine had
        significantly LOWER vitamin D levels THAN patients taking valproic acid", asked
        "higher"); arms named the other way round turn it. None when the sentence makes no such
        comparison of those arms, or negates it."""
        asked, other = self.compared
        said = _comparison(text)
        if not asked or said is None or _NEGATION.search(text):
            return None
        direction, before, after = said
        if other & after and not other & before:
            same = direction == asked
        elif other & before and not other & after:
            same = direction != asked
        else:
            return None
        return "yes" if same else "no"

    def no_finding(self, text: str) -> bool:
        """Whether ``text`` states no finding about this relation: a recommendation, aim or
        future work (:data:`RECOMMENDATION`), a method (:data:`METHOD_STATEMENT`), earlier
        work (:data:`PRIOR_WORK`), what
        predicts the response to a treatment (:data:`PREDICTS_RESPONSE`) when the question does
        not ask that, or a finding about the opposite level of the exposure
        (:meth:`other_level`)."""
        return (
            bool(RECOMMENDATION.search(text))
            or bool(METHOD_STATEMENT.search(text))
            or bool(PRIOR_WORK.search(text))
            or (not self.asks_prediction and bool(PREDICTS_RESPONSE.search(text)))
            or self.other_level(text)
        )

    def other_level(self, text: str) -> bool:
        """Whether ``text`` names an exposure the question asks at one level ("LOW maternal
        ferritin") only at the opposite one ("HIGH maternal ferritin was associated with
        poorer child cognitive abilities"): a finding about another exposure."""
        tokens = [(w, stem(w)) for w in words_of(text)]
        for i, level in enumerate(self.levels):
            if not level or (self.sides and self.sides[i] != 0):
                continue
            found = [_levels_of([w for w, _ in tokens[max(0, k - LEVEL_REACH) : k]])
                     for k, (_, s) in enumerate(tokens) if s in self.concepts[i]]  # fmt: skip
            if any(_OPPOSITE[level] in f for f in found) and not any(level in f for f in found):
                return True
        return False

    def hits(self, stems: set[str]) -> int:
        return sum(1 for c in self.concepts if c & stems)

    def for_source(self, source_stems: set[str]) -> Relation:
        """The concepts this abstract names in the question's own words; a concept it states in
        other words ("memantine" for "Namenda") cannot be checked clause by clause."""
        broad = self.broad or self.concepts
        keys = [c if c & source_stems else b for c, b in zip(self.concepts, broad, strict=True)]
        keep = [i for i, key in enumerate(keys) if key & source_stems]
        controlled = frozenset(j for j, i in enumerate(keep) if i in self.controlled)
        return replace(self, concepts=tuple(keys[i] for i in keep),
                       sides=tuple(self.sides[i] for i in keep) if self.sides else (),
                       broad=tuple(broad[i] for i in keep), controlled=controlled,
                       levels=tuple(self.levels[i] for i in keep) if self.levels else ())

    def outcome_unnamed(self, source_stems: set[str]) -> bool:
        """Whether an abstract (``source_stems``: its words' stems) never names the question's
        outcome, a concept after the relation word written in two words or more ("blood
        pressure"), in any of them. Such an outcome is the abstracts' own wording, not a lay word
        an abstract says otherwise ("smarter" for IQ), so the abstract's findings are on another
        outcome (docs/verdicts.md "Stop 48")."""
        broad = self.broad or self.concepts
        after = [words for side, words in zip(self.sides, broad, strict=False) if side == 1]
        # one concept after the relation word ("does X lower <Y> in Z?"): that is the outcome;
        # with several ("linked with lower verbal IQ in the offspring") which one is not known
        return len(after) == 1 and len(after[0]) >= 2 and not after[0] & source_stems

    def exposure_unnamed(self, source_stems: set[str]) -> bool:
        """Whether an abstract (``source_stems``) names none of the question's exposure side (the
        concepts before its relation word) in any of their words, while it names the outcome
        side, in none of their other names either (:func:`_lay_stems`, generic drug names).
        Its findings on the outcome are then about an exposure of its own ("Later acquisition
        of infant developmental milestones was associated with lower subsequent IQ", asked
        whether babies born early have a lower IQ), and the question's relation, whose exposure
        is dropped from :meth:`for_source`, would be "stated" by any sentence on the outcome."""
        broad = self.broad or self.concepts
        named = {side for side, c, b in zip(self.sides, self.concepts, broad, strict=False)
                 if (c | b) & source_stems}  # fmt: skip
        return {0, 1} <= set(self.sides) and named == {1}

    def stated_in(self, text: str, aliases: dict[str, frozenset[str]] | None = None,
                  any_population: bool = False) -> bool:
        """Whether ``text`` names enough of the relation (a concept of each side of the
        question's relation word, else two of its concepts, or the one there is) and, unless
        ``any_population``, no population other than the one asked about."""
        stems = _stems_with(text, aliases)
        if self.sides and {0, 1} <= set(self.sides):
            found = {side for c, side in zip(self.concepts, self.sides, strict=True) if c & stems}
            if not {0, 1} <= found:
                return False
        elif self.hits(stems) < min(2, len(self.concepts)):
            return False
        return any_population or not self.other_population(text)

    def names_every_concept(self, text: str,
                            aliases: dict[str, frozenset[str]] | None = None,
                            scope_in: set[str] | None = None) -> bool:
        """Whether ``text`` names every concept of the question, in its specific or broad
        words; with ``scope_in`` (the stems of the whole abstract), a concept of the question's
        scope or comparator (side 2: "In vulturine guineafowl, ...") may be named there instead:
        a results sentence need not repeat the species or cohort its abstract is about."""
        stems = _stems_with(text, aliases)
        broad = self.broad or self.concepts
        sides = self.sides if {0, 1} <= set(self.sides) else (0,) * len(self.concepts)
        return all((c | b) & (scope_in if side == 2 and scope_in is not None else stems)
                   for c, b, side in zip(self.concepts, broad, sides, strict=True))

    def names_outcome(self, text: str, aliases: dict[str, frozenset[str]] | None = None) -> bool:
        """Whether ``text`` names the question's outcome in any of its words (or an abbreviation
        the abstract defines): a concept after the relation word; without one, two of the
        question's concepts (or the one there is)."""
        stems = _stems_with(text, aliases)
        broad = self.broad or self.concepts
        # who the outcome is measured in names no outcome: "children" is not "children's IQ"
        named = [bool(((c | b) - _GROUP_STEMS or c | b) & stems)
                 for c, b in zip(self.concepts, broad, strict=True)]
        if 1 in self.sides:
            return any(n for side, n in zip(self.sides, named, strict=True) if side == 1)
        return sum(named) >= min(2, len(named))

    def held_constant(self, text: str, aliases: dict[str, frozenset[str]] | None = None) -> bool:
        """Whether a concept of the question is named, whole, only where ``text`` holds it
        constant (its :data:`COVARIATE` phrases, and what a finding is "not explained by" unless
        the question asks what explains it): the sentence is about another relation, with the
        asked concept controlled for. One word of a concept is not the concept ("control
        variables" for "motor control")."""
        spans = [m.span() for m in COVARIATE.finditer(text)]
        if not self.asks_explanation:
            spans += _away_spans(text)
        if not spans:
            return False
        held_stems = _stems_with(" ".join(text[a:b] for a, b in spans), aliases)
        rest_stems = _stems_with(_cut(text, _merged(spans)), aliases)
        return any(c <= held_stems and not c & rest_stems
                   for i, c in enumerate(self.concepts) if i not in self.controlled)

    def only_in_another_population(self, text: str) -> bool:
        """Whether ``text`` scopes its finding to one population alone, and that population is
        not the one the question asks about ("significantly predicted ..., but only in women",
        asked "in men")."""
        scoped = ONLY_IN.search(text)
        return scoped is not None and self.other_population(scoped.group(0))

    def other_population(self, text: str) -> bool:
        """Whether ``text`` is scoped to a population the question does not ask about ("in
        women", asked "in men")."""
        words = set(words_of(text))
        return bool(self.populations) and any(
            words & group and not words & self.populations for group in POPULATIONS
        )


@lru_cache(maxsize=256)
def question_relation(question: str) -> Relation:
    """The :class:`Relation` of a question: its concepts (:func:`grounding.concepts.
    question_concepts`) and the populations it names ("in men"). Built once per question (each
    source's stance reads it; a frozen value)."""
    from grounding.concepts import question_concepts

    found = [c for c in question_concepts(question) if c.words]
    # a concept is found by its specific words ("BILATERAL hearing loss") when it has any, and a
    # drug by its generic names too ("Ritalin": methylphenidate)
    # harms ("side effects") are named by harms' names, not by "side" or "effects"
    concepts = tuple(HARM_STEMS if c.harms else
                     frozenset(stem(w) for w in (c.essential or c.words)) | _generic_stems(c.words)
                     for c in found)  # fmt: skip
    broad = tuple(HARM_STEMS if c.harms else
                  frozenset(stem(w) for w in c.words) | _generic_stems(c.words) | _lay_stems(c)
                  for c in found)  # fmt: skip
    words = set(words_of(question))
    populations = frozenset(w for group in POPULATIONS for w in group if w in words)
    lead = _LEADING_SCOPE.match(question)
    verb = RELATION_WORD.search(question, lead.end() if lead else 0)
    sides: tuple[int, ...] = ()
    if verb is not None:
        sides = tuple(_side(question, c.text, verb.start(), lead.end() if lead else 0)
                      for c in found)  # fmt: skip
    held = [m.span() for m in COVARIATE.finditer(question)]
    controlled = frozenset(
        i for i, c in enumerate(found)
        if any(a <= question.find(c.text) < b for a, b in held)
    )
    tokens = words_of(question)
    levels = tuple(_level_of(tokens[max(0, at - LEVEL_REACH) : at]) if at >= 0 else ""
                   for at in (_word_at(tokens, c.words) for c in found))  # fmt: skip
    outcomes = [b for b, side in zip(broad, sides, strict=False) if side == 1]
    compared = _asked_comparison(question)
    # a comparison asked ("higher vitamin D levels than ...") is read with its two arms
    # (Relation.comparison_stance), which its direction words belong to
    direction = ("", frozenset()) if compared[0] else _asked_direction(tokens, outcomes)
    return Relation(concepts, populations, sides, broad, controlled,
                    bool(ASKS_EXPLANATION.search(question)),
                    bool(ASKS_PREDICTION.search(question)), levels, compared, direction,
                    bool(ASKS_INDEPENDENCE.search(question)))


# Words that say which way a quantity changes; the words for how much of a thing there is that
# may stand between one and the thing ("increased RISK of death", "lower LEVELS of IQ")
_CHANGE_WORDS = {
    "up": re.compile(r"^(?:increas\w*|rais(?:e|es|ed|ing)|ris(?:e|es|ing)|rose|higher|greater|"
                     r"more|elevat\w*|boost\w*|grow\w*|gain\w*)$", re.IGNORECASE),
    "down": re.compile(r"^(?:reduc\w*|decreas\w*|lower\w*|less|fewer|declin\w*|drop\w*|"
                       r"fall|falls|fell|falling|diminish\w*|shrink\w*|shrank)$", re.IGNORECASE),
}
_OTHER_WAY = {"up": "down", "down": "up"}
_QUANTITY_WORDS = frozenset(
    "risk risks rate rates level levels number numbers odds incidence likelihood prevalence "
    "score scores amount amounts frequency use".split()
)


def _changed(tokens: Sequence[str]) -> list[tuple[str, str]]:
    """(direction, stem of the thing changed) for each change word of ``tokens``: the first
    content word after it that is no quantity word ("an increase in the UTILIZATION",
    "increased risk of DEATH")."""
    def changes(w: str) -> str:
        return next((d for d, rx in _CHANGE_WORDS.items() if rx.match(w)), "")

    # "more", "less" and "fewer" are stop words of the index, not here
    content = [w for w in tokens if w.lower() not in STOPWORDS or changes(w)]
    out: list[tuple[str, str]] = []
    for k, w in enumerate(content):
        way = changes(w)
        thing = next((t for t in content[k + 1 : k + 3] if t.lower() not in _QUANTITY_WORDS), "")
        if way and thing:
            out.append((way, stem(thing.lower())))
    return out


@lru_cache(maxsize=256)
def asked_outcome(question: str) -> str:
    """The question's outcome when it is one everyday noun after its relation word, the concept
    the question ends on ("Do healthier lifestyles mean people use less HEALTHCARE?"), else "".
    Such a word is no essential concept (common in English:
    :func:`grounding.concepts.question_concepts`), so the coverage check
    does not ask a source to name it; it asks it of a source that is to take a stance
    (:attr:`grounding.concepts.Coverage.complete`): one that never names the outcome, in any
    words, reports findings on another outcome (an outcome of two words or more is checked by
    its own words: :meth:`Relation.outcome_unnamed`)."""
    from grounding.concepts import question_concepts

    found = [c for c in question_concepts(question) if c.words]
    sides = question_relation(question).sides
    after = [c for c, side in zip(found, sides, strict=False) if side == 1]
    # the concept the question ends on: in "predict individual differences in agreeableness and
    # social cognitive ability", "individual" is no outcome
    if len(after) != 1 or after[0] is not found[-1]:
        return ""
    if len(after[0].words) != 1 or after[0].essential or after[0].harms:
        return ""
    word = after[0].words[0]
    # a thing measured, named by a noun ("is it better to be BIG?" asks no outcome), not a group
    if not word_classes().is_noun(word) or any(word.lower() in g for g in POPULATIONS):
        return ""
    return word


def _directions_on(tokens: Sequence[str], outcome: frozenset[str]) -> set[str]:
    """The directions in which ``tokens`` change ``outcome`` (its stems)."""
    return {way for way, thing in _changed(tokens) if thing in outcome}


def _asked_direction(tokens: Sequence[str],
                     outcomes: Sequence[frozenset[str]]) -> tuple[str, frozenset[str]]:
    """The one direction of change the question asks of an outcome (a concept after its
    relation word): ("down", stems of "utilization") for "Do healthier lifestyles lead to less
    utilization of healthcare resources?"; ("", {}) when it asks none, or both ways."""
    found = [(way, o) for way, thing in _changed(tokens) for o in outcomes if thing in o]
    if len({way for way, _ in found}) != 1:
        return "", frozenset()
    return found[0][0], frozenset().union(*(o for _, o in found))


# The words that set an exposure's level ("LOW ferritin", "ELEVATED blood pressure") and how
# many words before it they may stand ("high maternal ferritin", "low and high ferritin")
_LEVEL_WORDS = {
    "high": frozenset("high higher highest elevated increased excess excessive".split()),
    "low": frozenset("low lower lowest reduced decreased deficient insufficient".split()),
}
_OPPOSITE = {"high": "low", "low": "high"}
LEVEL_REACH = 3


def _levels_of(before: Sequence[str]) -> set[str]:
    """The levels the words just ``before`` a concept give it ("low and high ferritin": both)."""
    said = {w.lower() for w in before}
    return {level for level, words in _LEVEL_WORDS.items() if said & words}


# "higher ... than", "less ... than": the comparative a "than" takes, up to COMPARED_REACH words
# before it ("had significantly lower vitamin D levels than")
COMPARED_REACH = 5
_THAN = re.compile(r"\bthan\b", re.IGNORECASE)
_COMPARATIVES = {
    "high": frozenset("higher greater more larger bigger better increased".split()),
    "low": frozenset("lower less fewer smaller worse poorer reduced decreased".split()),
}


def _comparison(text: str) -> tuple[str, set[str], set[str]] | None:
    """(direction, stems before the comparative, stems after "than") of the one comparison
    ``text`` makes; None without one, or with more than one."""
    found = list(_THAN.finditer(text))
    if len(found) != 1 or re.match(r"\s*\d", text[found[0].end() :]):  # "more than 2 years"
        return None
    than = found[0]
    before_words = words_of(text[: than.start()])
    near = {w.lower() for w in before_words[-COMPARED_REACH:]}
    directions = [d for d, words in _COMPARATIVES.items() if near & words]
    if len(directions) != 1:
        return None
    at = max(i for i, w in enumerate(before_words) if w.lower() in _COMPARATIVES[directions[0]])
    before = {stem(w) for w in before_words[:at]}
    return directions[0], before, stems_of(text[than.end() :])


def _asked_comparison(question: str) -> tuple[str, frozenset[str]]:
    """The question's comparison: its direction and the content stems of what follows "than"."""
    said = _comparison(question)
    if said is None:
        return "", frozenset()
    direction, _, after = said
    return direction, frozenset(after - {stem(w) for w in STOPWORDS})


def _level_of(before: Sequence[str]) -> str:
    """The one level the words just ``before`` a concept give it: "high", "low" or ""."""
    levels = _levels_of(before)
    return levels.pop() if len(levels) == 1 else ""


def _word_at(tokens: Sequence[str], words: Sequence[str]) -> int:
    """Where the first of ``words`` stands among ``tokens`` (lower-cased), -1 if nowhere."""
    lowered = [t.lower() for t in tokens]
    return next((k for k, t in enumerate(lowered) if words and t == words[0]), -1)


def _lay_stems(concept: Concept) -> frozenset[str]:
    """The stems of the other English names of a concept (WordNet's: "preemies" -> "preterm
    infant"): of the whole concept and of its essential words, as the coverage check takes
    them (:func:`grounding.concepts.question_concepts`), each name by its most specific word
    ("preterm", not "infant"); none for a concept without an essential word ("kids"), whose
    everyday names ("minor", "fry") are other things in an abstract."""
    from indexing.lay_terms import lay_terms, specific_word

    if not concept.essential:  # an everyday concept ("kids") is named in everyday words
        return frozenset()
    terms = lay_terms()
    names = [" ".join(concept.words), *concept.essential]
    return frozenset(s for name in names for other in terms.synonyms(name)
                     for s in stems_of(specific_word(other)) if len(s) > 2)  # fmt: skip


def _generic_stems(words: Sequence[str]) -> frozenset[str]:
    """The stems of the generic names of the drugs among ``words`` (brand names)."""
    from indexing.drug_names import drug_names

    lexicon = drug_names()
    return frozenset(s for w in words for g in lexicon.generic_of(w) for s in stems_of(g))


_SCOPE = re.compile(
    r"\b(?:in|among|amongst|during|across|within)\s+(?:\S+\s+){0,2}$", re.IGNORECASE
)


# A question that opens with its population, set off by a comma ("AMONG ADULTS ASSESSED FOR ADHD
# OR AUTISM, were those who had poor motor skills ...", "For seniors having back operations,
# does ..."): the scope, not the exposure, although it comes before the relation word.
_LEADING_SCOPE = re.compile(
    r"^\s*(?:among|amongst|in|for|within|across|during)\b[^,?;]{3,160},", re.IGNORECASE
)


# What a comparison's other arm follows ("... reduce fatigue COMPARED WITH placebo", "... better
# THAN clipping"): the comparator, which a finding need not name ("Methylphenidate did not
# improve fatigue" answers whether it reduced fatigue compared with placebo)
_COMPARATOR = re.compile(
    r"\b(?:compared\s+(?:with|to)|in\s+comparison\s+(?:with|to)|than|versus|vs\.?|"
    r"relative\s+to|as\s+opposed\s+to)\s+(?:\S+\s+){0,2}$",
    re.IGNORECASE,
)


def _side(question: str, text: str, verb_at: int, scope_end: int = 0) -> int:
    """0: the concept comes before the relation word (the exposure); 1: after it (the outcome);
    2: the scope, after it ("... IN children with epilepsy") or opening the question ("Among
    adults with ADHD, ..."; ``scope_end``), or the comparator after it ("... COMPARED WITH
    placebo"), which a clause need not name."""
    # the concept as a whole word ("men" is not the end of "women")
    found = re.search(r"(?<![\w-])" + re.escape(text) + r"(?![\w-])", question)
    start = found.start() if found else question.find(text)
    if 0 <= start < scope_end:
        return 2
    if start <= verb_at:
        return 0
    between = question[verb_at:start]
    return 2 if _SCOPE.search(between) or _COMPARATOR.search(between) else 1


_DEFINED = re.compile(r"((?:[\w'-]+\s+){1,8}?)\(\s*([A-Za-z][A-Za-z0-9-]{1,9})s?\s*[),;]")


def abbreviations(text: str) -> dict[str, frozenset[str]]:
    """The abbreviations an abstract defines ("hippocampal (HP) volume", "intelligence quotient
    (IQ)"), lower-cased, each to the stems of its long form: the words before the parenthesis,
    as many as the abbreviation's capitals, the first starting with its first letter."""
    out: dict[str, frozenset[str]] = {}
    for m in _DEFINED.finditer(text):
        abbr = m.group(2)
        capitals = sum(ch.isupper() for ch in abbr)
        if capitals < 2 and not abbr.isupper():
            continue
        before = m.group(1).split()
        words = before[-min(max(capitals, 1), len(before)):]
        while len(words) > 1 and words[0][:1].lower() != abbr[0].lower():
            words = words[1:]
        if words and words[0][:1].lower() == abbr[0].lower():
            out[abbr.lower()] = frozenset(stem(w) for w in words_of(" ".join(words)))
    return out


# a clause that opens with its verb ("..., but IS significantly associated with Y") has the
# previous clause's subject
_NO_SUBJECT = re.compile(
    r"^(?:it|they|this|these|which|that|is|are|was|were|has|have|had|did|does|do|also|still|"
    r"not|significantly|only|"
    r"could|can|may|might|would|will|\w+ed)\b",
    re.IGNORECASE,
)


def _with_subjects(parts: list[str]) -> list[str]:
    """Each clause as its relation is checked: a clause without a subject of its own is read
    with the previous clause's words before it."""
    out: list[str] = []
    for i, part in enumerate(parts):
        out.append(f"{parts[i - 1]} {part}" if i and _NO_SUBJECT.match(part) else part)
    return out


# The last two items of a serial list ("cognitive flexibility, ORIENTING, AND conflict control
# were not associated with ..."): its ", and" joins the list's items, it starts no clause; an item
# with a verb ("attention WAS unchanged, and ...") ends a clause
_SERIAL_LIST_END = re.compile(r"(,\s*(?:[\w'-]+\s+){0,2}[\w'-]+),(\s+(?:and|or)\s)", re.IGNORECASE)
_FINITE_VERB = re.compile(
    r"\b(?:was|were|is|are|has|have|had|did|does|do|be|been|\w{3,}ed)\b", re.IGNORECASE
)


def _joined_lists(text: str) -> str:
    """``text`` with the comma before a serial list's "and"/"or" dropped (:data:`CLAUSE_BREAK`
    then keeps the list in one clause)."""

    def join(m: re.Match[str]) -> str:
        return m.group(0) if _FINITE_VERB.search(m.group(1)) else m.group(1) + m.group(2)

    return _SERIAL_LIST_END.sub(join, text)


def clauses(text: str) -> list[str]:
    """The sentence's clauses (:data:`CLAUSE_BREAK`); a serial list stays in one."""
    parts = [p.strip(" ,") for p in CLAUSE_BREAK.split(_joined_lists(text))]
    return [p for p in parts if p]


def relation_stance(
    text: str,
    relation: Relation,
    question_stems: set[str],
    *,
    asks_sameness: bool = False,
    aliases: dict[str, frozenset[str]] | None = None,
    own_question: bool = True,
) -> SentenceStance:
    """:func:`_relation_read`, and a "yes" that changes the question's outcome only the other
    way (:meth:`Relation.opposite_direction`) says no."""
    read = _relation_read(text, relation, question_stems, asks_sameness=asks_sameness,
                          aliases=aliases, own_question=own_question)
    return _directed(read, text, relation)


def _directed(read: SentenceStance, text: str, relation: Relation) -> SentenceStance:
    """A "yes" read of ``text`` turned "no" when it changes the question's outcome only in the
    other direction than asked."""
    if read.stance == "yes" and relation.opposite_direction(text):
        return SentenceStance("no", read.strength, "the other direction")
    return read


def _relation_read(
    text: str,
    relation: Relation,
    question_stems: set[str],
    *,
    asks_sameness: bool = False,
    aliases: dict[str, frozenset[str]] | None = None,
    own_question: bool = True,
) -> SentenceStance:
    """The stance of a sentence toward the question's RELATION: only a clause that states it
    (:meth:`Relation.stated_in`) and is no recommendation, aim or future work decides; a
    negation is read in its clause ("X was not related to Z, but X predicted Y" says yes to
    "Does X predict Y?"). Clauses that disagree make the sentence unclear.

    A sentence that states the relation in words of its own (no clause names it as the question
    does) may still say YES when nothing in it is negated: an affirmative finding is what an
    abstract reports of its own question; a negation, though, is scoped to the relation it is
    written about, so a "no" needs a clause that states the question's."""
    if relation.held_constant(text, aliases):
        return SentenceStance(None, 0.0, "")
    compared = relation.comparison_stance(text) if relation.names_outcome(text, aliases) else None
    if compared is not None:  # the question's two arms compared, on its outcome
        return SentenceStance(compared, PLAIN, "compared")
    text = without_explained_away(text, relation.asks_explanation)
    whole = sentence_stance(text, question_stems, asks_sameness=asks_sameness)
    if relation.only_in_another_population(text):
        return _left_out_population(whole, text, relation, aliases)
    if not relation.stated_in(text, aliases):
        if own_question and _own_words_yes(whole, text, relation, aliases):
            return _guarded(whole, text, asks_sameness)
        return SentenceStance(None, 0.0, "")
    if relation.explained_by_another(text):
        return EXPLAINED_BY_ANOTHER_FACTOR
    _, asked = _scoped_out(text, question_stems)
    parts = clauses(text)
    if asked is not None or len(parts) == 1:  # "..., but not <what is asked>": read whole
        if relation.no_finding(text) and asked is None:
            return SentenceStance(None, 0.0, "")
        return _guarded(whole, text, asks_sameness)
    reads = [
        _guarded(sentence_stance(p, question_stems, asks_sameness=asks_sameness), p,
                 asks_sameness)
        for p, named in zip(parts, _with_subjects(parts), strict=True)
        if relation.stated_in(named, aliases) and not relation.no_finding(p)
    ]  # fmt: skip
    said = [r for r in reads if r.stance is not None]
    if not said:
        if own_question and _own_words_yes(whole, text, relation, aliases):
            return _guarded(whole, text, asks_sameness)
        return SentenceStance(None, 0.0, "")
    if len({r.stance for r in said if r.stance != "unclear"}) > 1:
        return SentenceStance("unclear", 0.5, "clauses disagree")
    return max(said, key=lambda r: r.strength)


def _left_out_population(
    whole: SentenceStance,
    text: str,
    relation: Relation,
    aliases: dict[str, frozenset[str]] | None = None,
) -> SentenceStance:
    """A relation found in one population alone, asked about another ("..., but only in
    women", asked "in men"): the finding says it does not hold in the group it leaves out, so
    a plain affirmative reads "no" for the question; anything else decides nothing. ("In girls
    but not in boys", asked "in boys", is read by :func:`_scoped_out` already.)"""
    if (whole.stance == "yes" and relation.stated_in(text, aliases, any_population=True)
            and not relation.no_finding(text)):
        return SentenceStance("no", PLAIN, "only in another population")
    return SentenceStance(None, 0.0, "")


def _own_words_yes(
    whole: SentenceStance,
    text: str,
    relation: Relation,
    aliases: dict[str, frozenset[str]] | None = None,
) -> bool:
    """Whether a sentence that does not name the question's relation in its words may still say
    yes: an affirmative finding, no recommendation, no other population, and it names the
    question's outcome (:meth:`Relation.names_outcome`): "adverse events of unknown severity led
    to withdrawal" is a finding about another outcome of the same drug, not an answer to whether
    the drug helps children focus (measured on the auto-labelled set and the dev files;
    docs/verdicts.md "Stop 42")."""
    return (
        whole.stance == "yes"
        and not relation.no_finding(text)
        and not relation.other_population(text)
        and relation.names_outcome(text, aliases)
    )


def _guarded(read: SentenceStance, clause: str, asks_sameness: bool) -> SentenceStance:
    """The final guard: a "yes" whose clause still holds a negation (once affirming and
    non-finding negations are removed) may state the opposite ("There is no increased risk of
    ..."): unclear, never a yes."""
    if read.stance != "yes" or asks_sameness:
        return read
    body, _ = _scoped_out(clause, set())
    body = NON_FINDING_NEGATIONS.sub(" ", AFFIRMING_NEGATIONS.sub(" ", body))
    if _NEGATION.search(body):
        return SentenceStance("unclear", 0.5, read.cue)
    return read


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


# A sentence that opens by setting itself against the one before it ("In contrast, diet
# generalist species had larger brains" after "Habitat generalism was not related to brain size")
_CONTRAST_OPENING = re.compile(
    r"^\W*(?:in contrast|by contrast|contrary to|conversely|on the other hand|however|whereas|"
    r"unlike|instead)\b",
    re.IGNORECASE,
)


# How far back the finding a contrast is set against may lie (an interpretation may come between:
# "Habitat generalism was not related to brain size. This suggests ... In contrast, ...")
CONTRASTED_WINDOW = 2


def _contrasted(sentences: Sequence[Sentence], candidates: Sequence[Sentence]) -> list[Sentence]:
    """The sentences the candidates that open with a contrast are set against (the
    CONTRASTED_WINDOW before each): a finding stated as a contrast is half of a pair, and the
    other half may be the one about the question's own relation."""
    out: list[Sentence] = []
    for i, sentence in enumerate(sentences):
        if sentence not in candidates or not _CONTRAST_OPENING.match(sentence.text):
            continue
        for before in sentences[max(0, i - CONTRASTED_WINDOW) : i]:
            if before not in candidates and before not in out:
                out.append(before)
    return out


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
    ("No differences were found.") of a study whose title asks the question (:func:`_asks_it`):
    an unlabelled last sentence about something else ("Different hypotheses explaining these
    differences are compared.") once gave a confident "Yes", and so did another study's
    conclusion ("The brain dysfunctions of the REs appear to be associated with prefrontal lobe
    hypoactivation", for whether stimulants work).

    With ``classify`` (the stance classifier over the answer sentences' cues), the strength is
    the classifier's probability of that stance, and a stance the classifier does not also find
    most likely becomes "unclear": a yes/no stands only when rules and classifier agree.

    ``key_findings``: (start, end) offsets of the source's evidence sentences."""
    aliases, asked, source_stems = _source_relation(source, question)
    if asked.outcome_unnamed(source_stems) or asked.exposure_unnamed(source_stems):
        return SourceStance(source.n, "unclear")
    answer = list(_answer_sentences(source))
    asks_it = _asks_it(source.title, asked, aliases)
    relation = asked.for_source(source_stems)
    if asks_it and source.title:
        relation = relation.with_outcome_named_as(source.title)
    best: tuple[float, Sentence, SentenceStance] | None = None
    sameness = asks_sameness(question)
    own = not other_age_group(source.title, question)
    last = source.sentences[-1] if source.sentences else None
    plain: list[tuple[float, SentenceStance]] = []  # (overlap, read) of the plain answer sentences
    for order, sentence, overlap in _candidates(source, answer, key_findings, question_stems,
                                                asks_it):
        read = _candidate_stance(sentence, bool(overlap), question_stems, relation, aliases,
                                 sameness, own, asks_it)  # fmt: skip
        if read is None or read.stance is None:
            continue
        if sentence in answer and read.strength >= PLAIN:
            plain.append((overlap, read))
        # a plain statement near the question's words first; answer sentences before key
        # findings, and the abstract's last sentence (where it concludes) before the others
        score = read.strength * (0.5 + overlap) - 0.01 * order + 0.1 * (sentence is last)
        if best is None or score > best[0]:
            best = (score, sentence, read)
    best = best or _whole_statement(source, answer, key_findings, question_stems, asked,
                                    aliases, sameness, own, source_stems)
    if best is None:
        return _title_stance(source, relation, question_stems)
    _, sentence, read = best
    explained = _explained_elsewhere(answer, relation, aliases) if read.stance == "yes" else None
    if explained is not None:  # the "yes" found is what the source explains by another factor
        sentence, read = explained
    return _settled(source, answer, sentence, read, question, question_stems,
                    [] if explained is not None else plain, classify)  # fmt: skip


def _settled(
    source: SourceText,
    answer: Sequence[Sentence],
    sentence: Sentence,
    read: SentenceStance,
    question: str,
    question_stems: set[str],
    plain: list[tuple[float, SentenceStance]],
    classify: StanceClassifier | None,
) -> SourceStance:
    """The source's stance from its deciding sentence: "unclear" when its plain answer
    sentences say both (:func:`_says_both`), and a "yes" only as the classifier confirms it."""
    stance: Stance = read.stance or "unclear"
    if _says_both(stance, stems_of(sentence.text) & question_stems, question_stems, plain):
        stance = "unclear"
    strength = read.strength
    if classify is not None and stance == "yes":
        stance, strength = _confirmed_yes(classify, answer, sentence, question, question_stems)
    return SourceStance(
        source.n, stance, sentence.text, sentence.start, sentence.end, strength, read.cue
    )


def _explained_elsewhere(
    answer: Sequence[Sentence], relation: Relation, aliases: dict[str, frozenset[str]]
) -> tuple[Sentence, SentenceStance] | None:
    """Asked whether a relation holds independently, the answer sentence that names a concept
    of it and says it is explained by another factor ("Low albumin concentrations are
    associated with poorer survival" found, then "... the relation between hypoalbuminemia and
    poor survival is secondary to that of the systemic inflammatory response"): the source's
    answer is that it does not. None when there is none."""
    for sentence in answer:
        if relation.explained_by_another(sentence.text) and relation.hits(
            _stems_with(sentence.text, aliases)
        ):
            return sentence, EXPLAINED_BY_ANOTHER_FACTOR
    return None


def _whole_statement(
    source: SourceText,
    answer: Sequence[Sentence],
    key_findings: Sequence[tuple[int, int]],
    question_stems: set[str],
    asked: Relation,
    aliases: dict[str, frozenset[str]],
    sameness: bool,
    own: bool,
    source_stems: set[str],
) -> tuple[float, Sentence, SentenceStance] | None:
    """When no answer sentence or key finding decides, a sentence elsewhere in the abstract
    that names every concept of the question (its scope may be named elsewhere in the
    abstract: :meth:`Relation.names_every_concept`), in its relation, may: a results sentence
    in the middle of an unlabelled abstract ("Wider venular caliber was associated with poorer
    neuropsychological functioning at midlife, independently of ...") that the key-finding
    selection passed over for later ones (it favours the end of an abstract), or one that finds
    the relation only in a population the question does not ask about ("..., but only in
    women", asked "in men"; :func:`_left_out_population`). Only a plain yes or no counts; the
    strongest, nearest the question's words, decides."""
    findings = set(key_findings)
    best: tuple[float, Sentence, SentenceStance] | None = None
    for at, sentence in enumerate(source.sentences):
        if sentence in answer or (sentence.start, sentence.end) in findings:
            continue
        if not _reports_results(sentence, at, len(source.sentences)):
            continue
        exclusive = asked.only_in_another_population(sentence.text)  # read by relation_stance
        if not exclusive and not (
                asked.names_every_concept(sentence.text, aliases, scope_in=source_stems)
                and asked.stated_in(sentence.text, aliases)):
            continue
        read = _candidate_stance(sentence, True, question_stems, asked, aliases, sameness, own)
        if read is None or read.stance not in ("yes", "no"):
            continue
        score = read.strength * (0.5 + _overlap(sentence.text, question_stems))
        if best is None or score > best[0]:
            best = (score, sentence, read)
    return best


# A finding reported in the past tense ("having more young in the group REDUCED home-range
# size", "X WAS ASSOCIATED WITH Y"): what a study found, not the background's present tense
REPORTED_FINDING = re.compile(
    r"\b(?:was|were)\s+(?:\w+ly\s+)?(?:associated|related|linked|correlated)\b"
    # a verb, not the adjective of a noun phrase ("associated with REDUCED IQ", "an INCREASED
    # risk"): not after a preposition or article, and followed by its object
    r"|(?<!\bwith\s)(?<!\bof\s)(?<!\bto\s)(?<!\bin\s)(?<!\ba\s)(?<!\ban\s)(?<!\bthe\s)"
    r"(?<!\bfor\s)(?<!\bby\s)(?<!\band\s)(?<!\bor\s)"
    r"\b(?:reduced|increased|decreased|predicted|improved|lowered|raised|impaired)\s+(?:the\s+)?"
    r"(?!by\b|in\b|with\b|and\b|or\b)[a-z]",
    re.IGNORECASE,
)
# an unlabelled abstract's first sentences are its background and aims, whatever their tense
OPENING_SENTENCES = 2


def _reports_results(sentence: Sentence, at: int, count: int) -> bool:
    """Whether a sentence stands where an abstract reports its results: a labelled results
    section, or the second half of an unlabelled abstract (its first half is background, aims
    and methods: "Colonoscopy can detect colorectal adenomas ..., but there are still many
    missing diagnoses" opens one), or, past its opening sentences, a finding reported in the
    past tense (:data:`REPORTED_FINDING`; an abstract followed by its plain-language digest
    reports its results in its first half)."""
    if sentence.kind == "result":
        return True
    if sentence.kind != "unlabelled":
        return False
    return 2 * at >= count or (at >= OPENING_SENTENCES
                               and REPORTED_FINDING.search(sentence.text) is not None)


def _title_stance(source: SourceText, relation: Relation, question_stems: set[str]) -> SourceStance:
    """When no sentence of the abstract decides, its title may: a title that states a finding
    ("No evidence of intelligence improvement after working memory training") is the authors'
    own one-line conclusion, as PubMedQA's PQA-A reads them. It decides only when it states the
    question's relation in its words (both sides, no other population) and is no question
    ("Does ...?"), and only a "no": a title read as "yes" often names the topic, not a finding
    ("Cardiorespiratory fitness as a mediator of the relationship between birth weight and
    cognition" read "yes" to whether extra weight goes with weaker thinking). No sentence is
    quoted for it: the title is not the abstract's text."""
    title = source.title.strip()
    if not title or title.endswith("?"):
        return SourceStance(source.n, "unclear")
    read = relation_stance(title, relation, question_stems, own_question=False)
    if read.stance != "no":
        return SourceStance(source.n, "unclear")
    return SourceStance(source.n, "no", strength=read.strength, cue=read.cue)


def _candidates(
    source: SourceText,
    answer: Sequence[Sentence],
    key_findings: Sequence[tuple[int, int]],
    question_stems: set[str],
    asks_it: bool,
) -> list[tuple[int, Sentence, float]]:
    """(order, sentence, share of the question's words it holds) of the sentences that may
    decide: the answer sentences, then the key findings, then what a contrast among them is set
    against; one that shares no word with the question is about something else, unless it is
    the labelled conclusion of a study whose own question is the user's (``asks_it``)."""
    findings = set(key_findings)
    candidates = [*answer] + [
        s for s in source.sentences if (s.start, s.end) in findings and s not in answer
    ]
    candidates += _contrasted(source.sentences, candidates)
    out = []
    for order, sentence in enumerate(candidates):
        overlap = _overlap(sentence.text, question_stems)
        if overlap or (sentence.kind == "conclusion" and asks_it):
            out.append((order, sentence, overlap))
    return out


def _overlap(text: str, question_stems: set[str]) -> float:
    """The share of the question's word stems that ``text`` holds."""
    return len(stems_of(text) & question_stems) / max(1, len(question_stems))


def _source_relation(
    source: SourceText, question: str
) -> tuple[dict[str, frozenset[str]], Relation, set[str]]:
    """The source's abbreviations, the question's relation, and the stems of the source's
    title and abstract (the long forms of its abbreviations included)."""
    aliases = abbreviations(source.abstract)
    source_stems = stems_of(f"{source.title} {source.abstract}")
    for expansion in aliases.values():
        source_stems |= expansion
    return aliases, question_relation(question), source_stems


def _candidate_stance(
    sentence: Sentence,
    shares_words: bool,
    question_stems: set[str],
    relation: Relation,
    aliases: dict[str, frozenset[str]],
    sameness: bool,
    own_question: bool = True,
    asks_it: bool = True,
) -> SentenceStance | None:
    """One candidate sentence's reading; None when it decides nothing (a recommendation, or a
    conclusion about another population). A labelled one-clause conclusion states the study's
    own question; it is read whole only when that question is the user's (``asks_it``): the
    conclusion of a study of lifestyle and body composition does not say whether a healthier
    lifestyle means less healthcare use."""
    text = without_explained_away(sentence.text, relation.asks_explanation)
    if not shares_words:  # the labelled conclusion about the study's own question
        read = sentence_stance(text, question_stems, asks_sameness=sameness)
        return None if relation.no_finding(sentence.text) else read
    if sentence.kind == "conclusion" and asks_it and len(clauses(sentence.text)) == 1:
        # the labelled conclusion states the study's own question: one clause, one relation
        read = _guarded(sentence_stance(text, question_stems, asks_sameness=sameness), text,
                        sameness)
        if relation.no_finding(sentence.text) or relation.other_population(sentence.text):
            return None
        if relation.explained_by_another(text):
            return EXPLAINED_BY_ANOTHER_FACTOR
        return _directed(read, text, relation)
    return relation_stance(sentence.text, relation, question_stems,
                           asks_sameness=sameness, aliases=aliases,
                           own_question=own_question)  # fmt: skip


def _asks_it(title: str, relation: Relation, aliases: dict[str, frozenset[str]]) -> bool:
    """Whether a study's own question is the user's: its title names every concept of the
    question (in its specific or broad words; not only the part this source names) and no other
    population, and it is no predictor-of-response study the question does not ask for
    ("Predicting the clinical outcome of stimulant medication ..."). A source without a title
    cannot be told apart: it counts as asking it."""
    if not title:
        return True
    if PREDICTS_RESPONSE.search(title) is not None and not relation.asks_prediction:
        return False
    return relation.names_every_concept(title, aliases) and not relation.other_population(title)


def _confirmed_yes(
    classify: StanceClassifier,
    answer: Sequence[Sentence],
    decided: Sentence,
    question: str,
    question_stems: set[str],
) -> tuple[Stance, float]:
    """A rule-read "yes" with the classifier's probability as its strength; "unclear" when the
    classifier does not also find "yes" most likely. The classifier reads what decided: the
    answer sentences when one of them did, else the finding elsewhere (``decided``)."""
    read_by = answer if decided in answer else [decided]
    probs = classify(stance_features([s.text for s in read_by], question, question_stems))
    strength = probs.get("yes", 0.0)
    return ("yes" if max(probs, key=lambda k: probs[k]) == "yes" else "unclear"), strength
