"""Triton ``neuron_llm`` model: NxD Inference behind the LLM-API model's text contract.

The OpenAI server sends this model exactly what it sends ``tensorrt_llm`` (inference_image/llmapi/contract.py)
and reads the same outputs, so a client cannot tell which accelerator answered. Text becomes token ids and back
in ``runtime.text_contract``; generation runs in ``runtime.neuron_engine`` (static batches of the compiled size).
A stop string ends the answer and the request; a ``stop`` request (upstream's cancel by request id) and a client
that goes away (decoupled) cancel the running request.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import triton_python_backend_utils as pb_utils

from inference_platform.inference_image.llmapi import contract
from inference_platform.inference_image.runtime.generation import SequenceState
from inference_platform.inference_image.runtime.neuron_engine import BatchScheduler, Job, NeuronEngine
from inference_platform.inference_image.runtime.params import ModelConfigError, Parameters
from inference_platform.inference_image.runtime.request_gauges import NEURON_FAMILY, RequestGauges
from inference_platform.inference_image.runtime.stop_requests import NO_ID, RunningById, is_stop_request
from inference_platform.inference_image.runtime.text_contract import (
    TextRequestError,
    TextStream,
    parse_text_request,
)
from inference_platform.inference_image.runtime.tokenizer import load_tokenizer

NEURON_CONFIG = "neuron_config.json"
INPUT_NAMES = tuple(t.name for t in contract.INPUTS)


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        params = Parameters(config)
        compiled = Path(params.text("compiled_model_dir"))
        self.tokenizer = load_tokenizer(params.text("tokenizer_dir"))
        self.max_seq_len = params.integer("max_seq_len", minimum=2)
        self.stop_token_ids = stop_token_ids(self.tokenizer, json.loads(params.text(contract.PARAMETER_STOP_WORDS)))
        self.decoupled = pb_utils.using_decoupled_model_transaction_policy(config)
        batch_size = params.integer("batch_size", minimum=1)
        engine = NeuronEngine(compiled, architecture=_architecture(compiled), batch_size=batch_size)
        self.gauges = RequestGauges(
            pb_utils, family=NEURON_FAMILY, model=args["model_name"], version=args["model_version"],
            max_active=batch_size,
        )  # fmt: skip
        self.scheduler = BatchScheduler(engine.run, batch_size, on_load=self.gauges.update)
        self.running = RunningById()

    def execute(self, requests):
        waits: list[tuple[Job | None, dict[str, Any]]] = []
        for request in requests:
            sender = request.get_response_sender() if self.decoupled else None
            holder: dict[str, Any] = {"response": None}
            tensors = _tensors(request)
            if _flag(tensors, "liveness"):
                self._liveness(sender, holder)
                waits.append((None, holder))
                continue
            if is_stop_request(tensors):
                self._stop(request.request_id(), sender, holder)
                waits.append((None, holder))
                continue
            try:
                text_request = parse_text_request(tensors, self.tokenizer, stop_token_ids=self.stop_token_ids,
                                                  max_seq_len=self.max_seq_len)  # fmt: skip
                if text_request.llm.streaming and not self.decoupled:
                    raise TextRequestError("streaming: needs the decoupled transaction policy (serving.streaming)")
            except TextRequestError as err:
                self._answer_error(sender, holder, str(err))
                waits.append((None, holder))
                continue
            state = SequenceState(text_request.llm, exclude_input_default=True, max_seq_len=self.max_seq_len)
            stream = TextStream(text_request, self.tokenizer)
            handle = self.running.add(request.request_id())
            job = Job(
                state=state,
                emit=lambda chunk, s=sender, h=holder, st=state, ts=stream, r=handle: self._answer(s, h, chunk, st, ts, r),  # type: ignore[misc]  # mypy infers no default-bound lambda
                fail=lambda message, s=sender, h=holder, r=handle: self._answer_error(s, h, message, r),  # type: ignore[misc]  # as above
                cancelled=_cancelled(sender, handle),
            )  # fmt: skip
            self.scheduler.submit(job)
            waits.append((job, holder))
        if self.decoupled:
            return None
        for waiting, _ in waits:
            if waiting is not None:
                waiting.done.wait()
        return [holder["response"] for _, holder in waits]

    def finalize(self):
        self.scheduler.stop()

    def _answer(self, sender, holder, chunk, state, stream, handle):
        outputs = stream.outputs(chunk.tokens, state, final=chunk.final)
        if outputs is None:
            return
        if stream.done:
            self.running.remove(handle)
            if stream.stopped_by_string:
                handle.stopped.set()  # the engine drops the row at its next token
        tensors = [pb_utils.Tensor(name, array) for name, array in outputs.items()]
        response = pb_utils.InferenceResponse(output_tensors=tensors)
        if sender is None:
            holder["response"] = response
        else:
            sender.send(response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL if stream.done else 0)

    def _liveness(self, sender, holder):
        """A liveness ping (inference_image/liveness.py): answered by this process, with the requests it holds."""
        tensors = {
            "liveness_in_flight": np.array([self.running.count()], dtype=np.int32),
            "liveness_stalled_s": np.array([0.0], dtype=np.float32),
        }
        response = pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor(k, v) for k, v in tensors.items()])
        if sender is None:
            holder["response"] = response
        else:
            sender.send(response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

    def _stop(self, request_id, sender, holder):
        if not request_id:
            self._answer_error(sender, holder, NO_ID)
            return
        self.running.stop(request_id)
        response = pb_utils.InferenceResponse(output_tensors=[])
        if sender is None:
            holder["response"] = response
        else:
            sender.send(response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

    def _answer_error(self, sender, holder, message, handle=None):
        if handle is not None:
            self.running.remove(handle)
        response = pb_utils.InferenceResponse(output_tensors=[], error=pb_utils.TritonError(message))
        if sender is None:
            holder["response"] = response
        else:
            sender.send(response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)


def stop_token_ids(tokenizer, stop_words: list[str]) -> tuple[int, ...]:
    """The model's stop strings that are single tokens (its special end tokens), as ids."""
    ids = []
    for word in stop_words:
        encoded = tokenizer.encode(word, add_special_tokens=False)
        if len(encoded) != 1:
            raise ModelConfigError(f"{contract.PARAMETER_STOP_WORDS}: {word!r} is not one token of this tokenizer")
        ids.append(int(encoded[0]))
    return tuple(ids)


def _cancelled(sender, handle):
    if sender is None:
        return handle.stopped.is_set
    return lambda: handle.stopped.is_set() or sender.is_cancelled()


def _architecture(compiled: Path) -> str:
    path = compiled / NEURON_CONFIG
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise ModelConfigError(f"cannot read {path}: {err}") from None
    names = config.get("architectures") or []
    if not names:
        raise ModelConfigError(f"{path} names no architectures")
    return str(names[0])


def _tensors(request):
    found = {}
    for name in INPUT_NAMES:
        tensor = pb_utils.get_input_tensor_by_name(request, name)
        found[name] = None if tensor is None else tensor.as_numpy()
    return found


def _flag(tensors, name) -> bool:
    value = tensors.get(name)
    return value is not None and value.size == 1 and bool(value.reshape(-1)[0])
