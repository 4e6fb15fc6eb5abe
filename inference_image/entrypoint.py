"""The Neuron container's entrypoint: verified artifacts in, Triton and the OpenAI server out — or one clear refusal.

Order matters: nothing is rendered before both artifacts downloaded and verified against their
manifests (``inference_platform.artifacts.download`` marks a directory complete only then), and nothing is
started before the compiled model's metadata matches the settings and the accelerators this pod sees.
Then the one-model repository (inference_image/neuron) is rendered and the two processes run under the drain
supervisor, as on GPUs (SIGTERM drains both within serving.server.exitTimeoutSeconds). GPU pods start through ``inference_image/llmapi/launch.py`` (a checkpoint, no
engine); the artifact checks here (api_key, verified_download) are shared by both.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inference_platform.catalog.serving_contract import OPENAI_PORT
from inference_platform.errors import CommandError
from inference_platform.inference_image import accelerators
from inference_platform.inference_image.defaults import MODELS_DIR, REPOSITORY_DIR
from inference_platform.inference_image.llmapi.launch import LlmApiLaunch, triton_argv
from inference_platform.inference_image.neuron.launch import neuron_children
from inference_platform.inference_image.neuron.repository import render_repository as render_neuron
from inference_platform.inference_image.pod_artifacts import api_key, verified_download
from inference_platform.inference_image.runtime.tokenizer import TokenizerError, load_tokenizer
from inference_platform.inference_image.server_args import Listen
from inference_platform.inference_image.testing.cpu_llm_api.local import Timing
from inference_platform.settings.serving import BACKEND_VENDORS, ServingSettings

EXIT_CONFIG = 2


@dataclass(frozen=True, kw_only=True)
class EntrypointOptions:
    engine_uri: str
    tokenizer_uri: str
    models_dir: Path = MODELS_DIR
    """Engine goes to ``<models_dir>/engine``, tokenizer to ``<models_dir>/tokenizer``."""
    repository_dir: Path = REPOSITORY_DIR
    """Owned by the entrypoint: replaced on every start."""
    tritonserver: str = "tritonserver"
    backend_dir: Path | None = None
    mpirun: str = "mpirun"
    hosts: tuple[str, ...] = ()
    listen: Listen = field(default_factory=Listen)
    openai_port: int = OPENAI_PORT
    """GPU pods: the OpenAI server's port (on listen.address)."""
    stand_in: Timing | None = None
    """TEST DOUBLE: serve the CPU stand-in in place of the LLM step (tests and local runs only)."""


def engine_files(backend: str, world_size: int) -> list[str]:
    """Files without which a compiled Neuron model directory cannot be loaded."""
    return ["neuron_config.json", "model.pt"]


def prepare_launch(
    serving: ServingSettings,
    options: EntrypointOptions,
    *,
    probe: Callable[[], accelerators.VisibleAccelerators] | None = None,
    download: Callable[..., Any] | None = None,
    environ: Mapping[str, str] = os.environ,
) -> LlmApiLaunch:
    """Everything up to starting the processes; raises CommandError (one line, exit code) at the first problem."""
    if serving.backend != "neuron":
        raise CommandError("serving.backend tensorrtllm starts through inference_image/llmapi/launch.py", EXIT_CONFIG)
    if options.stand_in is not None:
        raise CommandError(
            "the CPU stand-in replaces the LLM API's engine: use it with serving.backend tensorrtllm", EXIT_CONFIG
        )
    if download is None:
        from inference_platform.artifacts import download as artifact_download

        download = artifact_download
    key = api_key(serving, environ)
    engine_dir = options.models_dir / "engine"
    tokenizer_dir = options.models_dir / "tokenizer"
    pins = serving.artifacts
    engine = verified_download(download, "engine", options.engine_uri, engine_dir, pins.engine_manifest_sha256)
    tokenizer = verified_download(
        download, "tokenizer", options.tokenizer_uri, tokenizer_dir, pins.tokenizer_manifest_sha256
    )
    _check_metadata(serving, engine.metadata)
    _check_files(serving, engine_dir, tokenizer_dir, stand_in=options.stand_in is not None)
    try:
        visible = (probe or accelerators.probe_for(serving.backend))()
    except accelerators.ProbeError as err:
        raise CommandError(f"cannot list this pod's accelerators: {err}", 1) from None
    _check_placement(serving, engine.metadata, visible)
    if options.repository_dir.exists():
        shutil.rmtree(options.repository_dir)
    # One model on the LLM-API text contract behind the same OpenAI server as on GPUs (inference_image/neuron).
    models = render_neuron(serving, options.repository_dir, compiled_dir=engine_dir, tokenizer_dir=tokenizer_dir)
    server = triton_argv(serving, options, models, key)
    children = neuron_children(
        serving, options, server_argv=server, repository=options.repository_dir, tokenizer_dir=tokenizer_dir
    )
    return LlmApiLaunch(children, options.repository_dir, models, engine, tokenizer)


def _check_metadata(serving: ServingSettings, meta: Any) -> None:
    problems = []
    if meta.tensor_parallel_size != serving.tensor_parallel:
        problems.append(
            f"tensor parallel {meta.tensor_parallel_size} (serving.tensorParallel {serving.tensor_parallel})"
        )
    if meta.pipeline_parallel_size != serving.pipeline_parallel:
        problems.append(
            f"pipeline parallel {meta.pipeline_parallel_size} (serving.pipelineParallel {serving.pipeline_parallel})"
        )
    if meta.precision != serving.precision:
        problems.append(f"precision {meta.precision} (serving.precision {serving.precision})")
    vendor = BACKEND_VENDORS[serving.backend]
    if not meta.accelerator.startswith(f"{vendor}-"):
        problems.append(f"accelerator {meta.accelerator} (serving.backend {serving.backend} needs {vendor})")
    if problems:
        raise CommandError(
            "the engine does not match the serving settings: built for " + ", ".join(problems), EXIT_CONFIG
        )


def _check_files(serving: ServingSettings, engine_dir: Path, tokenizer_dir: Path, *, stand_in: bool) -> None:
    missing = [name for name in engine_files(serving.backend, serving.world_size) if not (engine_dir / name).is_file()]
    if missing:
        raise CommandError(
            f"the engine artifact lacks {', '.join(missing)}: built for another backend or TP?", EXIT_CONFIG
        )
    try:
        load_tokenizer(tokenizer_dir)
    except TokenizerError as err:
        raise CommandError(f"tokenizer artifact: {err}", EXIT_CONFIG) from None


def _check_placement(serving: ServingSettings, meta: Any, visible: accelerators.VisibleAccelerators) -> None:
    per_device = max(1, visible.units // visible.devices) if visible.devices else 1
    problem = accelerators.placement_problem(
        visible,
        vendor=BACKEND_VENDORS[serving.backend],
        architecture=meta.accelerator_arch,
        ranks=serving.ranks_per_node,
        units_per_device=per_device,
    )
    if problem:
        raise CommandError(problem, EXIT_CONFIG)
