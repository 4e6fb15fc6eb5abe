"""``prepare``: compile a Neuron stack's model on a node of its pool and publish it + its tokenizer.

Refuses before any work when the pool's accelerators cannot run the settings (precision, TP per node,
memory) or when this node is not the target NeuronCore generation (a compiled model only runs where it
was compiled for). Publishes through the artifacts API, with the target accelerator and its
architecture in the manifest metadata, tokenizer files alongside.

GPU stacks have nothing to prepare: TensorRT-LLM's LLM API loads the Hugging Face or ModelOpt (FP8/FP4)
checkpoint itself, which ``inferctl artifacts upload`` publishes and the manifest pins (docs/serving.md).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inference_platform.errors import CommandError
from inference_platform.inference_image import accelerators
from inference_platform.inference_image.build_plan import (
    NeuronCompilePlan,
    Target,
    build_problems,
    neuron_plan,
    target_for,
)
from inference_platform.settings.base import Problem
from inference_platform.settings.serving import ServingSettings

EXIT_CONFIG = 2
# Files of a Hugging Face checkpoint that make up its tokenizer (those present are copied).
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "generation_config.json",
    "tokenizer.model",
)


@dataclass(frozen=True, kw_only=True)
class PrepareOptions:
    instance_type: str
    engine_uri: str
    tokenizer_uri: str
    work_dir: Path
    checkpoint: str | None = None
    """Override of serving.checkpoint: HF id, directory, or s3:// artifact version."""
    force: bool = False


# Said to whoever runs prepare for a GPU stack (the old engine flow).
NOTHING_TO_BUILD = (
    "serving.backend tensorrtllm: nothing to prepare. TensorRT-LLM's LLM API serves the Hugging Face or "
    "ModelOpt (FP8/FP4) checkpoint itself (no engine build); publish the checkpoint directory with "
    "`inferctl artifacts upload <dir> <s3-uri>` and pin its manifest SHA-256 in serving.artifacts (docs/serving.md)"
)


def plan_for(serving: ServingSettings, options: PrepareOptions) -> NeuronCompilePlan:
    if serving.backend != "neuron":
        raise CommandError(NOTHING_TO_BUILD, EXIT_CONFIG)
    problems = build_problems(serving, options.instance_type)
    checkpoint = options.checkpoint or serving.checkpoint
    if checkpoint is None:
        problems = [*problems, Problem("serving.checkpoint", "missing; set it or pass --checkpoint")]
    if problems or checkpoint is None:
        raise CommandError(
            f"refusing to build for {options.instance_type}: " + "; ".join(map(str, problems)), EXIT_CONFIG
        )
    return neuron_plan(serving, options.instance_type, checkpoint=checkpoint)


def metadata_for(
    serving: ServingSettings, target: Target, *, architecture: str, builder: str, builder_version: str
) -> Any:
    from inference_platform.artifacts import ModelMetadata

    return ModelMetadata(
        architecture=architecture,
        precision=serving.precision,
        accelerator=target.accelerator,
        accelerator_arch=target.architecture,
        builder=builder,
        builder_version=builder_version,
        tensor_parallel_size=serving.tensor_parallel,
        pipeline_parallel_size=serving.pipeline_parallel,
    )


def check_node(target: Target, visible: accelerators.VisibleAccelerators) -> None:
    """The build node must carry the target accelerator architecture."""
    if visible.vendor != target.vendor or visible.architecture != target.architecture:
        raise CommandError(
            f"this node has {visible.describe()}; an engine for {target.instance_type} must be built on "
            f"{target.architecture} ({target.accelerator})",
            EXIT_CONFIG,
        )


def run_prepare(
    serving: ServingSettings,
    options: PrepareOptions,
    *,
    probe: Callable[[], accelerators.VisibleAccelerators] | None = None,
    upload: Callable[..., Any] | None = None,
) -> tuple[Any, Any]:
    """Refuse, build, publish; returns the (engine, tokenizer) manifests."""
    if upload is None:
        from inference_platform.artifacts import upload as artifact_upload

        upload = artifact_upload
    plan = plan_for(serving, options)
    target = target_for(options.instance_type)
    try:
        check_node(target, (probe or accelerators.probe_for(serving.backend))())
    except accelerators.ProbeError as err:
        raise CommandError(f"cannot list this node's accelerators: {err}", 1) from None
    checkpoint_dir = _checkpoint(plan.checkpoint, options)
    architecture = _hf_architecture(checkpoint_dir)
    engine_dir = _fresh(options.work_dir / "engine")
    tokenizer_dir = _fresh(options.work_dir / "tokenizer")
    from inference_platform.inference_image.builders import neuron

    neuron.compile_model(plan, checkpoint_dir, engine_dir, architecture=architecture, work_dir=options.work_dir)
    builder, version = neuron.BUILDER, neuron.version()
    copy_tokenizer(checkpoint_dir, tokenizer_dir)
    meta = metadata_for(serving, target, architecture=architecture, builder=builder, builder_version=version)
    engine = upload(engine_dir, options.engine_uri, meta, force=options.force)
    tokenizer = upload(tokenizer_dir, options.tokenizer_uri, meta, force=options.force)
    return engine, tokenizer


def copy_tokenizer(checkpoint_dir: Path, tokenizer_dir: Path) -> list[str]:
    copied = []
    for name in TOKENIZER_FILES:
        if (checkpoint_dir / name).is_file():
            shutil.copy2(checkpoint_dir / name, tokenizer_dir / name)
            copied.append(name)
    if "tokenizer.json" not in copied:
        raise CommandError(
            f"checkpoint {checkpoint_dir} has no tokenizer.json (a Hugging Face fast tokenizer)", EXIT_CONFIG
        )
    return copied


def _checkpoint(source: str, options: PrepareOptions) -> Path:
    """A local directory holding the Hugging Face checkpoint (config + tokenizer)."""
    if source.startswith("s3://"):
        from inference_platform.artifacts import download

        target = options.work_dir / "checkpoint"
        download(source, target)
        return target
    path = Path(source)
    if path.is_dir():
        return path
    from huggingface_hub import snapshot_download

    return Path(snapshot_download(repo_id=source, local_dir=str(options.work_dir / "checkpoint")))


def _hf_architecture(checkpoint_dir: Path) -> str:
    config_path = checkpoint_dir / "config.json"
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise CommandError(f"cannot read the model architecture from {config_path}: {err}", EXIT_CONFIG) from None
    found = config.get("architecture") or (config.get("architectures") or [None])[0]
    if not isinstance(found, str):
        raise CommandError(f"{config_path} names no architecture", EXIT_CONFIG)
    return found


def _fresh(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path
