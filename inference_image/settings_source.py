"""Where the serving commands in the image read their settings: a stack's files or one mounted file.

In a pod the rollout mounts the validated ``serving`` section (camelCase, JSON or YAML) from a
ConfigMap and passes ``--settings``; locally ``--stack`` reads the stack files like every tool.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from inference_platform.errors import CommandError

EXIT_CONFIG = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--settings", type=Path, help="the stack's serving section as JSON or YAML (camelCase)")
    source.add_argument("--stack", help="read the serving section from stacks/Pulumi.<stack>.yaml")


def load(args: argparse.Namespace) -> Any:
    """The validated ``ServingSettings``; every problem in one CommandError (exit 2)."""
    if args.stack is not None:
        from inference_platform.settings import stack_files

        return stack_files.load(args.stack).serving
    return load_file(args.settings)


def load_file(path: Path) -> Any:
    import yaml

    from inference_platform.settings.base import SettingsError, validation_problems
    from inference_platform.settings.serving import ServingSettings

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise CommandError(f"cannot read settings file {path}: {err.strerror}", EXIT_CONFIG) from None
    try:
        raw = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as err:
        raise CommandError(
            f"settings file {path} is not valid {path.suffix.lstrip('.') or 'YAML'}: {err}", EXIT_CONFIG
        ) from None
    problems = validation_problems(ServingSettings, raw, ServingSettings.key)
    if not problems:
        serving = ServingSettings.model_validate(raw)
        problems = serving.shape_problems()
    if problems:
        raise CommandError(str(SettingsError(problems, header=f"invalid serving settings in {path}")), EXIT_CONFIG)
    return serving
