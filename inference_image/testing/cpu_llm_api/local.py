"""TEST DOUBLE: how a local rig serves the production ``tensorrt_llm`` model with the CPU stand-in engine.

The repository is rendered by the production renderer (``inference_image.llmapi.repository``) from a stack's
serving settings, against the weightless test checkpoint; only the Triton process's environment differs from a
pod's: ``LLM_ENGINE_MODULE`` names this package, and the stand-in's timing and state file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inference_platform.inference_image.testing.cpu_llm_api.checkpoint import write_checkpoint
from inference_platform.inference_image.testing.cpu_llm_api.engine import (
    FIRST_DELAY_ENV,
    MAX_PREFILL_US_PER_TOKEN,
    PREFILL_ENV,
    STATE_FILE_ENV,
    TOKEN_DELAY_ENV,
)

ENGINE_MODULE_ENV = "LLM_ENGINE_MODULE"
"""The seam of our model.py: the module it takes LLM, SamplingParams and GuidedDecodingParams from."""
ENGINE_MODULE = "inference_platform.inference_image.testing.cpu_llm_api"
DEFAULT_FIRST_TOKEN_DELAY_MS = 50
DEFAULT_TOKEN_DELAY_MS = 20
DEFAULT_PREFILL_US_PER_TOKEN = 50
"""A 2,000-token uncached prompt adds 0.1 s to its prefill; a cached one almost nothing (routing work measures it)."""
MAX_DELAY_MS = 60_000


@dataclass(frozen=True, kw_only=True)
class Timing:
    first_token_delay_ms: int = DEFAULT_FIRST_TOKEN_DELAY_MS
    """Default 50. Simulated prefill before the first token."""
    token_delay_ms: int = DEFAULT_TOKEN_DELAY_MS
    """Default 20. Simulated decode step between tokens."""
    prefill_us_per_token: int = DEFAULT_PREFILL_US_PER_TOKEN
    """Default 50. Simulated prefill per prompt token the replica's KV cache does not hold."""

    def __post_init__(self) -> None:
        bounds = {"first_token_delay_ms": MAX_DELAY_MS, "token_delay_ms": MAX_DELAY_MS}
        bounds["prefill_us_per_token"] = MAX_PREFILL_US_PER_TOKEN
        for name, top in bounds.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= top:
                unit = "us" if name.endswith("_us_per_token") else "ms"
                raise ValueError(f"stand-in {name} must be an integer between 0 and {top} {unit}, got {value!r}")


@dataclass(frozen=True)
class LocalModel:
    repository: Path
    models: list[str]
    model_dir: Path
    """``<repository>/tensorrt_llm``: what the OpenAI server reads (config.pbtxt, 1/model.yaml)."""
    checkpoint: Path
    state_file: Path
    """Where the stand-in writes ``{"active", "waiting", "kvCache"}`` (its KV pool's sizes and counters)."""
    engine_env: dict[str, str]
    """Add to the Triton process's environment."""


def build_local_model(serving: Any, work_dir: Path, timing: Timing = Timing()) -> LocalModel:
    from inference_platform.inference_image.llmapi.repository import render_repository

    checkpoint = write_checkpoint(work_dir / "checkpoint")
    repository = work_dir / "model_repository"
    models = render_repository(serving, repository, checkpoint_dir=checkpoint)
    state_file = work_dir / "stand-in-state.json"
    env = {
        ENGINE_MODULE_ENV: ENGINE_MODULE,
        FIRST_DELAY_ENV: str(timing.first_token_delay_ms),
        TOKEN_DELAY_ENV: str(timing.token_delay_ms),
        PREFILL_ENV: str(timing.prefill_us_per_token),
        STATE_FILE_ENV: str(state_file),
    }
    return LocalModel(repository, models, repository / models[0], checkpoint, state_file, env)
