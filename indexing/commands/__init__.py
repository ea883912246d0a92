"""``python -m app index build|update|stats``."""
