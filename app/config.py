"""Re-export of :mod:`settings.config`: the configuration lives on the ground floor (it imports
nothing of the project); scripts outside the repository keep importing it from here."""

from settings.config import (
    DEFAULT_CONFIG_PATH,
    LLM_SECTIONS,
    REPO_ROOT,
    BM25Config,
    ChainsConfig,
    Config,
    ConfigError,
    CorpusConfig,
    FetchConfig,
    GPT4AllLLMConfig,
    HistoryConfig,
    HuggingFaceLLMConfig,
    IndexConfig,
    LLMConfig,
    MilvusConfig,
    OpenAILLMConfig,
    PromptsConfig,
    RetrievalConfig,
    UIConfig,
    config_from_dict,
    cpu_has_native_bf16,
    llm_with_backend,
    load_config,
)

__all__ = [
    "DEFAULT_CONFIG_PATH", "REPO_ROOT", "BM25Config", "ChainsConfig", "Config", "ConfigError",
    "CorpusConfig", "FetchConfig", "HistoryConfig", "IndexConfig", "LLMConfig", "MilvusConfig",
    "PromptsConfig", "RetrievalConfig", "UIConfig", "config_from_dict", "cpu_has_native_bf16",
    "load_config", "LLM_SECTIONS", "GPT4AllLLMConfig", "HuggingFaceLLMConfig", "OpenAILLMConfig",
    "llm_with_backend",
]  # fmt: skip
