"""Which policy-pack configuration a plan evaluates a stack with, chosen explicitly, and read strictly.

In order: the file named (``inferctl plan --policy-config FILE``, as ``pulumi preview --policy-pack-config
FILE``), else the file the planned project keeps for the stack, ``policies/config/<stack>.json`` under its
own root (the folder holding its ``Pulumi.yaml``), else none. A consumer's program never gets this
repository's files by sharing a stack name: the installed package's copies are not looked at.

With none, the pack runs on its rules' schema defaults, and those allow no accelerators: the plan says so
(``PolicyConfig.note``) and the accelerator budget's violation names the missing configuration.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from inference_platform.errors import CommandError

CONFIG_DIR: Final = Path("policies") / "config"
"""Where a project keeps its per-stack pack configuration, relative to its root."""


@dataclass(frozen=True)
class PolicyConfig:
    """The configuration the pack is evaluated with, and where it came from (None: no file applies)."""

    values: dict[str, Any] = field(default_factory=dict)
    source: Path | None = None

    @property
    def note(self) -> str | None:
        """One line for the plan when no configuration applies; None when one does."""
        if self.source is not None:
            return None
        return (
            "no policy configuration applies (no --policy-config, no policies/config/<stack>.json in the "
            "project): the pack runs on its defaults, which allow no accelerators and set no monthly budget"
        )


def project_config_file(project_root: Path, stack: str) -> Path:
    return project_root / CONFIG_DIR / f"{stack}.json"


def select(path: Path | None, project_root: Path, stack: str) -> PolicyConfig:
    """The configuration for ``stack`` of the project at ``project_root``; CommandError (exit 2) naming every
    bad entry of the file chosen."""
    candidate = path or project_config_file(project_root, stack)
    if path is None and not candidate.is_file():
        return PolicyConfig()
    return PolicyConfig(read(candidate), candidate)


def read(path: Path) -> dict[str, Any]:
    """A pack configuration file, checked as the pack would check it (every bad entry at once, exit 2)."""
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CommandError(f"policy config {path}: {err}", exit_code=2) from None
    check(config, path)
    return config


def check(config: Any, source: Path | str) -> None:
    """CommandError (exit 2) with one line per bad entry of a policy-pack configuration
    (policies/pack_config.py): unknown policies or keys, bad enforcement levels, wrong types, non-finite
    or negative numbers, and the cost policies' usage assumptions."""
    from inference_platform.policies import pack_config
    from inference_platform.policies.pack import POLICIES

    found = pack_config.problems(config, POLICIES) + assumption_problems(config)
    if found:
        count = f"{len(found)} problem{'s' if len(found) != 1 else ''}"
        lines = "\n".join(f"  - {p}" for p in found)
        raise CommandError(f"invalid policy config {source} ({count}):\n{lines}", exit_code=2)


def assumption_problems(config: Any) -> list[str]:
    """``<policy>.assumptions.<key>: <message>`` for every bad usage assumption of every cost policy."""
    from inference_platform.planners import costing

    problems: list[str] = []
    for name, entry in config.items() if isinstance(config, Mapping) else ():
        if not str(name).startswith("cost-") or not isinstance(entry, Mapping) or "assumptions" not in entry:
            continue
        try:
            costing.Usage.from_config(entry["assumptions"])
        except costing.UsageError as err:
            problems += [f"{name}.{key}: {message}" for key, message in err.problems]
    return problems
