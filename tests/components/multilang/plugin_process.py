"""Starts provider/ as the Pulumi engine does and talks to it over the provider gRPC interface.

The Python language host runs a source-based plugin as ``python <plugin folder> <engine address>`` with the
plugin's virtualenv (pulumi/pulumi sdk/python/cmd/pulumi-language-python/main.go ``RunPlugin``, v3.259.0:
"Run `python <path to plugin> req.Args...`, executing the plugin's `__main__.py`"); the provider prints its
port on the first line of stdout (pulumi/provider/server.py ``main``, pulumi 3.272.0) and the engine dials
it. This virtualenv is the plugin's (the package is installed in it), so ``sys.executable`` runs it.
"""

from __future__ import annotations

import selectors
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import grpc
from pulumi.runtime.proto import provider_pb2_grpc

from inference_platform.processes import with_parent_death
from tests.conftest import REPO

PLUGIN_DIR = REPO / "provider"
START_SECONDS = 60
"""Bound on the plugin's start (imports pulumi_aws and pulumi_kubernetes on a shared 2-core machine)."""


@contextmanager
def running_plugin(engine_address: str, cwd: Path) -> Iterator[provider_pb2_grpc.ResourceProviderStub]:
    # stderr to a file: a pipe nobody reads would fill and stall the plugin.
    errors = (cwd / "plugin-stderr.txt").open("w+b")
    process = subprocess.Popen(
        # Not preexec_fn=die_with_parent(): this process runs the engine stand-in's gRPC server, and a
        # preexec_fn forks, which aborts the child in gRPC's atfork handlers (grpc/grpc#43055).
        with_parent_death([sys.executable, str(PLUGIN_DIR), engine_address]),
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=errors,
    )
    try:
        port = _first_line(process, errors)
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        grpc.channel_ready_future(channel).result(timeout=START_SECONDS)
        yield provider_pb2_grpc.ResourceProviderStub(channel)
        channel.close()
    finally:
        process.terminate()
        try:
            process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
        errors.close()


def _first_line(process: subprocess.Popen[bytes], errors: IO[bytes]) -> int:
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout=START_SECONDS):
            raise AssertionError(f"the plugin printed no port within {START_SECONDS} s")
    line = process.stdout.readline().decode().strip()
    if not line.isdigit():
        process.wait(timeout=20)
        errors.seek(0)
        raise AssertionError(f"the plugin did not start (stdout {line!r}): {errors.read().decode()[-3000:]}")
    return int(line)
