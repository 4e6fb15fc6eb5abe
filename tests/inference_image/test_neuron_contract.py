"""``neuron_llm`` on the LLM-API text contract: the OpenAI server's tensors in, the contract's outputs out, so the
npu stack serves the same API. Runs the model's ``execute`` with a fake ``triton_python_backend_utils``, the real
tokenizer and BatchScheduler, and a scripted engine in place of NxD Inference (no Neuron device here)."""

from __future__ import annotations

import importlib
import sys
import types

import numpy as np
import pytest

from inference_platform.catalog.stop_tokens import stop_tokens
from inference_platform.inference_image.llmapi import contract
from inference_platform.inference_image.neuron import repository
from inference_platform.inference_image.runtime.neuron_engine import BatchScheduler
from inference_platform.inference_image.runtime.stop_requests import RunningById
from inference_platform.inference_image.runtime.tokenizer import load_tokenizer
from inference_platform.inference_image.testing.cpu_llm_api.checkpoint import write_checkpoint
from inference_platform.settings.serving import ServingSettings


class _Tensor:
    def __init__(self, name, array):
        self.name_, self.array = name, np.asarray(array)

    def as_numpy(self):
        return self.array


class _Response:
    def __init__(self, output_tensors=(), error=None):
        self.outputs = {t.name_: t.array for t in output_tensors}
        self.error = error


class _Error:
    def __init__(self, message):
        self.message = message


class _Sender:
    def __init__(self):
        self.sent = []

    def send(self, response=None, flags=0):
        self.sent.append((response, flags))

    def is_cancelled(self):
        return False


class _Request:
    def __init__(self, tensors, request_id="r1"):
        self.tensors, self.id, self.sender = tensors, request_id, _Sender()

    def request_id(self):
        return self.id

    def get_response_sender(self):
        return self.sender


def _text(value):
    return np.array([value.encode()], dtype=np.object_)


@pytest.fixture
def neuron(monkeypatch, tmp_path):
    pb = types.ModuleType("triton_python_backend_utils")
    pb.Tensor, pb.InferenceResponse, pb.TritonError = _Tensor, _Response, _Error
    pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1
    pb.get_input_tensor_by_name = lambda r, n: _Tensor(n, r.tensors[n]) if n in r.tensors else None
    monkeypatch.setitem(sys.modules, "triton_python_backend_utils", pb)
    name = "inference_platform.inference_image.neuron.model"
    module = importlib.reload(importlib.import_module(name)) if name in sys.modules else importlib.import_module(name)
    tokenizer = load_tokenizer(write_checkpoint(tmp_path / "checkpoint"))
    model = module.TritonPythonModel.__new__(module.TritonPythonModel)
    model.tokenizer, model.max_seq_len, model.decoupled = tokenizer, 4096, True
    model.stop_token_ids = module.stop_token_ids(tokenizer, list(stop_tokens("Llama-3.1-8B")))
    model.running = RunningById()
    script = {}

    def run_batch(jobs):  # TEST STAND-IN for NeuronEngine.run: each row emits its scripted tokens
        for job in jobs:
            for token in script["tokens"]:
                job.push(token)
                if job.done.is_set():
                    break

    model.scheduler = BatchScheduler(run_batch, 4)
    yield model, tokenizer, script, module
    model.scheduler.stop()


def _answer(model, request):
    model.execute([request])
    for _ in range(200):
        if request.sender.sent and request.sender.sent[-1][1] == 1:
            break
        import time

        time.sleep(0.01)
    return request.sender.sent


REQUIRED_OUTPUTS = {"text_output", "finish_reason", "num_input_tokens", "num_output_tokens", "num_cached_tokens"}


def test_a_streamed_chat_answer_comes_back_in_the_contracts_outputs(neuron):
    model, tokenizer, script, _ = neuron
    eot = tokenizer.encode("<|eot_id|>", add_special_tokens=False)[0]
    script["tokens"] = [*tokenizer.encode("Bonjour 👋", add_special_tokens=False), eot, 65, 66]
    request = _Request({"text_input": _text("<|begin_of_text|>hi"), "streaming": np.array([True]),
                        "sampling_param_add_special_tokens": np.array([False]),
                        "sampling_param_max_tokens": np.array([32], dtype=np.int32)})  # fmt: skip
    sent = _answer(model, request)
    outputs = [r.outputs for r, _ in sent if r is not None]
    assert REQUIRED_OUTPUTS <= set(outputs[-1]) <= {t.name for t in contract.OUTPUTS}
    assert "".join(o["text_output"][0].decode() for o in outputs) == "Bonjour 👋"
    assert (
        outputs[-1]["finish_reason"][0] == b"stop" and outputs[-1]["num_output_tokens"][0] == len(script["tokens"]) - 3
    )
    # The template already wrote the BOS: add_special_tokens false adds none.
    assert outputs[-1]["num_input_tokens"][0] == len(tokenizer.encode("<|begin_of_text|>hi", add_special_tokens=False))


def test_structured_output_is_refused_naming_the_input(neuron):
    model, _, script, _ = neuron
    script["tokens"] = []
    request = _Request({"text_input": _text("hi"), "guided_decoding_guide_type": _text("json_object")})
    ((response, flags),) = _answer(model, request)
    assert flags == 1 and response.error.message.startswith("guided_decoding_guide_type")


def test_stop_strings_of_the_catalog_are_single_tokens_of_the_tokenizer(neuron):
    _, tokenizer, _, module = neuron
    assert len(module.stop_token_ids(tokenizer, list(stop_tokens("Llama-3.1-8B")))) == 3
    with pytest.raises(Exception, match="not one token"):
        module.stop_token_ids(tokenizer, ["two tokens"])


def test_the_rendered_repository_is_one_model_on_the_contract(tmp_path):
    serving = ServingSettings.model_validate({"backend": "neuron", "kvCache": {"enableReuse": False,
                                              "enableChunkedContext": False}})  # fmt: skip
    names = repository.render_repository(serving, tmp_path / "repo", compiled_dir=tmp_path / "c",
                                         tokenizer_dir=tmp_path / "t")  # fmt: skip
    config = (tmp_path / "repo" / "neuron_llm" / "config.pbtxt").read_text()
    assert names == ["neuron_llm"] and (tmp_path / "repo" / "neuron_llm" / "1" / "model.py").exists()
    assert (
        contract.io_block("input", contract.INPUTS) in config
        and contract.io_block("output", contract.OUTPUTS) in config
    )
    for key in ("compiled_model_dir", "tokenizer_dir", "batch_size", "max_seq_len", contract.PARAMETER_STOP_WORDS):
        assert f'key: "{key}"' in config


def test_the_config_parses_as_tritons_model_config(tmp_path):
    """Triton's own schema (model_config.proto, as tritonclient ships it) accepts every field and enum."""
    from google.protobuf import text_format
    from tritonclient.grpc import model_config_pb2

    serving = ServingSettings.model_validate({"backend": "neuron", "kvCache": {"enableReuse": False,
                                              "enableChunkedContext": False}})  # fmt: skip
    text = repository.render_config(serving, compiled_dir=tmp_path / "c", tokenizer_dir=tmp_path / "t")
    parsed = text_format.Parse(text, model_config_pb2.ModelConfig())
    assert parsed.name == "neuron_llm" and parsed.max_batch_size == 0 and parsed.model_transaction_policy.decoupled
    assert [i.name for i in parsed.input] == [t.name for t in contract.INPUTS]
    assert [o.name for o in parsed.output] == [t.name for t in contract.OUTPUTS]
