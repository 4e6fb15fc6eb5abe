"""Render the Triton model repository of a stack from its typed ``serving`` settings.

Six models, TensorRT-LLM's in-flight batching layout: ``preprocessing`` -> LLM step
(``tensorrt_llm``, or ``neuron_llm`` on Neuron) -> ``postprocessing`` -> ``stream_gate`` (where a
client's cancel reaches the ensemble), wired by ``ensemble``, and ``tensorrt_llm_bls`` offering the
same contract as one Python model. Every value comes from the
settings (``repository_values``); every template is rendered strictly (``inference_platform.inference_image.render``) and
all problems of all models are reported together. The repository appears at its destination only
once complete: it is written beside it and renamed into place, so Triton never sees a partial model.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from inference_platform.inference_image.model_metrics import model_metrics_block, ttft_buckets_ms
from inference_platform.inference_image.model_repository import nvidia_keys
from inference_platform.inference_image.render import Fragment, ParameterBlocks, RenderError, Value, render
from inference_platform.inference_image.testing.cpu_llm.options import STAND_IN_FILE, StandIn
from inference_platform.infra.settings.serving import ServingSettings

VERSION_DIR = "1"
TEMPLATE_FILE = "config.pbtxt.tmpl"
CODE_FILE = "model.py"
XGRAMMAR_TOKENIZER_INFO = "xgrammar_tokenizer_info.json"
# NVIDIA's template hard-codes this path (tensorrtllm_backend r25.05 tensorrt_llm/config.pbtxt).
EXECUTOR_WORKER_PATH = "/opt/tritonserver/backends/tensorrtllm/trtllmExecutorWorker"
_TEMPLATES = "inference_platform.inference_image.model_repository"
_STAND_IN = "inference_platform.inference_image.testing.cpu_llm"
_BACKEND_LINE = re.compile(r'^backend: "[a-z_]+"$', re.MULTILINE)


@dataclass(frozen=True)
class ModelPlan:
    """One model of the repository: its name, template, Python code (if any) and values."""

    name: str
    package: str
    """Package holding ``config.pbtxt.tmpl`` (and ``model.py`` for Python models)."""
    values: dict[str, Value]
    code_package: str | None = None
    """TEST DOUBLE only: take ``model.py`` from this package instead (the CPU stand-in)."""
    backend: str | None = None
    """TEST DOUBLE only: the one line swapped in the rendered config (``backend: "python"``)."""
    extra_files: tuple[tuple[str, str], ...] = ()
    """(file name, text) written into the version directory beside the model code."""
    ttft_buckets_ms: tuple[float, ...] = ()
    """Default none. Bucket bounds of this model's first-response histogram (a ``model_metrics`` block)."""

    @property
    def source(self) -> str:
        return f"{self.package.rsplit('.', 1)[-1]}/{TEMPLATE_FILE}"

    def template(self) -> str:
        return _read(self.package, TEMPLATE_FILE)

    def code(self) -> str | None:
        path = resources.files(self.code_package or self.package) / CODE_FILE
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def finish(self, text: str) -> str:
        """The rendered config with its histogram buckets, and the stand-in's backend line swapped in
        (exactly one line)."""
        if self.ttft_buckets_ms:
            text = text.rstrip("\n") + "\n" + model_metrics_block(self.ttft_buckets_ms)
        if self.backend is None:
            return text
        swapped, count = _BACKEND_LINE.subn(f'backend: "{self.backend}"', text)
        if count != 1:
            raise RenderError([f"{self.source}: expected one backend line to swap, found {count}"])
        return swapped


