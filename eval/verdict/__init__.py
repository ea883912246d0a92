"""The model-based yes/no/maybe verdict that ``eval answers`` measures on PubMedQA (the chat's
verdict follows from the sources' stances instead: :func:`grounding.consensus.judge`).

- :mod:`.decider`: :class:`VerdictDecider`, its one entry point;
- :mod:`.labels`: which questions get a verdict; reading the model's JSON;
- :mod:`.evidence`, :mod:`.cues`: the sentences the verdict reads and their wording cues;
- :mod:`.scoring`: what runs per question (option scores, JSON, the classifier's features);
- :mod:`.calibration`: the decision rule as stored next to the prompt;
- :mod:`.fit`: training on the dev split (``eval answers --calibrate``), never per question.
"""

from eval.verdict.calibration import (
    Calibration,
    Method,
    VerdictClassifier,
    calibration_path,
    save_calibration,
)
from eval.verdict.cues import (
    CHANNEL_FEATURES,
    CLASSIFIER_FEATURES,
    CUES,
    LLM_FEATURES,
    cue_features,
)
from eval.verdict.decider import VerdictDecider
from eval.verdict.evidence import (
    ArticleTails,
    Evidence,
    best_overlap_sentence,
    conclusion_sentences,
    content_words,
    split_sentences,
    verdict_evidence,
    verdict_passage,
)
from eval.verdict.fit import fit_bias, fit_classifier
from eval.verdict.labels import (
    VERDICTS,
    AnswerLabel,
    ParsedVerdict,
    is_yes_no_question,
    parse_verdict_json,
)
from eval.verdict.scoring import (
    CHANNEL_PREFIX,
    CHANNEL_TEMPLATE,
    EVIDENCE_TEMPLATE,
    OPTION_SPELLINGS,
    SCORE_PREFIX,
    VerdictOutcome,
    channel_logprobs,
    classify_verdict,
    companion_template,
    evidence_messages,
    generate_verdict,
    load_channel_template,
    load_evidence_template,
    option_logprobs,
    score_verdict,
    verdict_features,
    yes_no_messages,
)

__all__ = [
    "CHANNEL_FEATURES", "CHANNEL_PREFIX", "CHANNEL_TEMPLATE", "CLASSIFIER_FEATURES", "CUES",
    "EVIDENCE_TEMPLATE", "LLM_FEATURES", "OPTION_SPELLINGS", "SCORE_PREFIX", "VERDICTS",
    "AnswerLabel", "ArticleTails", "Calibration", "Evidence", "Method", "ParsedVerdict",
    "VerdictClassifier", "VerdictDecider", "VerdictOutcome", "best_overlap_sentence",
    "calibration_path", "channel_logprobs", "classify_verdict", "companion_template",
    "conclusion_sentences", "content_words", "cue_features", "evidence_messages", "fit_bias",
    "fit_classifier", "generate_verdict", "is_yes_no_question", "load_channel_template",
    "load_evidence_template", "option_logprobs", "parse_verdict_json", "save_calibration",
    "score_verdict", "split_sentences", "verdict_evidence", "verdict_features", "verdict_passage",
    "yes_no_messages",
]  # fmt: skip
