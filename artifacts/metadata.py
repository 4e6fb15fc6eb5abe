"""What a model artifact was built for: the metadata every manifest carries, validated all at once.

The image entrypoint compares ``accelerator_arch`` and ``tensor_parallel_size`` with the devices it
sees before it serves an engine, so they must be right at publish time.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inference_platform import catalog
from inference_platform.artifacts.errors import InvalidInputError

PRECISIONS: tuple[str, ...] = catalog.PRECISIONS
"""Precisions an engine can be built with, named as the platform's catalog names them."""

# The catalog's chips as ``<vendor>-<model>`` (nvidia-h100, neuron-inferentia2). Their
# ``architecture`` is what an engine is compiled for: a TensorRT engine loads only on the CUDA
# compute capability it was built for (sm90), a Neuron model on the NeuronCore generation.
ACCELERATORS: dict[str, catalog.Accelerator] = {f"{c.vendor}-{c.model}": c for c in catalog.ACCELERATORS}

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$")


@dataclass(frozen=True, kw_only=True)
class ModelMetadata:
    """Build facts of one model version; construction raises ``InvalidInputError`` naming every bad field."""

    architecture: str
    """Model architecture as the builder names it, e.g. ``LlamaForCausalLM``."""
    precision: str
    """One of ``PRECISIONS``; must be runnable on ``accelerator``."""
    accelerator: str
    """Target accelerator, one of ``ACCELERATORS`` (``nvidia-h100``, ``neuron-inferentia2``, ...)."""
    builder: str
    """Tool that produced the artifact, e.g. ``tensorrt-llm`` or ``neuronx-distributed-inference``."""
    builder_version: str
    """Version of ``builder``, e.g. ``0.17.0``."""
    tensor_parallel_size: int = 1
    """Tensor-parallel ranks the engine was split into (>= 1). Default 1."""
    pipeline_parallel_size: int = 1
    """Pipeline-parallel stages (>= 1). Default 1."""
    accelerator_arch: str = ""
    """Compiled-for architecture (``sm90``, ``neuron-v2``); empty means the accelerator's own, any
    other value must equal it."""

    def __post_init__(self) -> None:
        problems = _problems(self)
        if problems:
            raise InvalidInputError("invalid model metadata: " + "; ".join(problems))
        if not self.accelerator_arch:
            object.__setattr__(self, "accelerator_arch", ACCELERATORS[self.accelerator].architecture)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, source: str = "model metadata") -> ModelMetadata:
        """Build from a mapping with exactly the field names; unknown or missing keys are errors."""
        if not isinstance(data, dict):
            raise InvalidInputError(f"{source} must be a JSON object of metadata fields")
        names = {f.name for f in dataclasses.fields(cls)}
        required = {f.name for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING}
        problems = [f"unknown key {k!r}" for k in sorted(set(data) - names)]
        problems += [f"missing key {k!r}" for k in sorted(required - set(data))]
        if problems:
            raise InvalidInputError(f"{source}: " + "; ".join(problems))
        return cls(**data)


def load_metadata(path: Path | None, overrides: dict[str, Any]) -> ModelMetadata:
    """Metadata from a JSON file (optional) with command-line values (non-None) taking precedence."""
    data: dict[str, Any] = {}
    if path is not None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as err:
            raise InvalidInputError(f"cannot read metadata file {path}: {err.strerror}") from None
        except json.JSONDecodeError as err:
            raise InvalidInputError(f"metadata file {path} is not valid JSON: {err}") from None
        if not isinstance(data, dict):
            raise InvalidInputError(f"metadata file {path} must hold a JSON object")
    data.update({k: v for k, v in overrides.items() if v is not None})
    return ModelMetadata.from_dict(data, source=f"metadata file {path}" if path else "model metadata")


def _problems(meta: ModelMetadata) -> list[str]:
    problems = []
    for name in ("architecture", "builder", "builder_version"):
        value = getattr(meta, name)
        if not isinstance(value, str) or not _NAME_RE.match(value):
            problems.append(f"{name} {value!r} must be a non-empty name of letters, digits and ._+-")
    for name in ("tensor_parallel_size", "pipeline_parallel_size"):
        value = getattr(meta, name)
        if type(value) is not int or value < 1:
            problems.append(f"{name} must be an integer >= 1 (got {value!r})")
    if not isinstance(meta.precision, str) or meta.precision not in PRECISIONS:
        problems.append(f"precision {meta.precision!r} is not one of {', '.join(PRECISIONS)}")
    if not isinstance(meta.accelerator, str) or meta.accelerator not in ACCELERATORS:
        problems.append(f"accelerator {meta.accelerator!r} is not one of {', '.join(ACCELERATORS)}")
        return problems
    chip = ACCELERATORS[meta.accelerator]
    arch = chip.architecture
    if not isinstance(meta.accelerator_arch, str) or meta.accelerator_arch not in ("", arch):
        problems.append(f"accelerator_arch {meta.accelerator_arch!r} does not match {meta.accelerator} ({arch})")
    if meta.precision in PRECISIONS and meta.precision not in chip.precisions:
        problems.append(f"precision {meta.precision} is not supported on {meta.accelerator} ({arch})")
    return problems
