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
    STATE_FILE_ENV,
    TOKEN_DELAY_ENV,
)

ENGINE_MODULE_ENV = "LLM_ENGINE_MODULE"
"""The seam of our model.py: the module it takes LLM, SamplingParams and GuidedDecodingParams from."""
ENGINE_MODULE = "inference_platform.inference_image.testing.cpu_llm_api"
DEFAULT_FIRST_TOKEN_DELAY_MS = 50
DEFAULT_TOKEN_DELAY_MS = 20
MAX_DELAY_MS = 60_000


@dataclass(frozen=True, kw_only=True)
class Timing:
    first_token_delay_ms: int = DEFAULT_FIRST_TOKEN_DELAY_MS
    """Default 50. Simulated prefill before the first token."""
    token_delay_ms: int = DEFAULT_TOKEN_DELAY_MS
    """Default 20. Simulated decode step between tokens."""

    def __post_init__(self) -> None:
        for name in ("first_token_delay_ms", "token_delay_ms"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_DELAY_MS:
                raise ValueError(f"stand-in {name} must be an integer between 0 and {MAX_DELAY_MS} ms, got {value!r}")


@dataclass(frozen=True)
class LocalModel:
    repository: Path
    models: list[str]
    model_dir: Path
    """``<repository>/tensorrt_llm``: what the OpenAI server reads (config.pbtxt, 1/model.yaml)."""
    checkpoint: Path
    state_file: Path
    """Where the stand-in writes ``{"active", "waiting"}``."""
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
        STATE_FILE_ENV: str(state_file),
    }
    return LocalModel(repository, models, repository / models[0], checkpoint, state_file, env)