def plan_repository(
    serving: ServingSettings, *, engine_dir: Path, tokenizer_dir: Path, stand_in: StandIn | None = None
) -> list[ModelPlan]:
    """The models to render and the typed values of each, in dependency order."""
    llm_io_text = _read(_TEMPLATES, "llm_io.pbtxt")
    llm_io = Fragment(llm_io_text)
    # postprocessing takes the LLM step's inputs (it calls the LLM step itself) and not its outputs.
    llm_inputs = Fragment(llm_io_text[: llm_io_text.index("\noutput [")] + "\n")
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
                "parameters": model_parameters(
                    "preprocessing",
                    {
                        "tokenizer_dir": str(tokenizer_dir),
                        "add_special_tokens": serving.tokenizer.add_special_tokens,
                        "max_input_len": serving.max_input_len,
                        "max_seq_len": serving.max_seq_len,
                    },
                ),
                "instance_count": serving.instances.preprocessing,
            },
        ),
        _llm_plan(serving, llm_io, queue, engine_dir=engine_dir, tokenizer_dir=tokenizer_dir, stand_in=stand_in),
        ModelPlan(
            "postprocessing",
            f"{_TEMPLATES}.postprocessing",
            {
                "max_batch_size": batch,
                "decoupled": serving.streaming,
                "llm_inputs": llm_inputs,
                "parameters": model_parameters(
                    "postprocessing",
                    {
                        "tokenizer_dir": str(tokenizer_dir),
                        "skip_special_tokens": serving.tokenizer.skip_special_tokens,
                        "tensorrt_llm_model_name": llm,
                    },
                ),
                "instance_count": serving.instances.postprocessing,
            },
        ),
        ModelPlan(
            "stream_gate",
            f"{_TEMPLATES}.stream_gate",
            {
                "max_batch_size": batch,
                "decoupled": serving.streaming,
                "gate_io": gate_io(_read(f"{_TEMPLATES}.postprocessing", TEMPLATE_FILE)),
                "llm_model_name": llm,
            },
        ),
        ModelPlan(
            "ensemble",
            f"{_TEMPLATES}.ensemble",
            {"max_batch_size": batch, "client_io": client_io},
        ),
        ModelPlan(
            "tensorrt_llm_bls",
            f"{_TEMPLATES}.tensorrt_llm_bls",
            {
                "max_batch_size": batch,
                "decoupled": serving.streaming,
                "client_io": client_io,
                "parameters": model_parameters(
                    "tensorrt_llm_bls",
                    {
                        # Our BLS always detokenizes the accumulated stream (incrementally).
                        "accumulate_tokens": True,
                        "tensorrt_llm_model_name": llm,
                        "tokenizer_dir": str(tokenizer_dir),
                        "skip_special_tokens": serving.tokenizer.skip_special_tokens,
                    },
                ),
                "instance_count": serving.instances.bls,
            },
        ),
    ]
    if stand_in is None:
        # The models clients stream from, and the LLM step: their TTFT histograms with buckets for LLM
        # latencies. Not in the stand-in's repository: the local Triton 2.51 (24.10) predates model_metrics (24.11).
        buckets = ttft_buckets_ms(serving)
        timed = {"ensemble", "tensorrt_llm_bls", llm}
        plans = [dataclasses.replace(p, ttft_buckets_ms=buckets) if p.name in timed else p for p in plans]
    return plans


_OUTPUT_ENTRY = re.compile(r'name: "(\w+)"\n\s+data_type: (\w+)\n\s+dims: \[ ([^\]]+) \]')


def gate_io(postprocessing_template: str) -> Fragment:
    """``stream_gate``'s inputs and outputs: each postprocessing output as an optional input, and (but
    for ``LLM_REQUEST_ID``) as a ``GATED_`` output of the same type and dims."""
    entries = _OUTPUT_ENTRY.findall(postprocessing_template[postprocessing_template.index("\noutput [") :])

    def block(kind: str, items: list[tuple[str, str, str]], extra: str) -> str:
        body = ",\n".join(
            f'  {{\n    name: "{name}"\n    data_type: {dtype}\n    dims: [ {dims} ]\n{extra}  }}'
            for name, dtype, dims in items
        )
        return f"{kind} [\n{body}\n]\n"

    passed = [(f"GATED_{n}", t, d) for n, t, d in entries if n != "LLM_REQUEST_ID"]
    return Fragment(block("input", entries, "    optional: true\n") + block("output", passed, ""))


