"""TEST DOUBLE: how the model-repository renderer swaps the CPU stand-in in for the LLM step."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_FIRST_TOKEN_DELAY_MS = 50
DEFAULT_TOKEN_DELAY_MS = 20
# The stand-in's own settings sit beside its model.py, so the production config.pbtxt stays untouched.
STAND_IN_FILE = "stand_in.json"


@dataclass(frozen=True, kw_only=True)
class StandIn:
    """Render ``inference_platform.inference_image.testing.cpu_llm`` under the LLM step's name instead of the real step."""

    first_token_delay_ms: int = DEFAULT_FIRST_TOKEN_DELAY_MS
    """Default 50. Simulated prefill before the first token."""
    token_delay_ms: int = DEFAULT_TOKEN_DELAY_MS
    """Default 20. Simulated decode step between tokens."""

    def as_dict(self) -> dict[str, int]:
        return {"first_token_delay_ms": self.first_token_delay_ms, "token_delay_ms": self.token_delay_ms}

    def __post_init__(self) -> None:
        if not (0 <= self.first_token_delay_ms <= 60_000 and 0 <= self.token_delay_ms <= 60_000):
            raise ValueError("stand-in delays must be between 0 and 60000 ms")
