"""Triton ``postprocessing`` model: the ensemble's LLM call and its text, detokenized per stream.

In NVIDIA's ensemble each streamed response of the LLM step reaches postprocessing as a separate
request and is decoded alone, so a character whose UTF-8 bytes span two tokens arrives as
replacement characters. Triton gives those requests no stream identity and refuses to feed a step
from two decoupled models, so no per-response model can fix it. Here the ensemble hands this model
the LLM step's inputs; it calls the LLM step itself (business logic scripting) and decodes the whole
stream incrementally, exactly as ``tensorrt_llm_bls`` does (``runtime.llm_stream``). Streams run on a
thread pool, so one instance serves up to ``max_batch_size`` of them at once.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import triton_python_backend_utils as pb_utils
from inference_platform.inference_image.runtime.llm_stream import LlmStream
from inference_platform.inference_image.runtime.params import Parameters
from inference_platform.inference_image.runtime.tokenizer import load_tokenizer


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        params = Parameters(config)
        self.decoupled = pb_utils.using_decoupled_model_transaction_policy(config)
        self.stream = LlmStream(
            pb_utils,
            llm=params.text("tensorrt_llm_model_name"),
            tokenizer=load_tokenizer(params.text("tokenizer_dir")),
            skip_special_tokens=params.flag("skip_special_tokens", default=True),
            decoupled=self.decoupled,
            text_name="OUTPUT",
            # stream_gate, the ensemble's next step, stops this id's LLM request once the client has gone.
            id_name="LLM_REQUEST_ID",
        )
        self.pool = ThreadPoolExecutor(max_workers=max(1, int(config.get("max_batch_size", 1))))
        # Inputs the config reshapes (dims [1] -> scalar) arrive here without their last axis; the LLM
        # step, called directly, expects its declared dims again.
        self.declared = {
            i["name"]: [int(d) for d in i["dims"]] for i in config.get("input", []) if i.get("reshape") is not None
        }

    def execute(self, requests):
        if self.decoupled:
            for request in requests:
                # Copy the inputs now: the stream runs after execute returns.
                prepared = _prepared(request, self.declared)
                self.pool.submit(self.stream.serve, request, request.get_response_sender(), prepared)
            return None
        responses = []
        for request in requests:
            responses += self.stream.serve(request, None, _prepared(request, self.declared))
        return responses

    def finalize(self):
        self.pool.shutdown(wait=True, cancel_futures=True)


def _prepared(request, declared):
    """``_llm_inputs`` of ``request`` computed now (its failure re-raised later, inside ``serve``)."""
    try:
        inputs, streaming = _llm_inputs(request)
        copied = [pb_utils.Tensor(t.name(), _as_declared(t.as_numpy(), declared.get(t.name()))) for t in inputs]
    except Exception as err:  # reported to the client by LlmStream.serve
        failure = err

        def fail():
            raise failure

        return fail
    return lambda: (copied, streaming)


def _as_declared(array, dims):
    """A copy of ``array`` with the LLM step's declared dims (batch axis first) where it was reshaped."""
    if dims is None:
        return array.copy()
    return array.reshape(array.shape[0], *[(-1 if d < 0 else d) for d in dims]).copy()


def _llm_inputs(request):
    """The LLM step's inputs exactly as the ensemble mapped them, and whether the client streams."""
    inputs = list(request.inputs())
    streaming = next((t.as_numpy().reshape(-1) for t in inputs if t.name() == "streaming"), None)
    return inputs, bool(streaming is not None and streaming.size and streaming[0])