def render_configs(plans: list[ModelPlan]) -> dict[str, str]:
    """Model name -> rendered config.pbtxt; one RenderError naming every problem of every model."""
    problems: list[str] = []
    rendered: dict[str, str] = {}
    for plan in plans:
        try:
            rendered[plan.name] = plan.finish(render(plan.template(), plan.values, source=plan.source))
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
            for file_name, text in plan.extra_files:
                (model_dir / VERSION_DIR / file_name).write_text(text, encoding="utf-8")
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
    }
    if serving.backend == "neuron":
        neuron = {
            **common,
            "engine_dir": str(engine_dir),
            "exclude_input_in_output": serving.exclude_input_in_output,
        }
        if stand_in is not None:
            # The Neuron step is our own Python model; its stand-in keeps a config of its own.
            return ModelPlan(
                serving.llm_model_name,
                _STAND_IN,
                {
                    **neuron,
                    "model_name": serving.llm_model_name,
                    "tokenizer_dir": str(tokenizer_dir),
                    "guided_decoding_backend": serving.guided_decoding.backend,
                    "max_beam_width": serving.max_beam_width,
                    "first_token_delay_ms": stand_in.first_token_delay_ms,
                    "token_delay_ms": stand_in.token_delay_ms,
                },
            )
        return ModelPlan(
            "neuron_llm",
            f"{_TEMPLATES}.neuron_llm",
            {**neuron, "tensor_parallel": serving.tensor_parallel, "max_seq_len": serving.max_seq_len},
        )
    values: dict[str, Value] = {
        **common,
        "parameters": model_parameters("tensorrt_llm", trtllm_parameters(serving, engine_dir, tokenizer_dir)),
    }
    if stand_in is None:
        return ModelPlan("tensorrt_llm", f"{_TEMPLATES}.tensorrt_llm", values)
    # TEST DOUBLE: the production config, only its backend line swapped; the stand-in reads and checks
    # the C++ backend's parameters (inference_platform.inference_image.testing.cpu_llm.trtllm_parameters).
    return ModelPlan(
        "tensorrt_llm",
        f"{_TEMPLATES}.tensorrt_llm",
        values,
        code_package=_STAND_IN,
        backend="python",
        extra_files=((STAND_IN_FILE, json.dumps(stand_in.as_dict(), indent=2) + "\n"),),
    )


def decoding_mode(serving: ServingSettings) -> str:
    """TensorRT-LLM's decoding_mode: beam search or top-k/top-p sampling (speculative decoding is served
    only by the LLM API model, inference_image/llmapi)."""
    return "beam_search" if serving.max_beam_width > 1 else "top_k_top_p"


def trtllm_parameters(
    serving: ServingSettings, engine_dir: Path, tokenizer_dir: Path
) -> dict[str, str | int | float | bool]:
    """The ``tensorrt_llm`` parameters the settings decide; every other key of NVIDIA's list renders empty
    (empty is "unset" for the C++ backend: its numeric and boolean reads fall back to their defaults)."""
    params: dict[str, str | int | float | bool] = {
        "max_beam_width": serving.max_beam_width,
        "FORCE_CPU_ONLY_INPUT_TENSORS": "no",
        "gpt_model_type": "inflight_fused_batching",
        "gpt_model_path": str(engine_dir),
        "batch_scheduler_policy": serving.batching.scheduler_policy,
        "kv_cache_free_gpu_mem_fraction": serving.kv_cache.free_gpu_mem_fraction,
        "exclude_input_in_output": serving.exclude_input_in_output,
        "cancellation_check_period_ms": 100,
        "stats_check_period_ms": 100,
        "enable_kv_cache_reuse": serving.kv_cache.enable_reuse,
        "normalize_log_probs": True,
        "enable_chunked_context": serving.kv_cache.enable_chunked_context,
        "participant_ids": ",".join(str(rank) for rank in range(serving.world_size)),
        "num_nodes": serving.nodes,
        "decoding_mode": decoding_mode(serving),
        "executor_worker_path": EXECUTOR_WORKER_PATH,
        # The C++ guided-decoding path ignores tokenizer_dir (it logs so); the CPU stand-in and
        # NVIDIA's Python backend read it, so it is always the tokenizer.
        "tokenizer_dir": str(tokenizer_dir),
    }
    if serving.nodes == 1:
        # Leader mode on one node: rank r drives local GPU r. Across nodes each rank picks its local
        # device itself, so the list stays empty there.
        params["gpu_device_ids"] = ",".join(str(gpu) for gpu in range(serving.world_size))
    if serving.kv_cache.max_tokens is not None:
        params["max_tokens_in_paged_kv_cache"] = serving.kv_cache.max_tokens
    if serving.guided_decoding.backend != "none":
        params["guided_decoding_backend"] = serving.guided_decoding.backend
        params["xgrammar_tokenizer_info_path"] = str(tokenizer_dir / XGRAMMAR_TOKENIZER_INFO)
    return params


def model_parameters(model: str, values: dict[str, str | int | float | bool]) -> ParameterBlocks:
    """Every key NVIDIA's template of ``model`` has (its order), then ours, empty where ``values`` has
    none; a key in neither list is refused, so a misspelt key cannot render."""
    keys = (*nvidia_keys.KEYS[model], *nvidia_keys.OUR_KEYS[model])
    unknown = sorted(set(values) - set(keys))
    if unknown:
        raise RenderError([f"{model}: parameters {', '.join(unknown)} are not keys of NVIDIA's r25.05 template"])
    return ParameterBlocks(tuple((key, values.get(key, "")) for key in keys))


def _read(package: str, name: str) -> str:
    return (resources.files(package) / name).read_text(encoding="utf-8")
