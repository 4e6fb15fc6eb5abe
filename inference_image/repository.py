"""Render the Triton model repository of a stack from its typed ``serving`` settings.

Five models, TensorRT-LLM's in-flight batching layout: ``preprocessing`` -> LLM step
(``tensorrt_llm``, or ``neuron_llm`` on Neuron) -> ``postprocessing``, wired by ``ensemble``, and
``tensorrt_llm_bls`` offering the same contract as one Python model. Every value comes from the
settings (``repository_values``); every template is rendered strictly (``inference_image.render``) and
all problems of all models are reported together. The repository appears at its destination only
once complete: it is written beside it and renamed into place, so Triton never sees a partial model.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from inference_image.render import Fragment, ParameterBlocks, RenderError, Value, render
from inference_image.testing.cpu_llm.options import StandIn
from infra.settings.serving import ServingSettings

VERSION_DIR = "1"
TEMPLATE_FILE = "config.pbtxt.tmpl"
CODE_FILE = "model.py"
XGRAMMAR_TOKENIZER_INFO = "xgrammar_tokenizer_info.json"
_TEMPLATES = "inference_image.model_repository"
_STAND_IN = "inference_image.testing.cpu_llm"


@dataclass(frozen=True)
class ModelPlan:
    """One model of the repository: its name, template, Python code (if any) and values."""

    name: str
    package: str
    """Package holding ``config.pbtxt.tmpl`` (and ``model.py`` for Python models)."""
    values: dict[str, Value]

    @property
    def source(self) -> str:
        return f"{self.package.rsplit('.', 1)[-1]}/{TEMPLATE_FILE}"

    def template(self) -> str:
        return _read(self.package, TEMPLATE_FILE)

    def code(self) -> str | None:
        path = resources.files(self.package) / CODE_FILE
        return path.read_text(encoding="utf-8") if path.is_file() else None


def plan_repository(
    serving: ServingSettings, *, engine_dir: Path, tokenizer_dir: Path, stand_in: StandIn | None = None
) -> list[ModelPlan]:
    """The models to render and the typed values of each, in dependency order."""
    llm_io = Fragment(_read(_TEMPLATES, "llm_io.pbtxt"))
    client_io = Fragment(_read(_TEMPLATES, "client_io.pbtxt"))
    batch = serving.max_batch_size
    queue: dict[str, Value] = {
        "max_queue_delay_microseconds": serving.batching.max_queue_delay_microseconds,
        "max_queue_size": serving.batching.max_queue_size,
    }
    llm = serving.llm_model_name
    plans = [
        ModelPlan(
            "preprocessing",
            f"{_TEMPLATES}.preprocessing",
            {
                "max_batch_size": batch,
                **queue,
                "tokenizer_dir": str(tokenizer_dir),
                "add_special_tokens": serving.tokenizer.add_special_tokens,
                "max_input_len": serving.max_input_len,
                "max_seq_len": serving.max_seq_len,
                "instance_count": serving.instances.preprocessing,
            },
        ),
        _llm_plan(serving, llm_io, queue, engine_dir=engine_dir, tokenizer_dir=tokenizer_dir, stand_in=stand_in),
        ModelPlan(
            "postprocessing",
            f"{_TEMPLATES}.postprocessing",
            {
                "max_batch_size": batch,
                "tokenizer_dir": str(tokenizer_dir),
                "skip_special_tokens": serving.tokenizer.skip_special_tokens,
                "instance_count": serving.instances.postprocessing,
            },
        ),
        ModelPlan(
            "ensemble",
            f"{_TEMPLATES}.ensemble",
            {"max_batch_size": batch, "client_io": client_io, "llm_model_name": llm},
        ),
        ModelPlan(
            "tensorrt_llm_bls",
            f"{_TEMPLATES}.tensorrt_llm_bls",
            {
                "max_batch_size": batch,
                "decoupled": serving.streaming,
                "client_io": client_io,
                "llm_model_name": llm,
                "tokenizer_dir": str(tokenizer_dir),
                "skip_special_tokens": serving.tokenizer.skip_special_tokens,
                "instance_count": serving.instances.bls,
            },
        ),
    ]
    return plans


def render_configs(plans: list[ModelPlan]) -> dict[str, str]:
    """Model name -> rendered config.pbtxt; one RenderError naming every problem of every model."""
    problems: list[str] = []
    rendered: dict[str, str] = {}
    for plan in plans:
        try:
            rendered[plan.name] = render(plan.template(), plan.values, source=plan.source)
        except RenderError as err:
            problems += err.problems
    if problems:
        raise RenderError(problems)
    return rendered


def render_repository(
    serving: ServingSettings,
    destination: Path,
    *,
    engine_dir: Path,
    tokenizer_dir: Path,
    stand_in: StandIn | None = None,
) -> list[str]:
    """Write the complete repository to ``destination`` (which must not exist); returns model names."""
    plans = plan_repository(serving, engine_dir=engine_dir, tokenizer_dir=tokenizer_dir, stand_in=stand_in)
    configs = render_configs(plans)
    if destination.exists():
        raise RenderError([f"{destination} already exists; render into a new directory"])
    destination.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", dir=destination.parent))
    try:
        for plan in plans:
            model_dir = staging / plan.name
            (model_dir / VERSION_DIR).mkdir(parents=True)
            (model_dir / "config.pbtxt").write_text(configs[plan.name], encoding="utf-8")
            code = plan.code()
            if code is not None:
                (model_dir / VERSION_DIR / CODE_FILE).write_text(code, encoding="utf-8")
        os.rename(staging, destination)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return [plan.name for plan in plans]


def _llm_plan(
    serving: ServingSettings,
    llm_io: Fragment,
    queue: dict[str, Value],
    *,
    engine_dir: Path,
    tokenizer_dir: Path,
    stand_in: StandIn | None,
) -> ModelPlan:
    common: dict[str, Value] = {
        "max_batch_size": serving.max_batch_size,
        "decoupled": serving.streaming,
        **queue,
        "llm_io": llm_io,
        "engine_dir": str(engine_dir),
        "exclude_input_in_output": serving.exclude_input_in_output,
    }
    if stand_in is not None:
        return ModelPlan(
            serving.llm_model_name,
            _STAND_IN,
            {
                **common,
                "model_name": serving.llm_model_name,
                "tokenizer_dir": str(tokenizer_dir),
                "guided_decoding_backend": serving.guided_decoding.backend,
                "max_beam_width": serving.max_beam_width,
                "first_token_delay_ms": stand_in.first_token_delay_ms,
                "token_delay_ms": stand_in.token_delay_ms,
            },
        )
    if serving.backend == "neuron":
        return ModelPlan(
            "neuron_llm",
            f"{_TEMPLATES}.neuron_llm",
            {**common, "tensor_parallel": serving.tensor_parallel, "max_seq_len": serving.max_seq_len},
        )
    return ModelPlan(
        "tensorrt_llm",
        f"{_TEMPLATES}.tensorrt_llm",
        {
            **common,
            "max_beam_width": serving.max_beam_width,
            "batch_scheduler_policy": serving.batching.scheduler_policy,
            "kv_cache_free_gpu_mem_fraction": serving.kv_cache.free_gpu_mem_fraction,
            "enable_kv_cache_reuse": serving.kv_cache.enable_reuse,
            "enable_chunked_context": serving.kv_cache.enable_chunked_context,
            "decoding_mode": decoding_mode(serving),
            "participant_ids": ",".join(str(rank) for rank in range(serving.world_size)),
            "num_nodes": serving.nodes,
            "optional_parameters": ParameterBlocks(tuple(optional_trtllm_parameters(serving, tokenizer_dir).items())),
        },
    )


def decoding_mode(serving: ServingSettings) -> str:
    """TensorRT-LLM's decoding_mode: the speculative mode, else beam search or top-k/top-p sampling."""
    if serving.speculative.mode != "none":
        return serving.speculative.mode
    return "beam_search" if serving.max_beam_width > 1 else "top_k_top_p"


def optional_trtllm_parameters(serving: ServingSettings, tokenizer_dir: Path) -> dict[str, str | int]:
    """Parameters that are set only when the settings ask for them (absent = TensorRT-LLM's default)."""
    params: dict[str, str | int] = {}
    if serving.nodes == 1:
        # Leader mode on one node: rank r drives local GPU r. Across nodes each rank picks its local
        # device itself, so the list is left to TensorRT-LLM there.
        params["gpu_device_ids"] = ",".join(str(gpu) for gpu in range(serving.world_size))
    if serving.kv_cache.max_tokens is not None:
        params["max_tokens_in_paged_kv_cache"] = serving.kv_cache.max_tokens
    if serving.guided_decoding.backend != "none":
        params["guided_decoding_backend"] = serving.guided_decoding.backend
        params["tokenizer_dir"] = str(tokenizer_dir)
        params["xgrammar_tokenizer_info_path"] = str(tokenizer_dir / XGRAMMAR_TOKENIZER_INFO)
    return params


def _read(package: str, name: str) -> str:
    return (resources.files(package) / name).read_text(encoding="utf-8")
