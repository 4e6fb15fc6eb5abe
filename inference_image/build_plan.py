"""What ``prepare`` builds for a stack: TensorRT-LLM engine or Neuron compile arguments, and refusals.

Pure: from the serving settings and the EC2 instance type the engine is built for, produce the
arguments of TensorRT-LLM's LLM API (quantize + build in one call) and of ``trtllm-build`` (from an
already quantized TensorRT-LLM checkpoint), or of NxD Inference's ``NeuronConfig``, plus the metadata
the artifact manifest records. ``build_problems`` refuses what the accelerators cannot run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inference_platform.components import catalog
from inference_platform.infra.settings.base import Problem
from inference_platform.infra.settings.serving import ServingSettings, accelerator_problems

# catalog precision -> TensorRT-LLM QuantAlgo member (None: no quantization, dtype only).
QUANT_ALGOS: dict[str, str | None] = {
    catalog.FP32: None,
    catalog.FP16: None,
    catalog.BF16: None,
    catalog.FP8: "FP8",
    catalog.FP4: "NVFP4",
    catalog.INT8: "W8A8_SQ_PER_CHANNEL",
    catalog.INT8_WEIGHT_ONLY: "W8A16",
    catalog.INT4_WEIGHT_ONLY: "W4A16",
    catalog.INT4_AWQ: "W4A16_AWQ",
}
# Algorithms that need calibration data (activation scales or AWQ search).
CALIBRATED = frozenset({"FP8", "NVFP4", "W8A8_SQ_PER_CHANNEL", "W4A16_AWQ"})
KV_QUANT_ALGOS: dict[str, str | None] = {"auto": None, "fp16": None, "bf16": None, "fp8": "FP8", "int8": "INT8"}
DTYPES = {catalog.FP32: "float32", catalog.FP16: "float16"}
"""Activation dtype by precision; everything else computes in bfloat16 (Llama's native dtype)."""
DEFAULT_CALIBRATION_SAMPLES = 512
SPECULATIVE_MODES = {"medusa": "Medusa", "eagle": "Eagle"}
# NxD Inference models prepare knows how to compile (Hugging Face architecture -> module, class).
NEURON_MODELS = {
    "LlamaForCausalLM": ("neuronx_distributed_inference.models.llama.modeling_llama", "NeuronLlamaForCausalLM"),
    "MixtralForCausalLM": ("neuronx_distributed_inference.models.mixtral.modeling_mixtral", "NeuronMixtralForCausalLM"),
}


@dataclass(frozen=True, kw_only=True)
class Target:
    """The accelerator an engine is built for, as the artifact metadata names it."""

    instance_type: str
    vendor: str
    accelerator: str
    """Metadata name: ``nvidia-l4``, ``neuron-inferentia2``."""
    architecture: str
    """What the engine is compiled for: CUDA compute capability (``sm89``) or NeuronCore generation
    (``neuron-v2``), as the catalog and the artifact metadata name it."""


def target_for(instance_type: str) -> Target:
    node = catalog.instance(instance_type)
    if node.accelerator is None:
        raise ValueError(f"{instance_type} has no accelerator to build for")
    accel = node.accelerator
    return Target(
        instance_type=node.name,
        vendor=node.vendor,
        accelerator=f"{node.vendor}-{accel.model}",
        architecture=accel.architecture,
    )


def build_problems(serving: ServingSettings, instance_type: str) -> list[Problem]:
    """Everything that stops an engine for ``serving`` being built for ``instance_type``."""
    return serving.shape_problems() + accelerator_problems(serving, instance_type)


@dataclass(frozen=True, kw_only=True)
class TrtllmBuildPlan:
    checkpoint: str
    """Hugging Face model id or directory (LLM API route)."""
    target: Target
    tensor_parallel: int
    pipeline_parallel: int
    dtype: str
    quant_algo: str | None
    kv_cache_quant_algo: str | None
    max_batch_size: int
    max_input_len: int
    max_seq_len: int
    max_num_tokens: int
    max_beam_width: int
    paged_context_fmha: bool
    """Needed for chunked context and KV-cache reuse."""
    speculative_mode: str | None
    max_draft_len: int | None
    calibration_samples: int

    def llm_api_arguments(self, speculative_model: str | None = None) -> dict[str, Any]:
        """``tensorrt_llm.LLM(**...)`` as plain values (the builder turns names into TensorRT-LLM objects)."""
        args: dict[str, Any] = {
            "model": self.checkpoint,
            "tensor_parallel_size": self.tensor_parallel,
            "pipeline_parallel_size": self.pipeline_parallel,
            "dtype": self.dtype,
            "build_config": {
                "max_batch_size": self.max_batch_size,
                "max_input_len": self.max_input_len,
                "max_seq_len": self.max_seq_len,
                "max_num_tokens": self.max_num_tokens,
                "max_beam_width": self.max_beam_width,
                "kv_cache_type": "PAGED",
                "plugin_config": {"use_paged_context_fmha": self.paged_context_fmha},
            },
        }
        if self.quant_algo or self.kv_cache_quant_algo:
            args["quant_config"] = {"quant_algo": self.quant_algo, "kv_cache_quant_algo": self.kv_cache_quant_algo}
        if self.quant_algo in CALIBRATED:
            args["calib_config"] = {"calib_batches": self.calibration_samples}
        if self.speculative_mode:
            args["speculative_config"] = {
                "decoding_type": SPECULATIVE_MODES[self.speculative_mode],
                "max_draft_len": self.max_draft_len,
                "speculative_model": speculative_model,
            }
        return args

    def trtllm_build_argv(self, checkpoint_dir: Path, output_dir: Path) -> list[str]:
        """``trtllm-build`` from a TensorRT-LLM checkpoint already converted for this precision and TP/PP."""
        argv = [
            "trtllm-build",
            f"--checkpoint_dir={checkpoint_dir}",
            f"--output_dir={output_dir}",
            f"--max_batch_size={self.max_batch_size}",
            f"--max_input_len={self.max_input_len}",
            f"--max_seq_len={self.max_seq_len}",
            f"--max_num_tokens={self.max_num_tokens}",
            f"--max_beam_width={self.max_beam_width}",
            "--kv_cache_type=paged",
            "--remove_input_padding=enable",
            "--gemm_plugin=auto",
            f"--use_paged_context_fmha={'enable' if self.paged_context_fmha else 'disable'}",
            f"--workers={self.tensor_parallel * self.pipeline_parallel}",
        ]
        if self.quant_algo == "FP8" and self.paged_context_fmha and self.target.architecture in ("sm89", "sm90"):
            argv.append("--use_fp8_context_fmha=enable")
        if self.speculative_mode:
            argv += [f"--speculative_decoding_mode={self.speculative_mode}", f"--max_draft_len={self.max_draft_len}"]
        return argv

    def checkpoint_problems(self, config: dict[str, Any]) -> list[str]:
        """How a TensorRT-LLM checkpoint's config.json disagrees with this plan (trtllm-build route)."""
        problems = []
        quant = config.get("quantization") or {}
        mapping = config.get("mapping") or {}
        if (quant.get("quant_algo") or None) != self.quant_algo:
            problems.append(f"quant_algo {quant.get('quant_algo')} (want {self.quant_algo})")
        if (quant.get("kv_cache_quant_algo") or None) != self.kv_cache_quant_algo:
            problems.append(f"kv_cache_quant_algo {quant.get('kv_cache_quant_algo')} (want {self.kv_cache_quant_algo})")
        if mapping.get("tp_size", 1) != self.tensor_parallel or mapping.get("pp_size", 1) != self.pipeline_parallel:
            problems.append(
                f"tp/pp {mapping.get('tp_size', 1)}/{mapping.get('pp_size', 1)} "
                f"(want {self.tensor_parallel}/{self.pipeline_parallel})"
            )
        return problems


@dataclass(frozen=True, kw_only=True)
class NeuronCompilePlan:
    checkpoint: str
    target: Target
    tp_degree: int
    batch_size: int
    max_context_length: int
    seq_len: int
    torch_dtype: str
    quantized: bool
    """int8 weight-only (per-channel symmetric)."""

    def neuron_config_arguments(self, quantized_checkpoint_dir: Path | None = None) -> dict[str, Any]:
        """``NeuronConfig(**...)`` of NxD Inference."""
        args: dict[str, Any] = {
            "tp_degree": self.tp_degree,
            "batch_size": self.batch_size,
            "max_context_length": self.max_context_length,
            "seq_len": self.seq_len,
            "torch_dtype": self.torch_dtype,
            "enable_bucketing": True,
            "padding_side": "right",
            # The compiled artifact carries its sharded weights, so serving needs no HF checkpoint.
            "save_sharded_checkpoint": True,
            "on_device_sampling_config": {"do_sample": True, "dynamic": True},
        }
        if self.quantized:
            args |= {
                "quantized": True,
                "quantization_dtype": "int8",
                "quantization_type": "per_channel_symmetric",
                "quantized_checkpoints_path": str(quantized_checkpoint_dir) if quantized_checkpoint_dir else None,
            }
        return args


def trtllm_plan(serving: ServingSettings, instance_type: str, *, checkpoint: str) -> TrtllmBuildPlan:
    return TrtllmBuildPlan(
        checkpoint=checkpoint,
        target=target_for(instance_type),
        tensor_parallel=serving.tensor_parallel,
        pipeline_parallel=serving.pipeline_parallel,
        dtype=DTYPES.get(serving.precision, "bfloat16"),
        quant_algo=QUANT_ALGOS[serving.precision],
        kv_cache_quant_algo=KV_QUANT_ALGOS[serving.kv_cache.dtype],
        max_batch_size=serving.max_batch_size,
        max_input_len=serving.max_input_len,
        max_seq_len=serving.max_seq_len,
        max_num_tokens=serving.max_num_tokens,
        max_beam_width=serving.max_beam_width,
        paged_context_fmha=serving.kv_cache.enable_chunked_context or serving.kv_cache.enable_reuse,
        speculative_mode=None if serving.speculative.mode == "none" else serving.speculative.mode,
        max_draft_len=serving.speculative.draft_length,
        calibration_samples=DEFAULT_CALIBRATION_SAMPLES,
    )


def neuron_plan(serving: ServingSettings, instance_type: str, *, checkpoint: str) -> NeuronCompilePlan:
    return NeuronCompilePlan(
        checkpoint=checkpoint,
        target=target_for(instance_type),
        tp_degree=serving.tensor_parallel,
        batch_size=serving.max_batch_size,
        max_context_length=serving.max_input_len,
        seq_len=serving.max_seq_len,
        torch_dtype=DTYPES.get(serving.precision, "bfloat16"),
        quantized=serving.precision == catalog.INT8_WEIGHT_ONLY,
    )
