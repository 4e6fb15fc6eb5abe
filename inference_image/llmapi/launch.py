"""The GPU pod's start: verified checkpoint in, Triton with the LLM-API model and the OpenAI server out.

Order matters as in the engine days: nothing is rendered before the checkpoint and the tokenizer
downloaded and verified against their pinned manifests (``inference_platform.artifacts.download``), and
nothing starts before the checkpoint matches the settings (a Hugging Face checkpoint; quantized by Model
Optimizer exactly when serving.precision says fp8/fp4) and this pod has the GPUs its ranks need. No engine
is built: the LLM API loads the checkpoint. The pod then runs two processes under the drain supervisor
(``inference_image/drain.py``): Triton (one node: the LLM API starts its own ranks; several: ``mpirun``
with ``trtllm-llmapi-launch``, ``inference_image/mpi_world.py``) and the OpenAI server, both drained
first on SIGTERM.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inference_platform.catalog.serving_contract import LOOPBACK, METRICS_PATH, METRICS_PORT, OPENAI_PORT, POD_ADDRESS
from inference_platform.errors import CommandError
from inference_platform.inference_image import accelerators
from inference_platform.inference_image.drain import Child, Supervisor
from inference_platform.inference_image.llmapi import contract
from inference_platform.inference_image.llmapi.repository import container_memory_bytes, render_pod_repository
from inference_platform.inference_image.mpi_world import leader_children, mpirun_argv
from inference_platform.inference_image.pod_artifacts import api_key, verified_download
from inference_platform.inference_image.runtime.tokenizer import TokenizerError, load_tokenizer
from inference_platform.inference_image.server_args import ServerArgsError, rank0_args
from inference_platform.settings.serving import ServingSettings

EXIT_CONFIG = 2
QUANT_CONFIG = "hf_quant_config.json"
# serving.precision -> the quant_algo a Model Optimizer checkpoint records (hf_quant_config.json,
# "quantization": {"quant_algo": ...}); an unquantized checkpoint has no such file.
QUANT_ALGOS = {"fp8": "FP8", "fp4": "NVFP4"}


@dataclass(frozen=True)
class LlmApiLaunch:
    children: list[Child]
    repository: Path
    models: list[str]
    checkpoint_manifest: Any
    tokenizer_manifest: Any

    @property
    def argv(self) -> list[str]:
        """The server's command (what ``--prepare-only`` prints)."""
        return list(self.children[0].argv)


def checkpoint_problems(serving: ServingSettings, checkpoint_dir: Path) -> list[str]:
    """Why ``checkpoint_dir`` is not a checkpoint the LLM API serves as ``serving`` says (empty when it is)."""
    problems = []
    if not (checkpoint_dir / "config.json").is_file():
        problems.append("no config.json: not a Hugging Face checkpoint (a TensorRT engine is no longer served)")
    if not any(checkpoint_dir.glob("*.safetensors")):
        problems.append("no *.safetensors weights")
    if any(checkpoint_dir.glob("rank*.engine")):
        problems.append("rank*.engine files: a TensorRT engine; publish the Hugging Face/ModelOpt checkpoint instead")
    want = QUANT_ALGOS.get(serving.precision)
    found = _quant_algo(checkpoint_dir / QUANT_CONFIG)
    if found != want:
        need = f"a Model Optimizer {want} checkpoint" if want else "an unquantized checkpoint"
        problems.append(f"quantization {found or 'none'}: serving.precision {serving.precision} needs {need}")
    return problems


