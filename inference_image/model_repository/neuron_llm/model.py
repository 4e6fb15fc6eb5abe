"""Triton ``neuron_llm`` model: the LLM step on AWS Neuron with the tensor contract of ``tensorrt_llm``.

Reads requests exactly like the CPU stand-in (``runtime.llm_request``), applies TensorRT-LLM's
stopping rules (``runtime.generation``) and answers with the same output tensors, so the ensemble,
BLS and clients cannot tell the backends apart. Generation runs in ``runtime.neuron_engine``. A
``stop`` request stops the running requests with its request id, as TensorRT-LLM's backend does
(``runtime.stop_requests``): that is how BLS and the ensemble's ``stream_gate`` end an abandoned stream.
"""

from __future__ import annotations

import json
from pathlib import Path

import triton_python_backend_utils as pb_utils
from inference_platform.inference_image.runtime.generation import SequenceState
from inference_platform.inference_image.runtime.llm_outputs import output_arrays
from inference_platform.inference_image.runtime.llm_request import LLM_INPUTS, RequestError, parse_request
from inference_platform.inference_image.runtime.neuron_engine import BatchScheduler, Job, NeuronEngine, neuron_refusal
from inference_platform.inference_image.runtime.params import ModelConfigError, Parameters
from inference_platform.inference_image.runtime.request_gauges import NEURON_FAMILY, RequestGauges
from inference_platform.inference_image.runtime.stop_requests import NO_ID, RunningById, is_stop_request

NEURON_CONFIG = "neuron_config.json"


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        params = Parameters(config)
        compiled = Path(params.text("compiled_model_dir"))
        self.exclude_default = params.flag("exclude_input_in_output", default=False)
        self.max_seq_len = params.integer("max_seq_len", minimum=2)
        self.decoupled = pb_utils.using_decoupled_model_transaction_policy(config)
        batch_size = params.integer("batch_size", minimum=1)
        engine = NeuronEngine(compiled, architecture=_architecture(compiled), batch_size=batch_size)
        # neuron_llm_request_metrics: the requests in flight KEDA scales the replicas on.
        self.gauges = RequestGauges(
            pb_utils,
            family=NEURON_FAMILY,
            model=args["model_name"],
            version=args["model_version"],
            max_active=batch_size,
        )
        self.scheduler = BatchScheduler(engine.run, batch_size, on_load=self.gauges.update)
        self.running = RunningById()

    def execute(self, requests):
        jobs = []
        for request in requests:
            sender = request.get_response_sender() if self.decoupled else None
            holder = {"response": None}
            tensors = _tensors(request)
            if is_stop_request(tensors):
                self._stop(request.request_id(), sender, holder)
                jobs.append((None, holder))
                continue
            try:
                llm_request = parse_request(tensors, max_seq_len=self.max_seq_len)
                reason = neuron_refusal(llm_request)
                if reason:
                    raise RequestError(reason)
                if llm_request.streaming and not self.decoupled:
                    raise RequestError("streaming needs the decoupled transaction policy (serving.streaming: true)")
            except RequestError as err:
                self._answer_error(sender, holder, str(err))
                jobs.append((None, holder))
                continue
            state = SequenceState(llm_request, exclude_input_default=self.exclude_default, max_seq_len=self.max_seq_len)
            handle = self.running.add(request.request_id())
            job = Job(
                state=state,
                emit=lambda chunk, s=sender, st=state, h=holder, r=handle: self._answer(s, h, chunk, st, r),
                fail=lambda message, s=sender, h=holder, r=handle: self._answer_error(s, h, message, r),
                cancelled=_cancelled(sender, handle),
            )
            self.scheduler.submit(job)
            jobs.append((job, holder))
        if self.decoupled:
            return None
        for job, _ in jobs:
            if job is not None:
                job.done.wait()
        return [holder["response"] for _, holder in jobs]

    def finalize(self):
        self.scheduler.stop()

    def _stop(self, request_id, sender, holder):
        """A stop request: stop ``request_id``'s running requests; answer with one empty response."""
        if not request_id:
            self._answer_error(sender, holder, NO_ID)
            return
        self.running.stop(request_id)
        response = pb_utils.InferenceResponse(output_tensors=[])
        if sender is None:
            holder["response"] = response
        else:
            sender.send(response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

    def _answer(self, sender, holder, chunk, state, handle=None):
        if chunk.final and handle is not None:
            self.running.remove(handle)
        final = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL if chunk.final else 0
        if sender is not None and chunk.final and not chunk.tokens and state.request.streaming:
            sender.send(flags=final)
            return
        tensors = [pb_utils.Tensor(name, array) for name, array in output_arrays(chunk, state).items()]
        response = pb_utils.InferenceResponse(output_tensors=tensors)
        if sender is None:
            holder["response"] = response
        else:
            sender.send(response, flags=final)

    def _answer_error(self, sender, holder, message, handle=None):
        if handle is not None:
            self.running.remove(handle)
        response = pb_utils.InferenceResponse(output_tensors=[], error=pb_utils.TritonError(message))
        if sender is None:
            holder["response"] = response
        else:
            sender.send(response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)


def _cancelled(sender, handle):
    """True once the client cancelled (decoupled) or a stop request named this request's id."""
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
    for name in LLM_INPUTS:
        tensor = pb_utils.get_input_tensor_by_name(request, name)
        found[name] = None if tensor is None else tensor.as_numpy()
    return found
