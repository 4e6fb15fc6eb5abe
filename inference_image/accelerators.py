"""What accelerators this pod can see, and whether an engine built for some target can run on them.

TensorRT engines run only on the compute capability they were built for, and a TP x PP engine needs
exactly its ranks' worth of devices; a Neuron model is compiled for one NeuronCore generation and a
tensor-parallel degree. The probes ask the vendor tools the device plugins make visible to the pod
(``nvidia-smi``, ``neuron-ls``); they take the command runner as a parameter so tests inject output.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from inference_platform import catalog

NEURON_SYSFS = Path("/sys/devices/virtual/neuron_device")
# Neuron device names (sysfs info/architecture/device_name) -> NeuronCore generation, as the catalog and
# the artifact metadata name what a model is compiled for (Inferentia2 and Trainium1 share NeuronCore-v2).
NEURON_ARCHITECTURES = {
    "Inferentia2": "neuron-v2",
    "Trainium": "neuron-v2",
    "Trainium1": "neuron-v2",
    "Trainium2": "neuron-v3",
}
_NO_GPUS = ("", "void", "none")

Runner = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]


class ProbeError(RuntimeError):
    """A vendor tool failed or answered something unreadable; the message quotes it."""


@dataclass(frozen=True)
class VisibleAccelerators:
    vendor: str
    """``nvidia``, ``neuron`` or ``none``."""
    architecture: str | None
    """``sm89``-style compute capability, or the NeuronCore generation (``neuron-v2``)."""
    devices: int
    units: int
    """Tensor-parallel units: GPUs, or NeuronCores."""
    names: tuple[str, ...] = ()

    def describe(self) -> str:
        if not self.devices:
            return "no accelerators"
        kinds = ", ".join(sorted(set(self.names))) or self.vendor
        return f"{self.devices} x {kinds} ({self.architecture}, {self.units} units)"


def run_command(argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=60, check=False)


def probe_nvidia(run: Runner = run_command, env: Mapping[str, str] = os.environ) -> VisibleAccelerators:
    """GPUs the NVIDIA container runtime exposes (NVIDIA_VISIBLE_DEVICES) as nvidia-smi lists them."""
    if env.get("NVIDIA_VISIBLE_DEVICES", "all").strip().lower() in _NO_GPUS:
        return VisibleAccelerators(catalog.VENDOR_NONE, None, 0, 0)
    try:
        result = run(["nvidia-smi", "--query-gpu=index,name,compute_cap", "--format=csv,noheader"])
    except FileNotFoundError:
        return VisibleAccelerators(catalog.VENDOR_NONE, None, 0, 0)
    if result.returncode != 0:
        first = (result.stderr or result.stdout).strip().splitlines()[:1]
        raise ProbeError(f"nvidia-smi failed ({result.returncode}): {first[0] if first else 'no output'}")
    names, archs = [], set()
    for line in result.stdout.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 3:
            raise ProbeError(f"nvidia-smi printed an unexpected line: {line!r}")
        major, _, minor = parts[2].partition(".")
        if not (major.isdigit() and minor.isdigit()):
            raise ProbeError(f"nvidia-smi printed compute capability {parts[2]!r}")
        names.append(parts[1])
        archs.add(f"sm{major}{minor}")
    if len(archs) > 1:
        raise ProbeError(f"this pod sees GPUs of several architectures: {', '.join(sorted(archs))}")
    count = len(names)
    return VisibleAccelerators(
        catalog.VENDOR_NVIDIA if count else catalog.VENDOR_NONE, next(iter(archs), None), count, count, tuple(names)
    )


def probe_neuron(run: Runner = run_command, sysfs: Path = NEURON_SYSFS) -> VisibleAccelerators:
    """Neuron devices the device plugin mounted, from ``neuron-ls --json-output`` and sysfs."""
    try:
        result = run(["neuron-ls", "--json-output"])
    except FileNotFoundError:
        return VisibleAccelerators(catalog.VENDOR_NONE, None, 0, 0)
    if result.returncode != 0:
        first = (result.stderr or result.stdout).strip().splitlines()[:1]
        raise ProbeError(f"neuron-ls failed ({result.returncode}): {first[0] if first else 'no output'}")
    try:
        devices = json.loads(result.stdout or "[]")
        cores = sum(int(d["nc_count"]) for d in devices)
        indices = [int(d["neuron_device"]) for d in devices]
    except (ValueError, KeyError, TypeError) as err:
        raise ProbeError(f"neuron-ls printed unreadable JSON ({err})") from None
    if not devices:
        return VisibleAccelerators(catalog.VENDOR_NONE, None, 0, 0)
    name_file = sysfs / f"neuron{indices[0]}" / "info" / "architecture" / "device_name"
    try:
        name = name_file.read_text(encoding="utf-8").strip()
    except OSError as err:
        raise ProbeError(f"cannot read {name_file}: {err.strerror}") from None
    if name not in NEURON_ARCHITECTURES:
        raise ProbeError(f"unknown Neuron device {name!r} (known: {', '.join(NEURON_ARCHITECTURES)})")
    return VisibleAccelerators(
        catalog.VENDOR_NEURON, NEURON_ARCHITECTURES[name], len(devices), cores, (name,) * len(devices)
    )


def probe_for(backend: str) -> Callable[[], VisibleAccelerators]:
    return probe_neuron if backend == "neuron" else probe_nvidia


def placement_problem(
    visible: VisibleAccelerators, *, vendor: str, architecture: str | None, ranks: int, units_per_device: int = 1
) -> str | None:
    """Why an engine for ``architecture`` with ``ranks`` ranks on this node cannot run here, or None.

    GPUs: exactly ``ranks`` visible (more would sit idle, fewer cannot hold the engine). Neuron: the
    whole devices that hold ``ranks`` NeuronCores.
    """
    if visible.vendor != vendor or not visible.devices:
        resource = catalog.RESOURCE_NEURON_DEVICE if vendor == catalog.VENDOR_NEURON else catalog.RESOURCE_NVIDIA_GPU
        return f"this pod sees {visible.describe()}; the engine needs {vendor} accelerators (request {resource})"
    if visible.architecture != architecture:
        return (
            f"the engine was built for {architecture} but this pod sees {visible.describe()}: "
            "an engine only runs on the architecture it was built for"
        )
    devices = math.ceil(ranks / units_per_device)
    if vendor == catalog.VENDOR_NEURON:
        if visible.units < ranks or visible.devices != devices:
            return f"the engine needs {ranks} NeuronCores ({devices} devices) but this pod sees {visible.describe()}"
    elif visible.units != ranks:
        return f"the engine runs {ranks} rank(s) per node but this pod sees {visible.describe()}"
    return None
