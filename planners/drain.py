"""How long a replica drains when it is removed (scale-down, a rollout, a node's disruption): long enough for the
longest stream the stack admits to finish at the SLO's speed.

The order of a removal (issue 31, ``inferctl/serving/scale_down.py`` proves it on the local rig): readiness fails,
the edge drops the endpoint, preStop keeps the server serving while load balancers deregister it
(``inference.termination.preStopSeconds``), then SIGTERM starts the drain: Triton's ``--exit-timeout-secs`` and
the OpenAI server's graceful shutdown, both ``serving.server.exitTimeoutSeconds``; the kubelet kills the pod at
``terminationGracePeriodSeconds`` (``inference.termination.gracePeriodSeconds``). A stream admitted just before
readiness failed must finish inside that drain, or the client loses its answer.

The longest such stream, stated once: its first token within ``serving.slo.ttftP95Ms``, then at most
``serving.maxSeqLen - 2`` more tokens (a prompt holds at least one token, and the engine stops a sequence at
``maxSeqLen``) at ``serving.slo.minOutputTokensPerSecond``. The SLO's own output rate is a median: a replica slower
than its SLO is already outside the promise this budget is built on.

A long budget costs only while long streams run: Triton exits as soon as nothing is in flight (its
``--exit-timeout-secs`` is a bound, not a wait), the OpenAI server as soon as its streams end, and the pod's
supervisor with them (``inference_image/drain.py``). Derived unless the stack sets it; a hand-set drain shorter than
the longest stream is allowed and flagged, since a stack may choose to cut rare long answers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

MAX_EXIT_TIMEOUT_SECONDS = 3600
"""serving.server.exitTimeoutSeconds' upper bound: a derived drain longer than this is capped (and flagged)."""
EXIT_MARGIN_SECONDS = 5
"""Seconds the grace period keeps after preStop and the drain: the supervisor's stop of what is left, the
container's exit."""


def longest_stream_seconds(*, ttft_p95_ms: float, max_seq_len: int, min_output_tokens_per_second: float) -> float:
    """The longest stream the stack admits, at its SLO (module docstring)."""
    return ttft_p95_ms / 1000 + max(max_seq_len - 2, 0) / min_output_tokens_per_second


def derived_exit_timeout(longest_stream_s: float) -> int:
    """The drain that lets the longest stream finish, in whole seconds, within the setting's bound."""
    return min(math.ceil(longest_stream_s), MAX_EXIT_TIMEOUT_SECONDS)


def grace_period(pre_stop_s: int, exit_timeout_s: int) -> int:
    """terminationGracePeriodSeconds that covers preStop, the drain and the container's exit."""
    return pre_stop_s + exit_timeout_s + EXIT_MARGIN_SECONDS


@dataclass(frozen=True, kw_only=True)
class DrainBudget:
    """A replica's drain: what the stack renders and why (the plan and the PR comment print it)."""

    longest_stream_s: float
    exit_timeout_s: int
    exit_hand_set: bool
    pre_stop_s: int
    grace_period_s: int
    grace_hand_set: bool

    @property
    def cut_after_s(self) -> float | None:
        """Streams longer than this lose their end when the replica goes (None when none does)."""
        return float(self.exit_timeout_s) if self.exit_timeout_s < self.longest_stream_s else None

    @property
    def flag(self) -> str | None:
        """Why the drain does not cover the longest stream (None when it does)."""
        if self.cut_after_s is None:
            return None
        why = ("hand-set serving.server.exitTimeoutSeconds" if self.exit_hand_set
               else f"the setting's bound of {MAX_EXIT_TIMEOUT_SECONDS} s")  # fmt: skip
        return (f"streams running longer than {self.exit_timeout_s} s are cut when a replica is removed ({why}; the "
                f"longest the SLO admits takes {self.longest_stream_s:.0f} s)")  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return {
            "longestStreamSeconds": round(self.longest_stream_s, 1),
            "exitTimeoutSeconds": self.exit_timeout_s,
            "exitTimeoutHandSet": self.exit_hand_set,
            "preStopSeconds": self.pre_stop_s,
            "gracePeriodSeconds": self.grace_period_s,
            "gracePeriodHandSet": self.grace_hand_set,
            "flag": self.flag,
        }


def budget(
    *,
    longest_stream_s: float,
    exit_timeout_s: int | None,
    pre_stop_s: int,
    grace_period_s: int | None,
) -> DrainBudget:
    """The drain from the longest stream and the stack's hand-set values (None: derive)."""
    exit_s = exit_timeout_s if exit_timeout_s is not None else derived_exit_timeout(longest_stream_s)
    grace = grace_period_s if grace_period_s is not None else grace_period(pre_stop_s, exit_s)
    return DrainBudget(longest_stream_s=longest_stream_s, exit_timeout_s=exit_s, exit_hand_set=exit_timeout_s is not None,
                       pre_stop_s=pre_stop_s, grace_period_s=grace, grace_hand_set=grace_period_s is not None)  # fmt: skip
