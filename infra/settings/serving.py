"""``inference-platform:serving``: what the inference pods serve and how Triton + TensorRT-LLM serve it.

The model repository renderer, the engine builder (``prepare``), the image entrypoint and ``smoke``
all read this one section. Checks that need the serving accelerator (precision support, TP x PP per
node, memory fit) are plain functions of an EC2 instance-type name, ``accelerator_problems``, so the
node-pool section can run them for its pools; here they run when a ``nodePools`` section exposing
``instance_types(pool)`` is present (see ``NodePoolLookup``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import ClassVar, Literal, Protocol, runtime_checkable

from inference_platform.components import catalog
from inference_platform.components.catalog import CatalogError, models, speculative
from inference_platform.components.catalog.models import ModelArchitecture, UnknownModelError
from inference_platform.infra.settings.base import CheckContext, Problem, Section
from pydantic import Field, field_validator

DEFAULT_MODEL = "Llama-3.1-8B"
DEFAULT_NODE_POOL = "inference"
DEFAULT_MAX_BATCH_SIZE = 64
DEFAULT_MAX_INPUT_LEN = 4096
DEFAULT_MAX_SEQ_LEN = 8192
DEFAULT_MAX_NUM_TOKENS = 8192
DEFAULT_KV_FREE_FRACTION = models.KV_CACHE_FREE_MEMORY_FRACTION
DEFAULT_API_KEY_HEADER = "x-api-key"
# Where the Secrets Store CSI driver mounts the API key (the rollout mounts the secret here).
DEFAULT_API_KEY_FILE = "/mnt/secrets/inference/api-key"
# Every Triton API group except health: kubelet probes and load-balancer health checks carry no key.
DEFAULT_RESTRICTED_APIS = (
    "inference",
    "metadata",
    "model-config",
    "model-repository",
    "shared-memory",
    "statistics",
    "trace",
    "logging",
)
# The groups tritonserver accepts in --http-restricted-api / --grpc-restricted-protocol (2.51 --help).
TRITON_API_GROUPS = (*DEFAULT_RESTRICTED_APIS, "health")

Backend = Literal["tensorrtllm", "neuron"]
BACKEND_VENDORS: dict[str, str] = {"tensorrtllm": catalog.VENDOR_NVIDIA, "neuron": catalog.VENDOR_NEURON}
KvDtype = Literal["auto", "fp16", "bf16", "fp8", "int8"]

# HTTP/2 and HTTP/1.1 both accept a lower-case token; gRPC metadata keys must be lower case.
_HEADER = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
_S3_URI = re.compile(r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/[^\s]+$")
_SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")


@runtime_checkable
class NodePoolLookup(Protocol):
    """What the ``nodePools`` section must offer for the accelerator checks to run in settings."""

    def instance_types(self, pool: str) -> Sequence[str] | None:
        """EC2 instance types of ``pool`` (every one must run the model), or None if no such pool."""
        ...


class CustomArchitecture(Section):
    """A model the catalog (components/catalog/models.py) does not know, described by its shape."""

    layers: int = Field(gt=0)
    """Required. Transformer layers."""
    hidden_size: int = Field(gt=0)
    """Required. Model (embedding) width."""
    attention_heads: int = Field(gt=0)
    """Required. Query heads."""
    params_total: float = Field(gt=0)
    """Required. Parameters, all experts included (8.03e9 for Llama-3.1-8B)."""
    params_active: float | None = Field(default=None, gt=0)
    """Default: all parameters (dense). Parameters one token uses (MoE)."""
    attention: Literal["gqa", "mla"] = "gqa"
    """Default ``gqa``. ``mla`` needs kvLoraRank and ropeHeadDim; ``gqa`` needs kvHeads and headDim."""
    kv_heads: int = Field(default=0, ge=0)
    """Default 0. KV heads (GQA)."""
    head_dim: int = Field(default=0, ge=0)
    """Default 0. Per-head width (GQA)."""
    kv_lora_rank: int = Field(default=0, ge=0)
    """Default 0. Compressed KV width (MLA)."""
    rope_head_dim: int = Field(default=0, ge=0)
    """Default 0. Decoupled RoPE width (MLA)."""
    routed_experts: int = Field(default=0, ge=0)
    """Default 0 (dense). Routed experts per MoE layer."""
    active_experts: int = Field(default=0, ge=0)
    """Default 0. Routed experts per token."""
    shared_experts: int = Field(default=0, ge=0)
    """Default 0. Always-active experts."""
    vocab_size: int = Field(default=0, ge=0)
    """Default 0 (unknown: every parameter counts as quantizable body)."""
    tied_embeddings: bool = False
    """Default ``false``."""

    def to_architecture(self, name: str) -> ModelArchitecture:
        """The sizing model; raises ValueError naming every inconsistency."""
        return ModelArchitecture(name=name, source="serving.architecture", **self.model_dump())


class BatchingSettings(Section):
    scheduler_policy: Literal["max_utilization", "guaranteed_no_evict"] = "guaranteed_no_evict"
    """Default ``guaranteed_no_evict`` (a started request is never paused). ``max_utilization`` packs more
    requests per iteration and may pause some when the KV cache runs out (the LLM API's
    ``scheduler_config.capacity_scheduler_policy``)."""
    overlap_scheduler: bool | None = None
    """Default: on with TensorRT-LLM (the LLM API's ``disable_overlap_scheduler: false``: the CPU schedules
    step n+1 while the GPU runs step n). ``false`` turns it off; the Neuron path has none."""
    max_queue_delay_microseconds: int = Field(default=0, ge=0, le=1_000_000)
    """Default 0. How long Triton holds a request to batch it with others (0-1,000,000 us)."""
    max_queue_size: int = Field(default=0, ge=0)
    """Default 0 (unbounded). Requests queued beyond this are rejected at once instead of waiting."""


class KvCacheSettings(Section):
    free_gpu_mem_fraction: float = Field(default=DEFAULT_KV_FREE_FRACTION, gt=0, lt=1)
    """Default 0.9. Share of the accelerator memory left after weights that the paged KV cache takes."""
    enable_reuse: bool = True
    """Default ``true``. Reuse KV blocks of shared prompt prefixes (system prompts)."""
    enable_chunked_context: bool = True
    """Default ``true``. Chunked prefill (the LLM API's ``enable_chunked_prefill``): split long prompts
    into maxNumTokens chunks interleaved with decode steps."""
    dtype: KvDtype = "auto"
    """Default ``auto`` (the activation dtype, fp16). ``fp8`` halves the cache (sm89+ only); ``int8``."""
    max_tokens: int | None = Field(default=None, gt=0)
    """Default: no cap beyond freeGpuMemFraction. Upper bound on KV-cache tokens."""
    host_cache_fraction: float = Field(default=0, ge=0, le=0.5)
    """Default 0 (no host tier). Share of the serving container's memory (inference.resources.memoryGib,
    else the node's RAM from the catalog) that holds KV blocks evicted from accelerator memory, so a
    returning prefix is copied back instead of recomputed (the LLM API's ``kv_cache_config.host_cache_size``,
    split over the ranks of a node). Needs enableReuse; at most 0.5 (weights load through host memory)."""

    def resolved_dtype(self) -> str:
        return models.DEFAULT_KV_DTYPE if self.dtype == "auto" else self.dtype


class SpeculativeSettings(Section):
    retired_keys: ClassVar[Mapping[str, str]] = {
        "mode": "use speculative.method (none, eagle3, mtp, ngram, draft_model); Medusa and the engine's "
        "built-in EAGLE left with the TensorRT engine flow",
        "draftLength": "use speculative.maxDraftLen (the LLM API's max_draft_len)",
        "choices": "the LLM API drafts one linear chain of maxDraftLen tokens; draft trees are not served",
    }

    method: Literal[speculative.METHODS] = "none"  # type: ignore[valid-type]
    """Default ``none``. ``eagle3`` (an EAGLE-3 head, draftModel), ``draft_model`` (a smaller model of the
    same tokenizer, draftModel), ``mtp`` (the checkpoint's own multi-token-prediction layers, DeepSeek-style)
    or ``ngram`` (drafts from the prompt and the text so far). The LLM API's speculative_config."""
    max_draft_len: int | None = Field(default=None, ge=1, le=64)
    """Required with a method, 1-64. Candidate tokens drafted and verified per step (max_draft_len; for
    mtp the MTP modules used, num_nextn_predict_layers). Lower it, or set method none, when output garbles."""
    draft_model: str | None = None
    """Required with eagle3 and draft_model, refused otherwise. Hugging Face id or ``s3://`` URI of the
    EAGLE-3 head or draft model (the LLM API's speculative_model)."""
    max_matching_ngram_size: int = Field(default=2, ge=1, le=16)
    """Default 2 (the LLM API's default). ngram only: longest run of recent tokens looked up."""


class GuidedDecodingSettings(Section):
    backend: Literal["none", "xgrammar", "llguidance"] = "none"
    """Default ``none``. ``xgrammar`` or ``llguidance`` (the LLM API's guided_decoding_backend) lets requests
    constrain output: OpenAI ``response_format`` json_object / json_schema, and regex / EBNF guides
    (request inputs guided_decoding_guide_type and guided_decoding_guide)."""


class InstanceSettings(Section):
    preprocessing: int = Field(default=4, ge=1, le=64)
    """Default 4. Tokenizer instances (CPU)."""
    postprocessing: int = Field(default=4, ge=1, le=64)
    """Default 4. Instances of the ensemble's postprocessing (CPU): each calls the LLM step and
    detokenizes up to maxBatchSize streams at once."""
    bls: int = Field(default=4, ge=1, le=256)
    """Default 4. tensorrt_llm_bls instances: each holds one request at a time."""


class TokenizerSettings(Section):
    add_special_tokens: bool = True
    """Default ``true``. Prepend the tokenizer's BOS (Llama 3: <|begin_of_text|>)."""
    skip_special_tokens: bool = True
    """Default ``true``. Drop special tokens from text_output."""


class ServerSettings(Section):
    model_control_mode: Literal["none", "explicit"] = "none"
    """Default ``none`` (load the whole repository at start). ``explicit`` loads the five models by name
    and enables the load/unload API, which auth must then protect (model-repository)."""
    metrics_interval_ms: int = Field(default=1000, ge=100, le=60_000)
    """Default 1000. Prometheus metrics refresh period."""
    model_load_thread_count: int = Field(default=2, ge=1, le=32)
    """Default 2."""
    exit_timeout_seconds: int = Field(default=30, ge=0, le=3600)
    """Default 30. How long tritonserver waits for in-flight requests on SIGTERM (keep it below the
    pod's terminationGracePeriodSeconds)."""
    log_verbose: int = Field(default=0, ge=0, le=3)
    """Default 0."""


class AuthSettings(Section):
    enabled: bool = False
    """Default ``false``. Reject requests without the API key header in the pod itself; production needs
    this or API keys at the gateway (``edge.auth.enabled``). tritonserver takes the key only on its
    command line (no file or environment input), so it is visible in the container's /proc."""
    header: str = DEFAULT_API_KEY_HEADER
    """Default ``x-api-key``. Lower-case header name carrying the key (HTTP header and gRPC metadata)."""
    key_file: str | None = DEFAULT_API_KEY_FILE
    """Default ``/mnt/secrets/inference/api-key``: the file the secrets CSI driver mounts. The key is
    never written in a manifest or stack file."""
    key_env: str | None = None
    """Default unset. Environment variable holding the key instead of keyFile (a CSI-synced Secret)."""
    restricted_apis: list[str] = Field(default_factory=lambda: list(DEFAULT_RESTRICTED_APIS))
    """Default: every API group except ``health``. Allowed: inference, metadata, model-config,
    model-repository, shared-memory, statistics, trace, logging, health."""

    @field_validator("header")
    @classmethod
    def _header(cls, header: str) -> str:
        if not _HEADER.match(header):
            raise ValueError("expected a lower-case header name of letters, digits and '-'")
        return header

    @field_validator("restricted_apis")
    @classmethod
    def _apis(cls, apis: list[str]) -> list[str]:
        unknown = [a for a in apis if a not in TRITON_API_GROUPS]
        if unknown or not apis or len(set(apis)) != len(apis):
            raise ValueError(f"expected distinct API groups from {', '.join(TRITON_API_GROUPS)}")
        return apis


class SloSettings(Section):
    ttft_p50_ms: float = Field(default=500, gt=0)
    """Default 500. Median time to first token, measured by ``inferctl smoke``."""
    ttft_p95_ms: float = Field(default=2000, gt=0)
    """Default 2000. 95th-percentile time to first token."""
    itl_p50_ms: float = Field(default=50, gt=0)
    """Default 50. Median inter-token latency."""
    min_output_tokens_per_second: float = Field(default=20, gt=0)
    """Default 20. Median per-request output rate (tokens after the first / decode time)."""


class ArtifactSettings(Section):
    engine_uri: str | None = None
    """Default unset (the rollout passes it). ``s3://<bucket>/<prefix>/`` of the built engine version."""
    tokenizer_uri: str | None = None
    """Default unset. ``s3://...`` of the tokenizer version (tokenizer.json, its configs)."""
    engine_manifest_sha256: str | None = None
    """Default unset; required in production. SHA-256 (64 hex digits) of the engine version's manifest,
    as ``inferctl artifacts upload``/``prepare`` printed it. The server refuses any other manifest: a
    manifest replaced together with its files, or with an entry removed, is self-consistent in the
    bucket, and only a pin kept in the stack tells it from the published one."""
    tokenizer_manifest_sha256: str | None = None
    """Default unset; required in production. SHA-256 of the tokenizer version's manifest."""

    @field_validator("engine_uri", "tokenizer_uri")
    @classmethod
    def _uri(cls, uri: str | None) -> str | None:
        if uri is not None and not _S3_URI.match(uri):
            raise ValueError("expected s3://<bucket>/<prefix>/")
        return uri

    @field_validator("engine_manifest_sha256", "tokenizer_manifest_sha256")
    @classmethod
    def _sha256(cls, digest: str | None) -> str | None:
        if digest is not None and not _SHA256_HEX.match(digest):
            raise ValueError("expected the manifest's SHA-256 as 64 lower-case hex digits (no sha256: prefix)")
        return digest


class ServingSettings(Section):
    key: ClassVar[str] = "serving"
    retired_keys: ClassVar[Mapping[str, str]] = {
        "build": "no engine is built any more: TensorRT-LLM's LLM API loads the Hugging Face or ModelOpt "
        "(FP8/FP4) checkpoint itself; publish the checkpoint with `inferctl artifacts upload` and pin its "
        "manifest in serving.artifacts (docs/serving.md)",
    }

    node_pool: str = DEFAULT_NODE_POOL
    """Default ``inference``. Name of the node pool (nodePools section) whose nodes serve the model."""
    backend: Backend = "tensorrtllm"
    """Default ``tensorrtllm`` (NVIDIA GPUs). ``neuron`` serves on AWS Inferentia2/Trainium through the
    neuron_llm Python model; the pool's accelerators must match."""
    model: str = DEFAULT_MODEL
    """Default ``Llama-3.1-8B``. A name from components/catalog/models.py, or any name with ``architecture``."""
    architecture: CustomArchitecture | None = None
    """Default unset. Shape of a model the catalog does not know (required for such a model)."""
    checkpoint: str | None = None
    """Default unset. Hugging Face model id or local/s3 path of the weights ``prepare`` builds from."""
    precision: Literal[catalog.PRECISIONS] = catalog.BF16  # type: ignore[valid-type]
    """Default ``bf16``. One of fp32, fp16, bf16, fp8, fp4, int8, int8_weight_only, int4_awq,
    int4_weight_only; the pool's accelerator must run it (fp8 needs sm89+, fp4 sm100)."""
    tensor_parallel: int = Field(default=1, ge=1, le=64)
    """Default 1. Ranks each layer is split over (GPUs, or NeuronCores on Neuron)."""
    pipeline_parallel: int = Field(default=1, ge=1, le=16)
    """Default 1. Pipeline stages."""
    nodes: int = Field(default=1, ge=1, le=16)
    """Default 1 (single node). Nodes one replica spans (multi-node: a LeaderWorkerSet of this size);
    tensorParallel x pipelineParallel must divide evenly over them."""
    max_batch_size: int = Field(default=DEFAULT_MAX_BATCH_SIZE, ge=1, le=4096)
    """Default 64. Sequences in flight per replica (engine build and Triton max_batch_size)."""
    max_input_len: int = Field(default=DEFAULT_MAX_INPUT_LEN, ge=1)
    """Default 4096. Longest prompt in tokens."""
    max_seq_len: int = Field(default=DEFAULT_MAX_SEQ_LEN, ge=2)
    """Default 8192. Longest prompt + output in tokens; above maxInputLen."""
    max_num_tokens: int = Field(default=DEFAULT_MAX_NUM_TOKENS, ge=1)
    """Default 8192. Tokens one engine iteration processes (prefill chunk + decodes)."""
    max_beam_width: int = Field(default=1, ge=1, le=8)
    """Default 1 (sampling). Beam search width the engine is built for."""
    batching: BatchingSettings = Field(default_factory=BatchingSettings)
    kv_cache: KvCacheSettings = Field(default_factory=KvCacheSettings)
    streaming: bool = True
    """Default ``true``: decoupled models, /generate_stream and gRPC streaming (TTFT is measurable)."""
    exclude_input_in_output: bool = True
    """Default ``true``: text_output holds only the completion."""
    speculative: SpeculativeSettings = Field(default_factory=SpeculativeSettings)
    guided_decoding: GuidedDecodingSettings = Field(default_factory=GuidedDecodingSettings)
    instances: InstanceSettings = Field(default_factory=InstanceSettings)
    tokenizer: TokenizerSettings = Field(default_factory=TokenizerSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)
    auth: AuthSettings = Field(default_factory=AuthSettings)
    slo: SloSettings = Field(default_factory=SloSettings)
    artifacts: ArtifactSettings = Field(default_factory=ArtifactSettings)

    @property
    def world_size(self) -> int:
        """MPI ranks of one replica (TP x PP)."""
        return self.tensor_parallel * self.pipeline_parallel

    @property
    def ranks_per_node(self) -> int:
        return self.world_size // self.nodes

    @property
    def llm_model_name(self) -> str:
        """The repository's LLM step: NVIDIA's name on GPUs, ``neuron_llm`` on Neuron."""
        return "neuron_llm" if self.backend == "neuron" else "tensorrt_llm"

    def resolved_architecture(self) -> ModelArchitecture:
        """The sizing model: the custom block if given, else the catalog entry (raises if unknown)."""
        if self.architecture is not None:
            return self.architecture.to_architecture(self.model)
        return models.architecture(self.model)

    def problems(self, ctx: CheckContext) -> list[Problem]:
        out = self.shape_problems()
        if self.server.model_control_mode == "explicit" and getattr(ctx.sections.get("edge"), "domain", None):
            # Behind the public edge every client key reaches Triton: with explicit control one client could
            # unload the model for all (the edge admits the public API only, but gRPC names no path).
            out.append(
                Problem(
                    "serving.server.modelControlMode",
                    "got 'explicit' while edge.domain puts Triton behind the public edge: the load/unload API must "
                    "not be reachable with a client's key; use 'none' (the whole repository loads at start)",
                )
            )
        if ctx.production and not self.auth.enabled and not _gateway_authenticates(ctx):
            out.append(
                Problem(
                    "serving.auth.enabled",
                    "production serves a public API: set true, or authenticate at the gateway (edge.auth.enabled)",
                )
            )
        stripped = _gateway_key_header(ctx)
        if self.auth.enabled and stripped is not None and self.auth.header.lower() == stripped:
            out.append(
                Problem(
                    "serving.auth.enabled",
                    f"true behind a gateway that authenticates on {stripped!r} and strips it (edge.auth): Triton "
                    "would see no key and refuse every request; set false (the NetworkPolicy admits only the "
                    "gateway to Triton), or give Triton its own serving.auth.header that clients also send",
                )
            )
        if ctx.production:
            pins = (
                ("engineManifestSha256", self.artifacts.engine_manifest_sha256),
                ("tokenizerManifestSha256", self.artifacts.tokenizer_manifest_sha256),
            )
            for key, pin in pins:
                if pin is None:
                    out.append(
                        Problem(
                            f"serving.artifacts.{key}",
                            "missing; production serves only the pinned version: set the manifest SHA-256 "
                            "`inferctl artifacts upload` (or prepare) printed for it",
                        )
                    )
        pools = ctx.sections.get("nodePools")
        if isinstance(pools, NodePoolLookup) and not out:
            types = pools.instance_types(self.node_pool)
            if types is None:
                out.append(Problem("serving.nodePool", f"no node pool named {self.node_pool!r} in nodePools"))
            else:
                for instance_type in types:
                    out += accelerator_problems(self, instance_type)
        return out

    def shape_problems(self) -> list[Problem]:
        """Everything checkable without knowing the accelerator."""
        out: list[Problem] = []
        arch = self._architecture_problem(out)
        if arch is not None:
            problem = arch.tp_problem(self.tensor_parallel)
            if problem:
                out.append(Problem("serving.tensorParallel", f"got {self.tensor_parallel}; {arch.name}: {problem}"))
        if self.world_size % self.nodes:
            out.append(
                Problem(
                    "serving.nodes",
                    f"got {self.nodes}; tensorParallel x pipelineParallel = {self.world_size} ranks "
                    "must split evenly over the nodes",
                )
            )
        if self.max_input_len >= self.max_seq_len:
            out.append(
                Problem(
                    "serving.maxInputLen",
                    f"got {self.max_input_len}; must be below maxSeqLen ({self.max_seq_len}) to leave room for output",
                )
            )
        if not self.kv_cache.enable_chunked_context and self.max_num_tokens < self.max_input_len:
            out.append(
                Problem(
                    "serving.maxNumTokens",
                    f"got {self.max_num_tokens}; without kvCache.enableChunkedContext a whole prompt "
                    f"(maxInputLen {self.max_input_len}) must fit one iteration",
                )
            )
        out += self._speculative_problems()
        if self.backend == "tensorrtllm" and self.kv_cache.dtype not in ("auto", "fp8"):
            # KvCacheConfig.dtype: "auto" (the model's dtype) or "fp8" (TorchLlmArgs maps only fp8 onto the
            # quant config; llm_args.py, 1.2 line).
            out.append(
                Problem(
                    "serving.kvCache.dtype",
                    f"got {self.kv_cache.dtype!r}; TensorRT-LLM's LLM API takes auto (the model's dtype) or fp8",
                )
            )
        if self.kv_cache.host_cache_fraction and not self.kv_cache.enable_reuse:
            out.append(
                Problem(
                    "serving.kvCache.hostCacheFraction",
                    f"got {self.kv_cache.host_cache_fraction}; the host tier keeps blocks for reuse: "
                    "needs kvCache.enableReuse true",
                )
            )
        if self.backend == "neuron":
            out += self._neuron_problems()
        if self.slo.ttft_p95_ms < self.slo.ttft_p50_ms:
            out.append(
                Problem(
                    "serving.slo.ttftP95Ms", f"got {self.slo.ttft_p95_ms}; below ttftP50Ms ({self.slo.ttft_p50_ms})"
                )
            )
        if self.auth.enabled and (self.auth.key_file is None) == (self.auth.key_env is None):
            out.append(Problem("serving.auth", "set exactly one of keyFile and keyEnv"))
        explicit = self.server.model_control_mode == "explicit"
        if self.auth.enabled and explicit and "model-repository" not in self.auth.restricted_apis:
            out.append(
                Problem(
                    "serving.auth.restrictedApis",
                    "explicit model control opens the load/unload API: restrict model-repository",
                )
            )
        return out

    def _architecture_problem(self, out: list[Problem]) -> ModelArchitecture | None:
        try:
            return self.resolved_architecture()
        except UnknownModelError as err:
            out.append(Problem("serving.model", f"{err}; or describe it under serving.architecture"))
        except ValueError as err:
            out.append(Problem("serving.architecture", str(err)))
        return None

    def _speculative_problems(self) -> list[Problem]:
        spec = self.speculative
        key = "serving.speculative"
        out = []
        if spec.method != "none" and spec.max_draft_len is None:
            out.append(Problem(f"{key}.maxDraftLen", f"missing; required with method {spec.method}"))
        if spec.method == "none" and spec.max_draft_len is not None:
            out.append(Problem(f"{key}.maxDraftLen", "set without a speculative method"))
        if spec.method in speculative.NEEDS_DRAFT_MODEL and spec.draft_model is None:
            out.append(
                Problem(
                    f"{key}.draftModel",
                    f"missing; method {spec.method} drafts with a second checkpoint (source: {speculative.SOURCE})",
                )
            )
        if spec.method not in speculative.NEEDS_DRAFT_MODEL and spec.draft_model is not None:
            out.append(
                Problem(f"{key}.draftModel", f"set with method {spec.method}; only eagle3 and draft_model use one")
            )
        if spec.method != "ngram" and "max_matching_ngram_size" in spec.model_fields_set:
            out.append(Problem(f"{key}.maxMatchingNgramSize", f"set with method {spec.method}; ngram only"))
        return out

    def _neuron_problems(self) -> list[Problem]:
        out = []
        if self.speculative.method != "none":
            out.append(Problem("serving.speculative.method", f"{self.speculative.method} is not available on Neuron"))
        if self.guided_decoding.backend != "none":
            out.append(
                Problem("serving.guidedDecoding.backend", f"{self.guided_decoding.backend} is not available on Neuron")
            )
        if self.kv_cache.host_cache_fraction:
            out.append(Problem("serving.kvCache.hostCacheFraction", "the Neuron path has no host KV-cache tier"))
        if self.batching.overlap_scheduler:
            out.append(Problem("serving.batching.overlapScheduler", "true: the Neuron path has no overlap scheduler"))
        if self.max_beam_width > 1:
            out.append(Problem("serving.maxBeamWidth", "beam search is not available on Neuron"))
        if self.nodes > 1:
            out.append(Problem("serving.nodes", "the Neuron path serves from one node"))
        # The Neuron path batches statically (inference_image/runtime/neuron_engine.py): settings that only
        # mean something to TensorRT-LLM's in-flight batcher would promise behaviour it does not have.
        static = "the Neuron path batches statically (no in-flight batching; README, Neuron serving)"
        if self.batching.scheduler_policy != "guaranteed_no_evict":
            out.append(Problem("serving.batching.schedulerPolicy", f"{self.batching.scheduler_policy}: {static}"))
        if self.kv_cache.enable_reuse:
            out.append(Problem("serving.kvCache.enableReuse", f"true: no KV-cache reuse across requests; {static}"))
        if self.kv_cache.enable_chunked_context:
            out.append(Problem("serving.kvCache.enableChunkedContext", f"true: no chunked prefill; {static}"))
        return out


def _gateway_authenticates(ctx: CheckContext) -> bool:
    """Whether the stack has an edge (``edge.domain``) that checks API keys at the gateway (then the
    in-pod key is optional)."""
    edge = ctx.sections.get("edge")
    has_edge = getattr(edge, "domain", None) is not None
    return has_edge and bool(getattr(getattr(edge, "auth", None), "enabled", False))


def _gateway_key_header(ctx: CheckContext) -> str | None:
    """The header the gateway reads the client's key from and strips before Triton (None: no gateway auth)."""
    if not _gateway_authenticates(ctx):
        return None
    return str(getattr(ctx.sections["edge"].auth, "header", "x-api-key")).lower()


def accelerator_problems(serving: ServingSettings, instance_type: str) -> list[Problem]:
    """Why ``instance_type`` cannot serve ``serving`` (empty when it can).

    Checks: an accelerator of the backend's vendor; the precision and KV-cache dtype on it; TP x PP
    within the node's GPUs/NeuronCores (times ``nodes``); the weights and at least one maxSeqLen
    sequence of KV cache in each unit's memory. Problems name the serving keys to change.
    """
    try:
        node = catalog.instance(instance_type)
    except CatalogError as err:
        return [Problem("serving.nodePool", str(err))]
    accel = node.accelerator
    vendor = BACKEND_VENDORS[serving.backend]
    if accel is None or node.vendor != vendor:
        return [
            Problem(
                "serving.backend",
                f"{serving.backend} needs {vendor} accelerators; {node.name} has {node.accelerator_model or 'none'}",
            )
        ]
    where = f"{node.name} ({accel.model}, {accel.architecture})"
    out = []
    for key, dtype in (
        ("serving.precision", serving.precision),
        ("serving.kvCache.dtype", serving.kv_cache.resolved_dtype()),
    ):
        if not catalog.supports_precision(node, dtype):
            out.append(Problem(key, f"{dtype} does not run on {where}; it runs {', '.join(sorted(node.precisions))}"))
    per_node = node.max_tensor_parallel
    unit = "NeuronCores" if node.vendor == catalog.VENDOR_NEURON else "GPUs"
    if serving.ranks_per_node > per_node:
        hint = "" if serving.nodes > 1 else " and no multi-node set (serving.nodes: 1)"
        out.append(
            Problem(
                "serving.tensorParallel",
                f"tensorParallel x pipelineParallel = {serving.world_size} ranks over {serving.nodes} node(s) needs "
                f"{serving.ranks_per_node} {unit} per node; {node.name} has {per_node}{hint}",
            )
        )
    if not out:
        out += _memory_problems(serving, node)
    return out


def _memory_problems(serving: ServingSettings, node: catalog.InstanceType) -> list[Problem]:
    """The weights and ``maxBatchSize x maxSeqLen`` tokens of KV cache on each tensor-parallel unit.

    The engine admits maxBatchSize sequences of up to maxSeqLen tokens, and the default scheduler
    (guaranteed_no_evict) admits a request only with KV blocks for its whole length, so a cache smaller
    than the full batch at full length silently caps concurrency below maxBatchSize (or, under
    max_utilization, pauses requests mid-stream). ``models.min_tensor_parallel`` with the configured
    values names the TP that would hold it."""
    accel = node.accelerator
    assert accel is not None  # accelerator_problems checked it
    try:
        arch = serving.resolved_architecture()
    except (UnknownModelError, ValueError):
        return []  # reported by shape_problems
    units = serving.world_size
    kv_dtype = serving.kv_cache.resolved_dtype()
    fraction = serving.kv_cache.free_gpu_mem_fraction
    unit_memory = accel.memory_bytes / accel.tensor_parallel_units
    weights = models.weight_bytes(arch, serving.precision) / units
    kv_per_token = models.kv_bytes_per_token(arch, kv_dtype) / (
        arch.kv_shards(serving.tensor_parallel) * serving.pipeline_parallel
    )
    kv_space = (unit_memory - weights) * fraction
    tokens = int(kv_space // kv_per_token) if kv_space > 0 else 0
    if tokens < serving.max_seq_len:
        return [
            Problem(
                "serving.tensorParallel",
                f"{arch.name} at {serving.precision} over {units} unit(s) of {node.name}: {weights / 1e9:.1f} GB of "
                f"weights per unit leave KV cache for {tokens} tokens, less than one maxSeqLen sequence "
                f"({serving.max_seq_len}); raise tensorParallel/pipelineParallel or lower the precision",
            )
        ]
    needed = serving.max_batch_size * serving.max_seq_len
    out = []
    if tokens < needed:
        fits = tokens // serving.max_seq_len
        out.append(
            Problem(
                "serving.tensorParallel",
                f"got {serving.tensor_parallel}; {arch.name} {serving.precision} with {kv_dtype} KV cache over "
                f"{units} unit(s) of {node.name} leaves each {(kv_space / 1e9):.1f} GB of KV cache "
                f"(freeGpuMemFraction {fraction:g}): {tokens:,} tokens, but maxBatchSize {serving.max_batch_size} x "
                f"maxSeqLen {serving.max_seq_len} = {needed:,} need {needed * kv_per_token / 1e9:.1f} GB; "
                f"{_tp_hint(serving, arch, node)}, or lower maxBatchSize to {fits} or less",
            )
        )
    cap = serving.kv_cache.max_tokens
    if cap is not None and cap < needed:
        out.append(
            Problem(
                "serving.kvCache.maxTokens",
                f"got {cap}; below maxBatchSize {serving.max_batch_size} x maxSeqLen {serving.max_seq_len} = "
                f"{needed}: the cache would admit fewer sequences than the engine is built for",
            )
        )
    return out


def _tp_hint(serving: ServingSettings, arch: ModelArchitecture, node: catalog.InstanceType) -> str:
    """What single-node TP holds the configured batch (models.min_tensor_parallel), or that none does."""
    if serving.pipeline_parallel > 1 or serving.nodes > 1:
        return "raise tensorParallel x pipelineParallel"
    try:
        tp = models.min_tensor_parallel(
            arch,
            serving.precision,
            node,
            0.0,
            serving.max_seq_len,
            serving.max_batch_size,
            serving.kv_cache.resolved_dtype(),
            kv_free_fraction=serving.kv_cache.free_gpu_mem_fraction,
        )
    except models.SizingError:
        return f"no tensorParallel on one {node.name} holds it"
    return f"tensorParallel {tp} holds it on {node.name}"
