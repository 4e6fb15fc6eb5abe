"""Usage assumptions of a cost estimate: the usage-driven parts list prices cannot know (NAT and
endpoint data, ALB LCUs, log volume, bucket and image sizes, spot discounts), read and validated from a
cost policy's ``assumptions`` (camelCase keys) with the JSON Schema the policy config declares.

Pure Python, no Pulumi. Defaults are estimates, not measurements; each says what it assumes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Final

from inference_platform.catalog import prices


class UsageError(ValueError):
    """Bad usage assumptions: ``problems`` holds one (``assumptions.<key>``, message) pair each."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        super().__init__("invalid cost assumptions: " + "; ".join(f"{k}: {m}" for k, m in problems))


@dataclass(frozen=True, kw_only=True)
class Usage:
    """Assumptions for the usage-driven parts (defaults are estimates, not measurements)."""

    nat_gib_per_gateway: float = 100.0
    """Data a NAT gateway processes a month; model pulls use the S3 gateway endpoint, not NAT."""
    endpoint_gib_per_endpoint: float = 50.0
    alb_lcu: float = 1.0
    """Average LCUs of each ALB (1 LCU: 25 new connections/s, 3,000 active, 1 GB/h)."""
    log_gib_per_group: float = 5.0
    """Ingested a month per log group; storage is that times the retention in months (capped at 12)."""
    s3_model_gib: float = 500.0
    s3_other_gib: float = 50.0
    ecr_gib: float = 100.0
    spot_factor: float = prices.DEFAULT_SPOT_FACTOR
    mixed_spot_share: float = 0.8
    """Share of spot in a pool allowed both spot and on-demand (Karpenter prefers the cheaper)."""
    load_test_runs: float = 4.0
    """Runs a month of the in-cluster load test (each ``pulumi up`` that changes it runs it once)."""
    batch_lines_per_month: float = 10_000_000.0
    """Lines (requests) a month through the asynchronous lane's queue and bucket."""
    batch_gib: float = 100.0
    """Stored in the lane's bucket on average (input, output and error files within their retention)."""
    batch_sqs_requests_per_line: float = 0.3
    """SQS requests per line: a message carries 10 lines (batch.linesPerMessage), and each message costs about
    2.5 requests (its share of SendMessageBatch and ReceiveMessage of 10, its DeleteMessage, visibility renewals
    of long lines, the workers' empty 20 s long polls), rounded up."""
    batch_s3_puts_per_line: float = 2.0
    """The line's write-once result and its share of the assembled output file and batch record updates."""
    batch_s3_gets_per_line: float = 2.0
    """The result read at finalize and the client's share of reading the output file."""

    @classmethod
    def from_config(cls, values: Mapping[str, Any] | None) -> Usage:
        """From the camelCase keys of a cost policy's ``assumptions`` (``natGibPerGateway`` ...);
        UsageError naming every unknown key and every value that is not a number in range."""
        if values is None:
            return cls()
        if not isinstance(values, Mapping):
            raise UsageError([("assumptions", f"got {values!r}; expected an object of numbers")])
        known = {assumption_key(f.name): f.name for f in fields(cls)}
        chosen: dict[str, float] = {}
        problems: list[tuple[str, str]] = []
        for key, value in values.items():
            name = known.get(str(key))
            if name is None:
                problems.append((f"assumptions.{key}", f"unknown key; allowed: {', '.join(sorted(known))}"))
                continue
            low, high = USAGE_RANGES.get(name, (0.0, None))
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                problems.append((f"assumptions.{key}", f"got {value!r}; expected a number"))
            elif value < low or (high is not None and value > high):
                span = f"in [{low:g}, {high:g}]" if high is not None else f">= {low:g}"
                problems.append((f"assumptions.{key}", f"got {value!r}; expected a number {span}"))
            else:
                chosen[name] = float(value)
        if problems:
            raise UsageError(problems)
        return cls(**chosen)


def assumption_key(field_name: str) -> str:
    """The camelCase config key of a ``Usage`` field (``s3_model_gib`` -> ``s3ModelGib``)."""
    head, *rest = field_name.split("_")
    return head + "".join(part.replace("gib", "Gib").capitalize() if part != "gib" else "Gib" for part in rest)


# Allowed (low, high) per Usage field; anything not listed is a quantity >= 0.
USAGE_RANGES: Final[dict[str, tuple[float, float | None]]] = {
    "spot_factor": (0.01, 1.0),
    "mixed_spot_share": (0.0, 1.0),
}


def assumptions_schema() -> dict[str, Any]:
    """JSON Schema of a cost policy's ``assumptions`` (the policy config schema declares it)."""
    props = {}
    for f in fields(Usage):
        low, high = USAGE_RANGES.get(f.name, (0.0, None))
        prop: dict[str, Any] = {"type": "number", "minimum": low}
        if high is not None:
            prop["maximum"] = high
        props[assumption_key(f.name)] = prop
    return {"type": "object", "properties": props, "additionalProperties": False, "default": {}}
