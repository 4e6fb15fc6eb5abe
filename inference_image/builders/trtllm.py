"""Build a TensorRT-LLM engine: LLM API (quantize + build) or ``trtllm-build`` from a checkpoint.

Runs in the TensorRT-LLM image on a GPU of the target architecture; ``tensorrt_llm`` is imported
only here.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from inference_platform.inference_image.build_plan import TrtllmBuildPlan

BUILDER = "tensorrt-llm"


class BuildError(RuntimeError):
    """The build failed or its inputs do not fit the plan; the message says which."""


def version() -> str:
    import tensorrt_llm

    return str(tensorrt_llm.__version__)


def build_with_llm_api(plan: TrtllmBuildPlan, output_dir: Path, *, speculative_model: str | None = None) -> None:
    arguments = plan.llm_api_arguments(speculative_model)
    llm_class = _llm_class()
    from tensorrt_llm import BuildConfig
    from tensorrt_llm.llmapi import CalibConfig, QuantAlgo, QuantConfig

    build = dict(arguments.pop("build_config"))
    plugin = build.pop("plugin_config")
    build.pop("kv_cache_type")  # paged is BuildConfig's default and the only layout served here
    build_config = BuildConfig(**build)
    build_config.plugin_config.use_paged_context_fmha = plugin["use_paged_context_fmha"]
    if "quant_config" in arguments:
        names = arguments.pop("quant_config")
        arguments["quant_config"] = QuantConfig(
            quant_algo=QuantAlgo[names["quant_algo"]] if names["quant_algo"] else None,
            kv_cache_quant_algo=QuantAlgo[names["kv_cache_quant_algo"]] if names["kv_cache_quant_algo"] else None,
        )
    if "calib_config" in arguments:
        arguments["calib_config"] = CalibConfig(**arguments.pop("calib_config"))
    if "speculative_config" in arguments:
        arguments["speculative_config"] = _speculative_config(arguments.pop("speculative_config"))
    llm = llm_class(build_config=build_config, **arguments)
    try:
        llm.save(str(output_dir))
    finally:
        llm.shutdown()


def build_from_checkpoint(plan: TrtllmBuildPlan, checkpoint_dir: Path, output_dir: Path) -> None:
    config_path = checkpoint_dir / "config.json"
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise BuildError(f"{config_path}: not a TensorRT-LLM checkpoint ({err})") from None
    problems = plan.checkpoint_problems(config)
    if problems:
        raise BuildError(f"checkpoint {checkpoint_dir} was converted for " + ", ".join(problems))
    result = subprocess.run(plan.trtllm_build_argv(checkpoint_dir, output_dir), check=False)
    if result.returncode != 0:
        raise BuildError(f"trtllm-build exited with status {result.returncode}")


def _llm_class() -> Any:
    # TensorRT-LLM 1.0 made tensorrt_llm.LLM the PyTorch flow and moved the engine-building class.
    try:
        from tensorrt_llm._tensorrt_engine import LLM
    except ImportError:
        from tensorrt_llm import LLM
    return LLM


def _speculative_config(names: dict[str, Any]) -> Any:
    from tensorrt_llm import llmapi

    config_class = getattr(llmapi, f"{names['decoding_type']}DecodingConfig")
    return config_class(max_draft_len=names["max_draft_len"], speculative_model=names["speculative_model"])
