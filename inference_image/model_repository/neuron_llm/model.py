"""Triton ``neuron_llm`` model: the LLM step on AWS Neuron with the tensor contract of ``tensorrt_llm``.

Reads requests exactly like the CPU stand-in (``runtime.llm_request``), applies TensorRT-LLM's
stopping rules (``runtime.generation``) and answers with the same output tensors, so the ensemble,
BLS and clients cannot tell the backends apart. Generation runs in ``runtime.neuron_engine``.
"""

from __future__ import annotations

import json
from pathlib import Path

import triton_python_backend_utils as pb_utils

from inference_image.runtime.generation import SequenceState
from inference_image.runtime.llm_outputs import output_arrays
from inference_image.runtime.llm_request import LLM_INPUTS, RequestError, parse_request
from inference_image.runtime.neuron_engine import BatchScheduler, Job, NeuronEngine, neuron_refusal
from inference_image.runtime.params import ModelConfigError, Parameters
from inference_image.runtime.request_gauges import NEURON_FAMILY, RequestGauges

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

    def execute(self, requests):
        jobs = []
        for request in requests:
            sender = request.get_response_sender() if self.decoupled else None
            holder = {"response": None}
            try:
                llm_request = parse_request(_tensors(request), max_seq_len=self.max_seq_len)
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
            job = Job(
                state=state,
                emit=lambda chunk, s=sender, st=state, h=holder: self._answer(s, h, chunk, st),
                fail=lambda message, s=sender, h=holder: self._answer_error(s, h, message),
                cancelled=sender.is_cancelled if sender is not None else (lambda: False),
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

    def _answer(self, sender, holder, chunk, state):
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

    def _answer_error(self, sender, holder, message):
        response = pb_utils.InferenceResponse(output_tensors=[], error=pb_utils.TritonError(message))
        if sender is None:
            holder["response"] = response
        else:
            sender.send(response, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)


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
