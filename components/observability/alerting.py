"""One alerting rule in the house's shape (severity label, runbook URL): its own module, so the rule sets that
``rules`` assembles (``token_rules``) and the other rooms' alerts (``components.batch.signals``) build alerts without
importing ``rules`` back."""

from __future__ import annotations

from typing import Any

SEVERITIES = ("critical", "warning")


def alert(
    name: str, expr: str, *, for_: str, severity: str, summary: str, description: str, runbook_base: str
) -> dict[str, Any]:
    """One alerting rule with its ``severity`` label and ``runbook_url`` (``<runbook_base>#<name, lower case>``)."""
    assert severity in SEVERITIES, severity
    return {
        "alert": name,
        "expr": expr,
        "for": for_,
        "labels": {"severity": severity},
        "annotations": {
            "summary": summary,
            "description": description,
            "runbook_url": f"{runbook_base}#{name.lower()}",
        },
    }
