"""The Neuron model (``inference_image/neuron/model.py``) honours a cancel by request id: a ``stop`` request
naming a running request's id stops it, and the Neuron image's Python backend (Triton 2.51) cannot cancel a
call otherwise. Runs the model's ``execute`` with a fake ``triton_python_backend_utils``, the real tokenizer and a
recording scheduler (no Neuron device)."""

from __future__ import annotations

import importlib
import sys
import types

import numpy as np
import pytest

from inference_platform.inference_image.runtime.stop_requests import NO_ID, RunningById
from inference_platform.inference_image.runtime.tokenizer import load_tokenizer
from inference_platform.inference_image.testing.cpu_llm_api.checkpoint import write_checkpoint


class _Tensor:
    def __init__(self, name, array):
        self._name, self._array = name, np.asarray(array)

    def name(self):
        return self._name

    def as_numpy(self):
        return self._array


class _Response:
    def __init__(self, output_tensors=(), error=None):
        self.output_tensors, self.error = list(output_tensors), error


class _Error:
    def __init__(self, message):
        self.message = message


class _Request:
    def __init__(self, request_id, **tensors):
        self._id, self._tensors = request_id, {k: np.asarray(v) for k, v in tensors.items()}

    def request_id(self):
        return self._id


@pytest.fixture
def model(monkeypatch, tmp_path):
    pb = types.ModuleType("triton_python_backend_utils")
    pb.Tensor, pb.InferenceResponse, pb.TritonError = _Tensor, _Response, _Error
    pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1
    pb.get_input_tensor_by_name = lambda request, name: (
        _Tensor(name, request._tensors[name]) if name in request._tensors else None
    )
    monkeypatch.setitem(sys.modules, "triton_python_backend_utils", pb)
    name = "inference_platform.inference_image.neuron.model"
    module = importlib.reload(importlib.import_module(name)) if name in sys.modules else importlib.import_module(name)
    instance = module.TritonPythonModel.__new__(module.TritonPythonModel)
    instance.tokenizer = load_tokenizer(write_checkpoint(tmp_path / "checkpoint"))
    instance.decoupled, instance.max_seq_len, instance.stop_token_ids = False, 64, ()
    instance.running = RunningById()
    instance.jobs = []
    instance.scheduler = types.SimpleNamespace(submit=lambda job: (instance.jobs.append(job), job.done.set()))
    yield instance
    sys.modules.pop(name, None)  # bound to the fake pb_utils: no later import may reuse it


def _generate(request_id):
    return _Request(request_id, text_input=np.array([b"hello"], dtype=np.object_),
                    sampling_param_max_tokens=np.array([8], dtype=np.int32))  # fmt: skip


def _stop(request_id):
    return _Request(request_id, text_input=np.array([b""], dtype=np.object_), stop=[True])


def test_a_stop_request_stops_the_running_request_with_its_id_and_gets_an_empty_answer(model):
    model.execute([_generate("a"), _generate("b")])
    a, b = model.jobs
    assert not a.cancelled() and not b.cancelled()
    (answer,) = model.execute([_stop("a")])
    assert answer.error is None and answer.output_tensors == []
    assert a.cancelled() and not b.cancelled()
    assert len(model.jobs) == 2  # the stop request generated nothing


def test_a_stop_request_without_an_id_is_refused(model):
    (answer,) = model.execute([_stop("")])
    assert answer.error is not None and answer.error.message == NO_ID
