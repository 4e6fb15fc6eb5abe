"""``prepare``: build the stack's engine on a node of its pool and publish engine + tokenizer.

Runs as a Kubernetes Job in the image. Refuses before any work when the pool's accelerators cannot
run the settings (precision, TP x PP per node, memory) or when this node is not the target
architecture (an engine only runs where it was built for). Publishes through the artifacts API, with
the target accelerator and its architecture in the manifest metadata, tokenizer files alongside
(plus xgrammar's tokenizer info when guided decoding is on).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inference_platform.inference_image import accelerators
from inference_platform.inference_image.build_plan import (
    NeuronCompilePlan,
    Target,
    TrtllmBuildPlan,
    build_problems,
    neuron_plan,
    target_for,
    trtllm_plan,
)
from inference_platform.inference_image.repository import XGRAMMAR_TOKENIZER_INFO
from inference_platform.infra.settings.serving import ServingSettings

from inference_platform.errors import CommandError

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
    trtllm_checkpoint: Path | None = None
    """An already converted TensorRT-LLM checkpoint: build with trtllm-build instead of the LLM API."""
    speculative_checkpoint: str | None = None
    """Medusa heads / EAGLE draft weights when serving.speculative.mode is set."""
    force: bool = False


def plan_for(serving: ServingSettings, options: PrepareOptions) -> TrtllmBuildPlan | NeuronCompilePlan:
    """The build plan, or CommandError (exit 2) listing every reason it cannot be built."""
    problems = build_problems(serving, options.instance_type)
    checkpoint = options.checkpoint or serving.checkpoint
    if checkpoint is None and options.trtllm_checkpoint is None:
        problems = [*problems, "serving.checkpoint: missing; set it or pass --checkpoint"]
    if (
        serving.speculative.mode != "none"
        and options.speculative_checkpoint is None
        and options.trtllm_checkpoint is None
    ):
        problems = [*problems, f"serving.speculative.mode {serving.speculative.mode} needs --speculative-checkpoint"]
    if problems:
        raise CommandError(
            f"refusing to build for {options.instance_type}: " + "; ".join(map(str, problems)), EXIT_CONFIG
        )
    source = checkpoint or str(options.trtllm_checkpoint)
    if serving.backend == "neuron":
        return neuron_plan(serving, options.instance_type, checkpoint=source)
    return trtllm_plan(serving, options.instance_type, checkpoint=source)


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
        from inference_platform.artifacts import upload
    plan = plan_for(serving, options)
    target = target_for(options.instance_type)
    try:
        check_node(target, (probe or accelerators.probe_for(serving.backend))())
    except accelerators.ProbeError as err:
        raise CommandError(f"cannot list this node's accelerators: {err}", 1) from None
    checkpoint_dir = _checkpoint(options.checkpoint or serving.checkpoint, options)
    architecture = _hf_architecture(checkpoint_dir, options.trtllm_checkpoint)
    engine_dir = _fresh(options.work_dir / "engine")
    tokenizer_dir = _fresh(options.work_dir / "tokenizer")
    if isinstance(plan, NeuronCompilePlan):
        from inference_platform.inference_image.builders import neuron

        neuron.compile_model(plan, checkpoint_dir, engine_dir, architecture=architecture, work_dir=options.work_dir)
        builder, version = neuron.BUILDER, neuron.version()
    else:
        from inference_platform.inference_image.builders import trtllm

        if options.trtllm_checkpoint is not None:
            trtllm.build_from_checkpoint(plan, options.trtllm_checkpoint, engine_dir)
        else:
            trtllm.build_with_llm_api(plan, engine_dir, speculative_model=options.speculative_checkpoint)
        builder, version = trtllm.BUILDER, trtllm.version()
    copy_tokenizer(checkpoint_dir, tokenizer_dir)
    if serving.guided_decoding.backend == "xgrammar":
        write_xgrammar_info(checkpoint_dir, tokenizer_dir)
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


def write_xgrammar_info(checkpoint_dir: Path, tokenizer_dir: Path) -> None:
    """xgrammar's tokenizer description, which TensorRT-LLM's C++ guided decoder loads."""
    from tensorrt_llm.llmapi.tokenizer import _xgrammar_tokenizer_info
    from transformers import AutoTokenizer

    info = _xgrammar_tokenizer_info(AutoTokenizer.from_pretrained(str(checkpoint_dir)))
    (tokenizer_dir / XGRAMMAR_TOKENIZER_INFO).write_text(json.dumps(info), encoding="utf-8")


def _checkpoint(source: str | None, options: PrepareOptions) -> Path:
    """A local directory holding the Hugging Face checkpoint (config + tokenizer)."""
    if source is None:
        assert options.trtllm_checkpoint is not None  # plan_for requires one of them
        return options.trtllm_checkpoint
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


def _hf_architecture(checkpoint_dir: Path, trtllm_checkpoint: Path | None) -> str:
    config_path = (trtllm_checkpoint or checkpoint_dir) / "config.json"
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
