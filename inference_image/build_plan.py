"""What ``prepare`` compiles for a Neuron stack, and refusals.

Pure: from the serving settings and the EC2 instance type the model is compiled for, produce the
arguments of NxD Inference's ``NeuronConfig`` plus the metadata the artifact manifest records.
``build_problems`` refuses what the accelerators cannot run. GPU stacks build nothing: TensorRT-LLM's
LLM API loads the Hugging Face or ModelOpt checkpoint itself (inference_image/llmapi).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inference_platform import catalog
from inference_platform.settings.base import Problem
from inference_platform.settings.serving import ServingSettings, accelerator_problems

DTYPES = {catalog.FP32: "float32", catalog.FP16: "float16"}
"""Activation dtype by precision; everything else computes in bfloat16 (Llama's native dtype)."""
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
