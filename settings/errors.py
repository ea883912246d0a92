"""Errors whose message is meant for the user: what went wrong and what to do about it."""


class UserFacingError(RuntimeError):
    """Printed without a traceback by the CLI and shown as a short message in the chat."""


class IndexMissingError(UserFacingError):
    """No usable index on disk (absent, unfinished, or built with other settings)."""


class ModelLoadError(UserFacingError):
    """The configured LLM or embedding model cannot be found or loaded."""
