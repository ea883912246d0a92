"""Re-export of :mod:`settings.errors` (kept for scripts outside the repository)."""

from settings.errors import IndexMissingError, ModelLoadError, UserFacingError

__all__ = ["IndexMissingError", "ModelLoadError", "UserFacingError"]
