"""Runs a Pulumi Python program under the SDK mock engine exactly as the Python language host would.

The host sets project, stack and config, then runs the program directory as ``__main__`` inside a
root Stack resource (``run_in_stack``) and waits for every outstanding RPC. We do the same, with the
recording monitor in place of the engine, in a fresh context so repeated plans never share state.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import json
import os
import runpy
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime import config as runtime_config
from pulumi.runtime import settings as runtime_settings
from pulumi.runtime.stack import run_in_stack
from pulumi.runtime.sync_await import _sync_await

from inference_platform.errors import CommandError
from inference_platform.offline_plan.mocks import MockContext, PlanMocks, UnmockedInvokeError
from inference_platform.offline_plan.recorder import RecordedResource, RecordingMonitor
from inference_platform.redaction import scrub
from inference_platform.settings.project import CONFIG_ERROR, Project, StackConfig, load_project, load_stack_config


class ProgramError(CommandError):
    """The program stopped: a config problem it reported, or an error naming where it happened."""

    exit_code = CONFIG_ERROR

    def __init__(self, message: str, registered: int = 0) -> None:
        super().__init__(message)
        self.registered = registered
        """How many resources the program had registered when it stopped (0 for config errors)."""


@dataclass
class ProgramRun:
    project: Project
    config: StackConfig
    resources: list[RecordedResource]
    outputs: dict[str, Any]
    seconds: float
    logs: list[str] = field(default_factory=list)


def run_program(
    program_dir: Path,
    stack: str,
    *,
    stack_file: Path | None = None,
    secret_values: Mapping[str, str] | None = None,
    mocks: pulumi.runtime.Mocks | None = None,
    record: bool = True,
) -> ProgramRun:
    """Plan one stack. ``record=False`` uses the SDK's stock monitor (the benchmark's baseline)."""
    project = load_project(program_dir)
    config = load_stack_config(project, stack, stack_file, secret_values)
    ctx = dataclasses.replace(MockContext.for_region(config.values.get("aws:region")),
                              serving_image_digest=_image_digest(config.values.get("inference-platform:inference")))  # fmt: skip
    mocks = mocks or PlanMocks(ctx)
    monitor = RecordingMonitor(mocks, project.name, stack) if record else pulumi.runtime.mocks.MockMonitor(mocks)
    started = time.perf_counter()
    logs: list[str] = []
    contextvars.copy_context().run(_run, project, config, mocks, monitor, logs)
    seconds = time.perf_counter() - started
    if isinstance(monitor, RecordingMonitor):
        resources = sorted(monitor.recorded.values(), key=lambda r: r.urn)
        outputs = monitor.stack_outputs
    else:
        resources, outputs = [], {}
    return ProgramRun(project, config, resources, outputs, seconds, logs)


def _image_digest(inference: Any) -> str | None:
    """``inference.image.digest`` of the raw stack config (a mapping, or its JSON text), for the mocks."""
    if isinstance(inference, str):
        try:
            inference = json.loads(inference)
        except ValueError:
            return None
    image = inference.get("image") if isinstance(inference, dict) else None
    digest = image.get("digest") if isinstance(image, dict) else None
    return digest if isinstance(digest, str) else None


def run_function(
    fn: Callable[[], Any],
    *,
    project: str = "test",
    stack: str = "test",
    region: str = "us-west-2",
    config: Mapping[str, str] | None = None,
    secret_keys: Sequence[str] = (),
) -> ProgramRun:
    """Run ``fn`` (which registers resources) under the recording mock engine, as components' unit
    tests and other programs' tests need: same URNs, transforms, mocks and recording as a plan."""
    proj = Project(name=project, root=Path.cwd(), main=Path.cwd(), stack_config_dir=Path.cwd(), declarations={})
    values = {"aws:region": region, **(config or {})}
    stack_config = StackConfig(stack=stack, file=Path("<inline>"), values=values, secret_keys=tuple(secret_keys))
    mocks = PlanMocks(MockContext.for_region(region))
    monitor = RecordingMonitor(mocks, project, stack)
    logs: list[str] = []
    started = time.perf_counter()
    contextvars.copy_context().run(_run, proj, stack_config, mocks, monitor, logs, fn)
    resources = sorted(monitor.recorded.values(), key=lambda r: r.urn)
    return ProgramRun(proj, stack_config, resources, monitor.stack_outputs, time.perf_counter() - started, logs)


def _run(
    project: Project,
    config: StackConfig,
    mocks: Any,
    monitor: Any,
    logs: list[str],
    fn: Callable[[], Any] | None = None,
) -> None:
    pulumi.runtime.set_mocks(mocks, project=project.name, stack=config.stack, preview=True, monitor=monitor,
                             logger=_ListLogger(logs))  # type: ignore[arg-type]  # a duck-typed logger (_ListLogger)  # fmt: skip
    runtime_settings.SETTINGS.root_directory = str(project.root)
    runtime_config.set_all_config(dict(config.values), list(config.secret_keys))
    # set_mocks registers and finishes a root stack of its own; the host runs the program in a new one.
    runtime_settings.set_root_resource(None)  # type: ignore[arg-type]  # None clears it; pulumi types a resource
    main = project.main
    program = fn or (lambda: runpy.run_path(str(main), run_name="__main__"))
    registered = lambda: len(getattr(monitor, "recorded", ()))  # noqa: E731
    with _program_environment(main):
        try:
            _sync_await(run_in_stack(program))  # type: ignore[arg-type]  # pulumi ignores a non-awaitable result
        except (pulumi.RunError, UnmockedInvokeError) as err:
            raise ProgramError(str(err), registered()) from None
        except SystemExit as err:
            raise ProgramError(f"program exited with status {err.code}", registered()) from None
        except Exception as err:
            raise ProgramError(_describe_failure(err, main), registered()) from err


@contextlib.contextmanager
def _program_environment(main: Path) -> Iterator[None]:
    """cwd and sys.path as the Python host sets them, restored afterwards."""
    saved_cwd, saved_path, saved_argv = os.getcwd(), list(sys.path), list(sys.argv)
    os.chdir(main if main.is_dir() else main.parent)
    sys.path.insert(0, str(main if main.is_dir() else main.parent))
    sys.argv = [str(main)]
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        sys.path[:] = saved_path
        sys.argv = saved_argv


def _describe_failure(err: BaseException, main: Path) -> str:
    """One line: the error and the innermost frame inside the program's tree, when there is one."""
    root = str(main.parent if main.is_dir() else main.parent.parent)
    frames = [
        f
        for f in traceback.extract_tb(err.__traceback__)
        if f.filename.startswith(root) and "site-packages" not in f.filename
    ]
    where = f" (at {os.path.relpath(frames[-1].filename, root)}:{frames[-1].lineno})" if frames else ""
    return f"program failed: {type(err).__name__}: {err}{where}"


class _ListLogger:
    """Collects what the program logs through pulumi.log (the mock engine's logger interface: pulumi's
    MockEngine calls debug, info, warning and error only, though it types a logging.Logger)."""

    def __init__(self, sink: list[str]) -> None:
        self.sink = sink

    def debug(self, msg: str) -> None:
        pass

    def info(self, msg: str) -> None:
        self.sink.append(scrub(f"info: {msg}"))

    def warning(self, msg: str) -> None:
        self.sink.append(scrub(f"warning: {msg}"))

    def error(self, msg: str) -> None:
        self.sink.append(scrub(f"error: {msg}"))
