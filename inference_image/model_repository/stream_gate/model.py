"""Triton ``stream_gate`` model: passes the ensemble's responses on; stops the LLM step of a client that left.

Each response postprocessing streams reaches this model as a request of its own, scheduled by the
ensemble after the response; once the client has cancelled (or closed its HTTP stream) Triton marks
those requests cancelled (``request.is_cancelled()``). The first such request of a stream sends the LLM
step a ``stop`` request for the stream's ``LLM_REQUEST_ID`` (``runtime.llm_stream.stop_llm_request``),
off the execute thread; postprocessing then sees its LLM stream end and closes the client's stream.
Every request is answered with its inputs passed through as the ``GATED_`` outputs.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor

import triton_python_backend_utils as pb_utils
from inference_platform.inference_image.runtime.llm_stream import stop_llm_request
from inference_platform.inference_image.runtime.params import Parameters

REQUEST_ID = "LLM_REQUEST_ID"
GATED = "GATED_"
_REMEMBERED = 4096


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        params = Parameters(config)
        self.llm = params.text("tensorrt_llm_model_name")
        self.llm_decoupled = params.flag("llm_decoupled", default=True)
        self.passed = [i["name"] for i in config["input"] if i["name"] != REQUEST_ID]
        self.stopped = OrderedDict()  # LLM request ids already stopped (the most recent ones)
        self.pool = ThreadPoolExecutor(max_workers=2)

    def execute(self, requests):
        responses = []
        for request in requests:
            if request.is_cancelled():
                self._stop(_text(request, REQUEST_ID))
            tensors = []
            for name in self.passed:
                tensor = pb_utils.get_input_tensor_by_name(request, name)
                if tensor is not None:
                    tensors.append(pb_utils.Tensor(GATED + name, tensor.as_numpy()))
            responses.append(pb_utils.InferenceResponse(output_tensors=tensors))
        return responses

    def finalize(self):
        self.pool.shutdown(wait=True, cancel_futures=True)

    def _stop(self, request_id):
        if not request_id or request_id in self.stopped:
            return
        self.stopped[request_id] = True
        while len(self.stopped) > _REMEMBERED:
            self.stopped.popitem(last=False)
        self.pool.submit(stop_llm_request, pb_utils, self.llm, request_id, decoupled=self.llm_decoupled)


def _text(request, name):
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    if tensor is None:
        return None
    value = tensor.as_numpy().reshape(-1)
    if value.size == 0:
        return None
    item = value[0]
    return item.decode("utf-8") if isinstance(item, bytes) else str(item)
