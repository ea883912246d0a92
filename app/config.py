"""Re-export of :mod:`settings.config`: the configuration lives on the ground floor (it imports
nothing of the project); scripts outside the repository keep importing it from here."""

from settings.config import (
    DEFAULT_CONFIG_PATH,
    REPO_ROOT,
    BM25Config,
    ChainsConfig,
    Config,
    ConfigError,
    CorpusConfig,
    FetchConfig,
    HistoryConfig,
    IndexConfig,
    LLMConfig,
    MilvusConfig,
    PromptsConfig,
    RetrievalConfig,
    UIConfig,
    config_from_dict,
    cpu_has_native_bf16,
    load_config,
)

__all__ = [
    "DEFAULT_CONFIG_PATH", "REPO_ROOT", "BM25Config", "ChainsConfig", "Config", "ConfigError",
    "CorpusConfig", "FetchConfig", "HistoryConfig", "IndexConfig", "LLMConfig", "MilvusConfig",
    "PromptsConfig", "RetrievalConfig", "UIConfig", "config_from_dict", "cpu_has_native_bf16",
    "load_config",
]  # fmt: skip