def prepare_llmapi_launch(
    serving: ServingSettings,
    options: Any,
    *,
    probe: Callable[[], accelerators.VisibleAccelerators] | None = None,
    download: Callable[..., Any] | None = None,
    environ: Mapping[str, str] = os.environ,
    memory: Callable[[], int | None] = container_memory_bytes,
) -> LlmApiLaunch:
    """Everything up to starting the processes; raises CommandError (one line, exit code) at the first problem.

    ``options`` is the entrypoint's ``EntrypointOptions``: ``engine_uri`` names the served model artifact,
    here the checkpoint."""
    if download is None:
        from inference_platform.artifacts import download as artifact_download

        download = artifact_download
    if serving.nodes > 1 and len(options.hosts) != serving.nodes:
        raise CommandError(
            f"serving.nodes is {serving.nodes}: give that many hosts, leader first (got {len(options.hosts)})",
            EXIT_CONFIG,
        )
    key = api_key(serving, environ)
    checkpoint_dir = options.models_dir / "checkpoint"
    tokenizer_dir = options.models_dir / "tokenizer"
    pins = serving.artifacts
    checkpoint = verified_download(download, "engine", options.engine_uri, checkpoint_dir, pins.engine_manifest_sha256)
    tokenizer = verified_download(
        download, "tokenizer", options.tokenizer_uri, tokenizer_dir, pins.tokenizer_manifest_sha256
    )
    draft_dir = None
    if serving.speculative.draft_model is not None:
        # The EAGLE-3 head or draft model is served weights too: verified like the checkpoint.
        draft_dir = options.models_dir / "draft"
        verified_download(download, "draft", serving.speculative.draft_model, draft_dir, pins.draft_manifest_sha256)
    problems = checkpoint_problems(serving, checkpoint_dir)
    meta = checkpoint.metadata
    if meta.precision != serving.precision:
        problems.append(f"manifest precision {meta.precision} (serving.precision {serving.precision})")
    if not meta.accelerator.startswith("nvidia-"):
        problems.append(f"manifest accelerator {meta.accelerator} (serving.backend tensorrtllm needs nvidia)")
    if problems:
        raise CommandError(f"the checkpoint {options.engine_uri} cannot be served: " + "; ".join(problems), EXIT_CONFIG)
    try:
        load_tokenizer(tokenizer_dir)
    except TokenizerError as err:
        raise CommandError(f"tokenizer artifact: {err}", EXIT_CONFIG) from None
    try:
        visible = (probe or accelerators.probe_for(serving.backend))()
    except accelerators.ProbeError as err:
        raise CommandError(f"cannot list this pod's accelerators: {err}", 1) from None
    # A checkpoint is not compiled for one architecture: any GPU of the vendor that runs the precision
    # (settings' accelerator_problems) serves it, given a GPU per rank on this node.
    problem = accelerators.placement_problem(
        visible, vendor="nvidia", architecture=visible.architecture, ranks=serving.ranks_per_node, units_per_device=1
    )
    if problem:
        raise CommandError(problem, EXIT_CONFIG)
    if options.repository_dir.exists():
        shutil.rmtree(options.repository_dir)
    models = render_pod_repository(
        serving,
        options.repository_dir,
        models_dir=options.models_dir,
        host_memory_bytes=memory(),
        ttft_buckets_ms=_ttft_buckets(serving) if options.stand_in is None else (),
    )
    server = triton_argv(serving, options, models, key)
    front_end = openai_argv(
        serving,
        options.repository_dir,
        tokenizer_dir,
        http_port=options.listen.http_port,
        metrics_port=options.listen.metrics_port,
        address=options.listen.address,
        port=options.openai_port,
    )
    if serving.nodes > 1:
        world = mpirun_argv(
            hosts=options.hosts, ranks_per_node=serving.ranks_per_node, server_argv=server, mpirun=options.mpirun
        )
        children = leader_children(world, front_end)
    else:
        children = [Child("tritonserver", server, drain_first=True), Child("openai", front_end, drain_first=True)]
    return LlmApiLaunch(children, options.repository_dir, models, checkpoint, tokenizer)


def triton_argv(serving: ServingSettings, options: Any, models: list[str], api_key: str | None) -> list[str]:
    """The serving tritonserver's command (rank 0 under mpirun) for ``models`` in the rendered repository."""
    try:
        return [
            options.tritonserver,
            *rank0_args(
                serving,
                model_repository=options.repository_dir,
                models=models,
                listen=options.listen,
                backend_dir=options.backend_dir,
                api_key=api_key,
            ),
        ]
    except ServerArgsError as err:
        raise CommandError(str(err), EXIT_CONFIG) from None


def openai_argv(
    serving: ServingSettings,
    repository: Path,
    tokenizer_dir: Path,
    *,
    http_port: int,
    metrics_port: int = METRICS_PORT,
    address: str = POD_ADDRESS,
    port: int = OPENAI_PORT,
) -> list[str]:
    """The OpenAI server's command (inference_image/openai_api), reaching Triton on loopback."""
    return [
        sys.executable,
        "-m",
        "inference_platform.inference_image.openai_api",
        f"--model-dir={repository / contract.MODEL_NAME}",
        f"--served-model-name={serving.served_model_name}",
        *(f"--answers-for={name}" for name in serving.fallback_for or ()),
        f"--tokenizer-dir={tokenizer_dir}",
        f"--triton-url=http://{LOOPBACK}:{http_port}",
        # The engine's gauges, relayed on the server's /metrics (llm-d's endpoint picker scrapes the serving port).
        f"--triton-metrics-url=http://{LOOPBACK}:{metrics_port}{METRICS_PATH}",
        f"--host={address}",
        f"--port={port}",
        # Running streams get the drain budget Triton gets; the server's own default (30 s) would cut longer drains.
        f"--shutdown-timeout={serving.exit_timeout_seconds}",
        *_triton_key_args(serving),
    ]


def _triton_key_args(serving: ServingSettings) -> list[str]:
    """With serving.auth on, Triton's restricted APIs want the key: the OpenAI server reads it where the
    settings keep it (never from its arguments, which ps shows)."""
    auth = serving.auth
    if not auth.enabled:
        return []
    where = f"--triton-key-file={auth.key_file}" if auth.key_env is None else f"--triton-key-env={auth.key_env}"
    return [f"--triton-key-header={auth.header}", where]


def run_launch(launch: LlmApiLaunch, serving: ServingSettings) -> int:
    """Run both processes until they exit or SIGTERM drains them (serving.server.exitTimeoutSeconds)."""
    sys.stdout.flush()
    sys.stderr.flush()
    return Supervisor(launch.children, exit_timeout_seconds=serving.exit_timeout_seconds).run()


def _quant_algo(path: Path) -> str | None:
    if not path.is_file():
        return None
    try:
        found = json.loads(path.read_text(encoding="utf-8")).get("quantization", {}).get("quant_algo")
    except (OSError, json.JSONDecodeError, AttributeError):
        return "unreadable"
    return str(found) if found else None


def _ttft_buckets(serving: ServingSettings) -> tuple[float, ...]:
    from inference_platform.inference_image.model_metrics import ttft_buckets_ms

    return ttft_buckets_ms(serving)
