"""A fake ``triton_python_backend_utils`` and request objects, to drive the production ``tensorrt_llm`` model.py with the
CPU stand-in engine in this process: what Triton's Python backend hands a model (tensors, response senders with
``is_cancelled``, custom-metric families) and what it receives (responses, flags), recorded for the tests.

Only the calls model.py makes exist here; the behaviour the model depends on is Triton's: a response sender takes
responses until one carries TRITONSERVER_RESPONSE_COMPLETE_FINAL, after which it refuses more (Triton frees it).
"""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
import time
import types
from pathlib import Path
from typing import Any

import numpy as np

FINAL = 1


class Tensor:
    def __init__(self, name: str, array: Any) -> None:
        self._name, self._array = name, np.asarray(array)

    def name(self) -> str:
        return self._name

    def as_numpy(self) -> np.ndarray:
        return self._array


class TritonError:
    CANCELLED = "CANCELLED"

    def __init__(self, message: str, code: str | None = None) -> None:
        self.message, self.code = message, code


class InferenceResponse:
    def __init__(self, output_tensors: Any = (), error: TritonError | None = None) -> None:
        self.output_tensors, self.error = list(output_tensors), error

    def value(self, name: str) -> Any:
        for tensor in self.output_tensors:
            if tensor.name() == name:
                return tensor.as_numpy().tolist()
        return None


class Metric:
    def __init__(self, family: MetricFamily, labels: dict[str, str]) -> None:
        self.family, self.labels = family, labels

    def set(self, value: float) -> None:
        self.family.record(self.labels, value)


class MetricFamily:
    GAUGE = "gauge"
    families: list[MetricFamily] = []
    observer: Any = None
    """Called as observer(family, labels, value) on every set (a test records what else held then)."""

    def __init__(self, name: str, description: str, kind: str) -> None:
        self.name = name
        self.values: dict[tuple[tuple[str, str], ...], float] = {}
        self.sets: list[tuple[dict[str, str], float]] = []
        MetricFamily.families.append(self)

    def Metric(self, labels: dict[str, str]) -> Metric:
        return Metric(self, labels)

    def record(self, labels: dict[str, str], value: float) -> None:
        self.values[tuple(sorted(labels.items()))] = value
        self.sets.append((labels, value))
        if MetricFamily.observer is not None:
            MetricFamily.observer(self, labels, value)


class Logger:
    lines: list[str] = []

    @staticmethod
    def log_warn(message: str) -> None:
        Logger.lines.append(message)

    log_info = log_error = log_warn


class Sender:
    """A decoupled request's response sender."""

    def __init__(self) -> None:
        self.responses: list[tuple[InferenceResponse, int]] = []
        self.cancelled = False
        self.done = threading.Event()

    def send(self, response: InferenceResponse, flags: int = 0) -> None:
        if self.done.is_set():
            raise RuntimeError("the response sender was already closed (a second final response)")
        self.responses.append((response, flags))
        if flags & FINAL:
            self.done.set()

    def is_cancelled(self) -> bool:
        if self.done.is_set():
            raise RuntimeError("is_cancelled() after the final response: Triton has freed the response factory")
        return self.cancelled

    def final(self, timeout: float = 30) -> InferenceResponse | None:
        """The final response, waited for at most ``timeout`` seconds (None if it never came)."""
        if not self.done.wait(timeout):
            return None
        return self.responses[-1][0]


class Request:
    def __init__(self, inputs: dict[str, Any], request_id: str = "") -> None:
        self.inputs = {k: Tensor(k, v if isinstance(v, list | np.ndarray) else [v]) for k, v in inputs.items()}
        self._id = request_id
        self.sender = Sender()

    def request_id(self) -> str:
        return self._id

    def get_response_sender(self) -> Sender:
        return self.sender


def module() -> types.ModuleType:
    pb = types.ModuleType("triton_python_backend_utils")
    pb.Tensor = Tensor  # type: ignore[attr-defined]
    pb.TritonError = TritonError  # type: ignore[attr-defined]
    pb.InferenceResponse = InferenceResponse  # type: ignore[attr-defined]
    pb.MetricFamily = MetricFamily  # type: ignore[attr-defined]
    pb.Logger = Logger  # type: ignore[attr-defined]
    pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL = FINAL  # type: ignore[attr-defined]
    pb.get_input_tensor_by_name = lambda request, name: request.inputs.get(name)  # type: ignore[attr-defined]
    pb.using_decoupled_model_transaction_policy = lambda config: bool(  # type: ignore[attr-defined]
        config.get("model_transaction_policy", {}).get("decoupled")
    )
    return pb


def load_model(monkeypatch: Any, model_dir: Path, *, decoupled: bool = True, cancel_period_ms: int = 20) -> Any:
    """model.py from ``model_dir/1`` (as Triton loads it), initialised with the fake backend utilities."""
    MetricFamily.families = []
    MetricFamily.observer = None
    monkeypatch.setitem(sys.modules, "triton_python_backend_utils", module())
    spec = importlib.util.spec_from_file_location(
        f"tensorrt_llm_model_{time.monotonic_ns()}", model_dir / "1" / "model.py"
    )
    assert spec is not None and spec.loader is not None
    code = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(code)
    config = {
        "name": "tensorrt_llm",
        "model_transaction_policy": {"decoupled": decoupled},
        "parameters": {
            "llm_config": {"string_value": "model.yaml"},
            "stop_words": {"string_value": "[]"},
            "cancellation_check_period_ms": {"string_value": str(cancel_period_ms)},
        },
    }
    model = code.TritonPythonModel()
    model.module = code
    return model, {
        "model_config": json.dumps(config),
        "model_repository": str(model_dir),
        "model_version": "1",
        "model_name": "tensorrt_llm",
    }


def gauge(name: str, **labels: str) -> float | None:
    for family in MetricFamily.families:
        if family.name != name:
            continue
        for key, value in family.values.items():
            if all((k, v) in key for k, v in labels.items()):
                return value
    return None
