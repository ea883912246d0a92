"""A :class:`~settings.config.Config` written back as a YAML file that works from any folder:
every path in it made absolute, then sections overridden. For a process started with
``--config`` (the chat server of ``bench chat``, the browser tests)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from settings.config import LLM_SECTIONS, Config, OpenAILLMConfig


def portable_config(cfg: Config, overrides: dict[str, dict[str, Any]] | None = None
                    ) -> dict[str, Any]:
    """``cfg`` as plain data with each path resolved against the config's own folder, then
    ``overrides`` (a nested dict of sections) applied on top."""
    data = cfg.model_dump(mode="json")
    data["corpus"]["paths"] = [str(cfg.resolve(p)) for p in cfg.corpus.paths]
    data["corpus"]["fetch"]["out_dir"] = str(cfg.resolve(cfg.corpus.fetch.out_dir))
    data["index"]["dir"] = str(cfg.resolve(cfg.index.dir))
    if cfg.retrieval.milvus.is_lite:  # a server URI stays as it is
        data["retrieval"]["milvus"]["uri"] = str(cfg.resolve(cfg.retrieval.milvus.uri))
    for key, value in cfg.prompts.model_dump().items():
        data["prompts"][key] = str(cfg.resolve(value))
    if not isinstance(cfg.llm, OpenAILLMConfig) and cfg.llm.model_path:
        data["llm"]["model_path"] = str(cfg.resolve(cfg.llm.model_path))
    if not isinstance(cfg.llm, OpenAILLMConfig):
        data["llm"]["gguf_cache"] = str(cfg.resolve(cfg.llm.gguf_cache))
    data["history"]["folder"] = str(cfg.resolve(cfg.history.folder))
    data["library"]["dir"] = str(cfg.resolve(cfg.library.dir))
    data["ui"]["users_file"] = str(cfg.resolve(cfg.ui.users_file))
    if cfg.api.keys_file:
        data["api"]["keys_file"] = str(cfg.resolve(cfg.api.keys_file))
    for section, values in (overrides or {}).items():
        backend = values.get("backend") if section == "llm" else None
        if backend in LLM_SECTIONS and backend != data["llm"]["backend"]:  # the shared keys stay
            fields = LLM_SECTIONS[backend].model_fields
            data["llm"] = {k: v for k, v in data["llm"].items() if k in fields}
        data.setdefault(section, {}).update(values)
    return data


def write_config(cfg: Config, path: Path,
                 overrides: dict[str, dict[str, Any]] | None = None) -> Path:
    """Write :func:`portable_config` of ``cfg`` at ``path`` (atomically) and return ``path``."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(yaml.safe_dump(portable_config(cfg, overrides), sort_keys=False),
                   encoding="utf-8")
    tmp.replace(path)
    return path
