"""The one typed settings object.

Built once at the edge (``serve``, ``worker``, ``migrate``, ``token``, the test session) and
passed down; nothing below the edge reads the environment. Variables use the ``FORTEMI_``
prefix, except the standard ones every deployment tool knows (``DATABASE_URL``,
``REDIS_URL``, ``OIDC_*``, ``OLLAMA_HOST``).
"""

from __future__ import annotations

import ipaddress
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Literal

import platformdirs
from pydantic import (
    AliasChoices,
    Field,
    SecretStr,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from fortemi.platform.urls import check_issuer_url

__all__ = ["JWT_ALGORITHMS", "Environment", "Settings"]

# The asymmetric JWS algorithms a token may be signed with: the default allow-list, the
# bound on a configured one, and what a published key may name. RFC 8725 §3.1/3.2: the
# server fixes the algorithms; HMAC and "none" would let a token signed with a public key
# (or not at all) pass.
JWT_ALGORITHMS: tuple[str, ...] = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)


class Environment(StrEnum):
    DEVELOPMENT = "development"
    PRODUCTION = "production"


def _default_home() -> Path:
    return Path(platformdirs.user_data_dir("fortemi", appauthor=False))


def _alias(name: str) -> AliasChoices:
    return AliasChoices(name)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="FORTEMI_", extra="forbid", frozen=True, populate_by_name=True
    )

    # -- runtime ----------------------------------------------------------------------
    home: Path = Field(default_factory=_default_home, description="Data directory")
    env: Environment = Environment.DEVELOPMENT
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    public_url: str | None = Field(
        default=None,
        description="Base URL clients use; the local issuer's identifier. Default http://HOST:PORT",
    )
    log_level: str = "INFO"
    log_format: Literal["text", "json"] = Field(
        default="text", description="Log lines as text, or one JSON object per line"
    )
    metrics_token: SecretStr | None = Field(
        default=None,
        description="Bearer token GET /metrics requires; unset: /metrics answers loopback only",
    )

    # -- backing services (standard names, no prefix) ------------------------------------
    database_url: SecretStr | None = Field(default=None, validation_alias=_alias("DATABASE_URL"))
    redis_url: SecretStr | None = Field(default=None, validation_alias=_alias("REDIS_URL"))
    db_pool_min: int = Field(default=2, ge=1)
    db_pool_max: int = Field(default=10, ge=1)
    db_statement_timeout_ms: int = Field(default=30_000, ge=0)

    # -- authentication ----------------------------------------------------------------
    oidc_issuer: str | None = Field(default=None, validation_alias=_alias("OIDC_ISSUER"))
    oidc_audience: str = Field(default="fortemi", validation_alias=_alias("OIDC_AUDIENCE"))
    oidc_groups_claim: str = Field(default="groups", validation_alias=_alias("OIDC_GROUPS_CLAIM"))
    oidc_roles_claim: str = Field(default="roles", validation_alias=_alias("OIDC_ROLES_CLAIM"))
    oidc_permissions_claim: str = Field(
        default="permissions", validation_alias=_alias("OIDC_PERMISSIONS_CLAIM")
    )
    oidc_algorithms: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: list(JWT_ALGORITHMS),
        validation_alias=_alias("OIDC_ALGORITHMS"),
    )
    oidc_leeway_seconds: int = Field(
        default=30, ge=0, le=300, validation_alias=_alias("OIDC_LEEWAY_SECONDS")
    )
    oidc_jwks_cache_seconds: int = Field(
        default=3600, ge=0, validation_alias=_alias("OIDC_JWKS_CACHE_SECONDS")
    )
    oidc_jwks_min_refresh_seconds: float = Field(
        default=30.0,
        ge=0,
        description="Least time between two JWKS refetches on an unknown kid",
        validation_alias=_alias("OIDC_JWKS_MIN_REFRESH_SECONDS"),
    )
    oidc_http_timeout_seconds: float = Field(
        default=5.0, gt=0, validation_alias=_alias("OIDC_HTTP_TIMEOUT_SECONDS")
    )
    oidc_token_cache_seconds: float = Field(
        default=60.0,
        ge=0,
        description="How long a validated token is remembered (never past its exp; 0: off)",
        validation_alias=_alias("OIDC_TOKEN_CACHE_SECONDS"),
    )
    oidc_require_azp: bool = Field(
        default=True,
        description="Access tokens must carry azp (Authentik marks them so)",
        validation_alias=_alias("OIDC_REQUIRE_AZP"),
    )

    # -- authorization -----------------------------------------------------------------
    policy_dir: Path = Field(
        default=Path("policies"),
        description="YAML access policies; when the default is absent, the bundled set",
    )
    policy_refresh_seconds: float = Field(
        default=1.0, gt=0, description="How often a replica checks for policy changes"
    )

    # -- jobs --------------------------------------------------------------------------
    worker_threads: int = Field(
        default=2, ge=1, description="Job threads `serve` runs in-process (all tiers)"
    )
    worker_lease_seconds: float = Field(default=60.0, gt=0)
    worker_grace_seconds: float = Field(default=30.0, ge=0)
    worker_idle_poll_ms: int = Field(default=100, ge=10, le=5000)
    job_maintenance_interval_seconds: float = Field(default=5.0, gt=0)
    job_resend_after_seconds: float = Field(default=30.0, gt=0)

    # -- webhooks and secrets ------------------------------------------------------------
    secret_key: SecretStr | None = Field(
        default=None,
        description="Base64 of 32 bytes sealing stored secrets; share it across replicas. "
        "Default: a key file in the data directory",
    )
    audit_key: SecretStr | None = Field(
        default=None,
        description="Base64 of 32 bytes keying the audit log's hash chain; share it across "
        "replicas and keep it out of the database. Default: a key file in the data directory",
    )
    audit_retired_keys: SecretStr | None = Field(
        default=None,
        description="Comma-separated base64 audit keys used before a rotation; they only verify",
    )
    webhook_allowed_networks: Annotated[list[str], NoDecode] = Field(
        default=[],
        description="CIDRs webhooks may reach although private (comma-separated); "
        "by default only public addresses",
    )
    webhook_timeout_seconds: float = Field(default=10.0, gt=0, le=120)
    webhook_max_attempts: int = Field(default=8, ge=1, le=50)

    # -- inference (embeddings and generation; see fortemi/inference) ---------------------
    ollama_host: str | None = Field(
        default=None,
        description="Ollama server for embeddings and generation; unset: the local CPU embedder",
        validation_alias=_alias("OLLAMA_HOST"),
    )
    ollama_embed_model: str = "nomic-embed-text"
    ollama_fast_model: str = "qwen3.5:9b"
    ollama_standard_model: str = "qwen3.5:27b"
    openai_base_url: str | None = Field(
        default=None, description="An OpenAI-compatible server, used when OLLAMA_HOST is unset"
    )
    openai_api_key: SecretStr | None = None
    openai_embed_model: str = "text-embedding-3-small"
    openai_generate_model: str = "gpt-4o-mini"
    inference_timeout_seconds: float = Field(default=120.0, gt=0)
    embed_batch_size: int = Field(default=32, ge=1, le=2048)
    local_embed_model_dir: Path | None = Field(
        default=None, description="Model folder of the local embedder; default: the installed one"
    )
    local_embed_threads: int | None = Field(
        default=None, ge=1, description="Threads of the local embedder; default: usable cores"
    )

    # -- document extraction services (see fortemi/documents/extraction) ----------------
    vision_model: str | None = Field(
        default=None,
        description="Ollama vision model describing images (needs OLLAMA_HOST); unset: none",
    )
    ocr_model: str | None = Field(
        default=None,
        description="Ollama vision model reading scanned PDF pages (needs OLLAMA_HOST)",
    )
    transcription_url: str | None = Field(
        default=None,
        description="Whisper-compatible server (POST /v1/audio/transcriptions); unset: none",
    )
    transcription_model: str = "whisper-1"
    transcription_api_key: SecretStr | None = None

    @field_validator("ollama_host", "openai_base_url", "transcription_url", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: object) -> object:
        # `OLLAMA_HOST=` in a compose file means "no Ollama", not a server named "".
        if isinstance(value, str):
            return value.strip() or None
        return value

    @field_validator("openai_base_url", "transcription_url")
    @classmethod
    def _http_base_url(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            name = f"FORTEMI_{(info.field_name or '').upper()}"
            raise ValueError(f"{name} must be an http(s) URL, not {value!r}")
        return value

    @field_validator("vision_model", "ocr_model", mode="before")
    @classmethod
    def _blank_model_is_unset(cls, value: object) -> object:
        if isinstance(value, str):
            return value.strip() or None
        return value

    # -- end of inference ----------------------------------------------------------------

    # -- search ------------------------------------------------------------------------
    embed_concepts: bool = Field(
        default=False,
        description="Embed each chunk with its note's concept paths (a new embedding set)",
    )
    chunk_size: int = Field(
        default=1000, ge=100, le=20_000, description="Target characters per embedded chunk"
    )
    lexical_pruning: bool = Field(
        default=True,
        description="Rank lexically by the pruned top-k path (off: score every posting)",
    )
    lexical_segment_postings: int = Field(
        default=20_000_000,
        ge=0,
        le=2_000_000_000,
        description="Postings of the memories searched lately held in RAM for the lexical "
        "segment path, about 8 bytes each (0: every query reads the index tables)",
    )
    query_embedding_cache: int = Field(
        default=1024, ge=0, le=1_000_000, description="Query vectors kept for repeated queries"
    )
    chunk_overlap: int = Field(
        default=100, ge=0, le=5000, description="Characters repeated when a paragraph is split"
    )

    # -- wiki retrieval plans (see fortemi/wiki/retrieve) ---------------------------------
    wiki_documents: int = Field(
        default=20, ge=1, le=200, description="Notes TF-IDF routing keeps per question"
    )
    wiki_top_chunks: int = Field(
        default=10, ge=1, le=100, description="Most chunks a plan selects before the budget"
    )
    wiki_tfidf_weight: float = Field(
        default=0.4, ge=0.0, le=1.0, description="TF-IDF leg's weight in the chunks' RRF"
    )
    wiki_semantic_weight: float = Field(
        default=0.6, ge=0.0, le=1.0, description="Semantic leg's weight in the chunks' RRF"
    )
    wiki_metadata_boost: float = Field(
        default=1.0,
        ge=0.0,
        le=10.0,
        description="Weight of a chunk's heading, first sentence and key terms matching",
    )
    wiki_min_relevance: float = Field(
        default=0.3,
        ge=-1.0,
        le=1.0,
        description="Least cosine (question to chunk) of a selected chunk",
    )
    wiki_relative_relevance: float = Field(
        default=0.15,
        ge=0.0,
        le=2.0,
        description="A selected chunk's cosine is at most this far below the best chunk's",
    )
    wiki_min_lexical_relevance: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="Without vectors: least share of the question's IDF weight in a chunk",
    )
    wiki_duplicate_jaccard: float = Field(
        default=0.7,
        gt=0.0,
        le=1.0,
        description="Jaccard of 3-word shingles at which a chunk is a near-duplicate",
    )

    # -- answers (see fortemi/wiki/answers) -----------------------------------------------
    answer_max_tokens: int = Field(
        default=1024, ge=16, le=32_768, description="Most tokens of an answer, first call"
    )
    answer_retry_max_tokens: int = Field(
        default=4096,
        ge=16,
        le=131_072,
        description="Most tokens of the second call, made when the first was cut off",
    )
    answer_temperature: float = Field(
        default=0.0, ge=0.0, le=2.0, description="Sampling temperature of answers (0: greedy)"
    )

    # -- concept tagging (see fortemi/graph/tagging) --------------------------------------
    tagging_label_similarity: float = Field(
        default=0.35,
        ge=0.0,
        le=1.0,
        description="Cosine to the note above which the CPU tier reuses an existing concept",
    )
    tagging_phrase_similarity: float = Field(
        default=0.3, ge=0.0, le=1.0, description="Least cosine to the note of a new keyphrase"
    )
    tagging_related_floor: float = Field(
        default=0.2, ge=0.0, le=1.0, description="Least confidence of an inferred related edge"
    )

    # -- graph: automatic links and maintenance -----------------------------------------
    link_min_score: float = Field(
        default=0.7, ge=0.0, le=1.0, description="Least score of an automatic link (else fallback)"
    )
    link_k_min: int = Field(default=5, ge=1, le=100, description="Least links per note (k)")
    link_k_max: int = Field(default=15, ge=1, le=100, description="Most links per note (k)")
    graph_gamma: float = Field(
        default=1.0, gt=0.0, le=10.0, description="Exponent after min-max of semantic scores"
    )
    graph_segment_links: int = Field(
        default=1_000_000,
        ge=0,
        le=500_000_000,
        description="Links of the memories walked lately held in RAM for the traversal "
        "segment path, about 140 bytes each (0: every walk reads the link tables)",
    )
    graph_resolution: float = Field(
        default=1.0, gt=0.0, le=10.0, description="Louvain resolution (higher: more communities)"
    )
    graph_backfill_on_start: bool = Field(
        default=True, description="Each worker start sweeps every memory for missing graph work"
    )
    graph_backfill_limit: int = Field(
        default=1000, ge=1, le=100_000, description="Notes a backfill step looks at per kind"
    )

    # -- attachments: where their bytes are kept --------------------------------------
    blob_store: Literal["local", "s3"] = Field(
        default="local", description="local: files under FORTEMI_HOME/blobs; s3: an object store"
    )
    s3_bucket: str | None = None
    s3_prefix: str = Field(default="", description="Key prefix inside the bucket")
    s3_endpoint_url: str | None = Field(
        default=None, description="An S3-compatible endpoint (MinIO, Ceph); unset: AWS"
    )
    s3_region: str | None = None
    s3_access_key_id: SecretStr | None = None
    s3_secret_access_key: SecretStr | None = None

    # -- limits ------------------------------------------------------------------------
    max_note_bytes: int = Field(default=1_048_576, ge=1)
    max_request_bytes: int = Field(default=8 * 1_048_576, ge=1024)
    max_upsert_batch: int = Field(default=500, ge=1)
    max_upload_bytes: int = Field(
        default=50 * 1_048_576, ge=1, description="Largest file an upload may attach"
    )
    max_page_size: int = Field(default=100, ge=1)
    max_query_depth: int = Field(default=12, ge=1)
    max_aliases: int = Field(default=30, ge=1)
    max_query_tokens: int = Field(default=2000, ge=10)
    max_query_cost: int = Field(
        default=25_000,
        ge=1,
        description="Most an operation may cost: list sizes times fields, large text weighing 100",
    )
    max_list_items: int = Field(
        default=1000, ge=1, description="Most items in one list argument or variable"
    )
    max_response_bytes: int = Field(
        default=64 * 1_048_576, ge=1024, description="Largest HTTP response body"
    )
    max_ws_message_bytes: int = Field(
        default=2 * 1_048_576, ge=1024, description="Largest WebSocket message a client may send"
    )
    graphql_cache_size: int = Field(default=256, ge=1)
    graphql_introspection: bool = Field(
        default=False, description="Allow introspection in production (always on otherwise)"
    )
    ws_max_subscriptions: int = Field(default=20, ge=1)

    # -- derived -----------------------------------------------------------------------
    migrations_dir: Path | None = None

    @field_validator("oidc_issuer")
    @classmethod
    def _secure_issuer(cls, value: str | None) -> str | None:
        if value is not None:
            check_issuer_url(value)
        return value

    @model_validator(mode="after")
    def _overlap_below_half_a_chunk(self) -> Settings:
        if self.chunk_overlap * 2 >= self.chunk_size:
            raise ValueError("FORTEMI_CHUNK_OVERLAP must be under half of FORTEMI_CHUNK_SIZE")
        return self

    @model_validator(mode="after")
    def _answer_retry_not_smaller(self) -> Settings:
        if self.answer_retry_max_tokens < self.answer_max_tokens:
            raise ValueError(
                "FORTEMI_ANSWER_RETRY_MAX_TOKENS must not be below FORTEMI_ANSWER_MAX_TOKENS "
                "(the second call is for an answer the first limit cut off)"
            )
        return self

    @model_validator(mode="after")
    def _link_k_bounds_in_order(self) -> Settings:
        if self.link_k_min > self.link_k_max:
            raise ValueError("FORTEMI_LINK_K_MIN must not exceed FORTEMI_LINK_K_MAX")
        return self

    @field_validator("webhook_allowed_networks", mode="before")
    @classmethod
    def _split_networks(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("webhook_allowed_networks")
    @classmethod
    def _valid_networks(cls, value: list[str]) -> list[str]:
        for cidr in value:
            try:
                ipaddress.ip_network(cidr, strict=False)
            except ValueError as exc:
                raise ValueError(
                    f"FORTEMI_WEBHOOK_ALLOWED_NETWORKS: {cidr!r} is not a CIDR"
                ) from exc
        return value

    @field_validator("oidc_algorithms", mode="before")
    @classmethod
    def _split_algorithms(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("oidc_algorithms")
    @classmethod
    def _asymmetric_only(cls, value: list[str]) -> list[str]:
        bad = [alg for alg in value if alg not in JWT_ALGORITHMS]
        if bad or not value:
            raise ValueError(f"OIDC_ALGORITHMS accepts asymmetric algorithms only, got {bad}")
        return value

    @property
    def policy_path(self) -> Path:
        """The policy folder in force: the configured one, else the bundled example set."""
        if self.policy_dir.is_dir() or self.policy_dir != Path("policies"):
            return self.policy_dir
        bundled = Path(__file__).resolve().parents[1] / "_data" / "policies"
        checkout = Path(__file__).resolve().parents[2] / "policies"
        return checkout if checkout.is_dir() else bundled

    @property
    def is_production(self) -> bool:
        return self.env is Environment.PRODUCTION

    @property
    def base_url(self) -> str:
        return (self.public_url or f"http://{self.host}:{self.port}").rstrip("/")

    @property
    def uses_local_issuer(self) -> bool:
        return self.oidc_issuer is None

    @property
    def issuer(self) -> str:
        """The issuer identifier tokens must carry, exactly as configured.

        Issuers compare as exact strings (OIDC Core §3.1.3.7), and Authentik's end in a
        slash (``https://host/application/o/<slug>/``), so ``OIDC_ISSUER`` is not normalised.
        """
        return self.oidc_issuer if self.oidc_issuer is not None else self.base_url

    @property
    def embedded_database(self) -> bool:
        return self.database_url is None

    @property
    def embedded_redis(self) -> bool:
        return self.redis_url is None
