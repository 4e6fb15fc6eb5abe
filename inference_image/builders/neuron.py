"""Compile a model for AWS Neuron with NxD Inference (runs in the Neuron image on a Neuron node)."""

from __future__ import annotations

import importlib
from importlib import metadata
from pathlib import Path
from typing import Any

from inference_platform.inference_image.build_plan import NEURON_MODELS, NeuronCompilePlan

BUILDER = "neuronx-distributed-inference"


class CompileError(RuntimeError):
    """The model cannot be compiled as planned; the message says why."""


def version() -> str:
    return metadata.version(BUILDER)


def model_class(architecture: str) -> Any:
    if architecture not in NEURON_MODELS:
        raise CompileError(f"NxD Inference path supports {', '.join(NEURON_MODELS)}, not {architecture}")
    module, name = NEURON_MODELS[architecture]
    return getattr(importlib.import_module(module), name)


def compile_model(
    plan: NeuronCompilePlan, checkpoint_dir: Path, output_dir: Path, *, architecture: str, work_dir: Path
) -> None:
    from neuronx_distributed_inference.models.config import NeuronConfig, OnDeviceSamplingConfig
    from neuronx_distributed_inference.utils.hf_adapter import load_pretrained_config

    cls = model_class(architecture)
    quantized_dir = work_dir / "quantized" if plan.quantized else None
    arguments = plan.neuron_config_arguments(quantized_dir)
    arguments["on_device_sampling_config"] = OnDeviceSamplingConfig(**arguments["on_device_sampling_config"])
    neuron_config = NeuronConfig(**arguments)
    config = cls.get_config_cls()(neuron_config, load_config=load_pretrained_config(str(checkpoint_dir)))
    if quantized_dir is not None:
        quantized_dir.mkdir(parents=True, exist_ok=True)
        cls.save_quantized_state_dict(str(checkpoint_dir), config)
    model = cls(str(checkpoint_dir), config)
    model.compile(str(output_dir))
