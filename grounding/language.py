"""Which abstract sentences are in the answer's language.

Some PubMed records carry their abstract a second time in the authors' language: in the shared
corpora 1,752 of 160,374 sentences (249 articles) are confidently German, Spanish, French,
Portuguese, Chinese, Russian and more. Quoted as key findings they would answer an English
question in another language, so evidence selection skips them (py3langid: a naive Bayes
identifier shipped as a numpy file, no download, no pickle; ~0.1 ms a sentence).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

# Probability (normalised over the 97 languages) above which a sentence counts as another
# language. Measured on the shared corpora: a random 40 of the sentences at or above it were all
# really in another language; short English fragments ("Seventy-seven ... survivors (median age,
# 2.1 yr).", "(PsycINFO Database Record ...)") score 0.2-0.5 for English and are not flagged.
CONFIDENT = 0.8


@lru_cache(maxsize=1)
def identifier() -> Any:
    """py3langid's identifier with probabilities normalised over its 97 languages (the one
    language identification of the project: abstract sentences here, questions in
    :func:`chains.question_checks.language_refusal`)."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def in_other_language(text: str, language: str | None) -> bool:
    """True when ``text`` is confidently identified as a language other than ``language``
    (an ISO 639-1 code); ``language`` None turns the check off."""
    if not language or not text.strip():
        return False
    found, probability = identifier().classify(text)
    other: bool = found != language and probability >= CONFIDENT
    return other
