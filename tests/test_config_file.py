"""settings.config_file: a config written back for another process works from any folder."""

from __future__ import annotations

from pathlib import Path

from settings.config import load_config
from settings.config_file import write_config


def test_a_written_config_names_the_same_files_from_another_folder(tmp_path: Path) -> None:
    cfg = load_config()
    (tmp_path / "elsewhere").mkdir()
    path = write_config(cfg, tmp_path / "elsewhere" / "cfg.yaml",
                        {"history": {"folder": str(tmp_path / "h")}})
    again = load_config(path)
    assert again.root != cfg.root  # read from the other folder, yet every path is the same
    assert again.index_dir == cfg.index_dir
    assert [again.resolve(p) for p in again.corpus.paths] == [cfg.resolve(p)
                                                               for p in cfg.corpus.paths]
    assert again.resolve(again.prompts.answer) == cfg.resolve(cfg.prompts.answer)
    assert again.resolve(again.ui.users_file) == cfg.resolve(cfg.ui.users_file)
    assert again.resolve(again.history.folder) == tmp_path / "h"  # the override
    assert again.llm == cfg.llm.model_copy(update={"gguf_cache": str(cfg.resolve(
        cfg.llm.gguf_cache))})
    assert not list(path.parent.glob("*.tmp"))  # written whole, then moved into place
