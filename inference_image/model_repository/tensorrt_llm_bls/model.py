"""Triton ``tensorrt_llm_bls`` model: preprocessing -> LLM step -> text, as one Python model.

Offers the ensemble's client contract (text_input, max_tokens, ... -> text_output) through business
logic scripting: it calls ``preprocessing`` and the LLM step (``tensorrt_llm_model_name``) with
Triton's in-process API and decodes the tokens itself, incrementally, so streamed text never splits
a character. A client that goes away (a closed HTTP stream, a gRPC cancel) stops the LLM step's
request within ``runtime.llm_stream.CANCEL_POLL_S`` (``LlmStream``'s ``CancelWatch``).

Decoupled, each request runs on a thread pool of ``max_batch_size`` threads once its inputs are copied,
so one instance serves that many streams at once (the Python backend lets a thread keep a request's
response sender after ``execute`` returns: README "Decoupled mode", r24.10 and r25.05); before, one
instance served one stream at a time and the rest of a batch waited seconds for a first token.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import triton_python_backend_utils as pb_utils
from inference_platform.inference_image.runtime.llm_stream import LlmStream
from inference_platform.inference_image.runtime.params import ModelConfigError, Parameters
from inference_platform.inference_image.runtime.tokenizer import load_tokenizer

# client input -> preprocessing input
PREPROCESS_INPUTS = {
    "text_input": "QUERY",
    "max_tokens": "REQUEST_OUTPUT_LEN",
    "bad_words": "BAD_WORDS_DICT",
    "stop_words": "STOP_WORDS_DICT",
    "embedding_bias_words": "EMBEDDING_BIAS_WORDS",
    "embedding_bias_weights": "EMBEDDING_BIAS_WEIGHTS",
    "end_id": "END_ID",
    "pad_id": "PAD_ID",
}
# preprocessing output -> LLM step input
PREPROCESS_OUTPUTS = {
    "INPUT_ID": "input_ids",
    "REQUEST_INPUT_LEN": "input_lengths",
    "REQUEST_OUTPUT_LEN": "request_output_len",
    "STOP_WORDS_IDS": "stop_words_list",
    "BAD_WORDS_IDS": "bad_words_list",
    "EMBEDDING_BIAS": "embedding_bias",
    "OUT_END_ID": "end_id",
    "OUT_PAD_ID": "pad_id",
}
# client input -> LLM step input, passed through unchanged
LLM_PASSTHROUGH = {
    "exclude_input_in_output": "exclude_input_in_output",
    "top_k": "runtime_top_k",
    "top_p": "runtime_top_p",
    "temperature": "temperature",
    "length_penalty": "len_penalty",
    "repetition_penalty": "repetition_penalty",
    "min_tokens": "min_tokens",
    "presence_penalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty",
    "seed": "seed",
    "return_log_probs": "return_log_probs",
    "return_context_logits": "return_context_logits",
    "return_generation_logits": "return_generation_logits",
    "return_perf_metrics": "return_perf_metrics",
    "beam_width": "beam_width",
    "stream": "streaming",
    "guided_decoding_guide_type": "guided_decoding_guide_type",
    "guided_decoding_guide": "guided_decoding_guide",
}


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        params = Parameters(config)
        self.llm = params.text("tensorrt_llm_model_name")
        self.tokenizer = load_tokenizer(params.text("tokenizer_dir"))
        self.skip_special_tokens = params.flag("skip_special_tokens", default=True)
        if not params.flag("accumulate_tokens", default=True):
            raise ModelConfigError(
                f"model {params.model}: accumulate_tokens false is not supported: this BLS "
                "always detokenizes the accumulated stream (so characters never split)"
            )
        params.unsupported(
            "tensorrt_llm_draft_model_name", "multimodal_encoders_name", why="no draft model or multimodal encoders"
        )
        self.decoupled = pb_utils.using_decoupled_model_transaction_policy(config)
        self.stream = LlmStream(
            pb_utils,
            llm=self.llm,
            tokenizer=self.tokenizer,
            skip_special_tokens=self.skip_special_tokens,
            decoupled=self.decoupled,
            text_name="text_output",
        )
        self.client_inputs = tuple(i["name"] for i in config.get("input", []))
        self.pool = ThreadPoolExecutor(max_workers=max(1, int(config.get("max_batch_size", 1))))

    def execute(self, requests):
        responses = []
        for request in requests:
            # Copy the inputs now: a decoupled stream runs after execute returns.
            inputs = {name: _input(request, name) for name in self.client_inputs}
            prepared = lambda inputs=inputs: self._llm_inputs(inputs)  # noqa: E731
            if self.decoupled:
                self.pool.submit(self.stream.serve, request, request.get_response_sender(), prepared)
            else:
                responses += self.stream.serve(request, None, prepared)
        return None if self.decoupled else responses

    def finalize(self):
        self.pool.shutdown(wait=True, cancel_futures=True)

    def _llm_inputs(self, request):
        text_input = _input(request, "text_input")
        if text_input is None or text_input.shape[0] != 1:
            raise ValueError("text_input: send one prompt per request")
        streaming = bool(_scalar(request, "stream", False))
        if streaming and not self.decoupled:
            raise ValueError("stream=true needs the decoupled transaction policy (serving.streaming: true)")
        llm_inputs = self._preprocess(request)
        for client_name, llm_name in LLM_PASSTHROUGH.items():
            value = _input(request, client_name)
            if value is not None:
                llm_inputs.append(pb_utils.Tensor(llm_name, value))
        return llm_inputs, streaming

    def _preprocess(self, request):
        inputs = []
        for client_name, name in PREPROCESS_INPUTS.items():
            value = _input(request, client_name)
            if value is not None:
                inputs.append(pb_utils.Tensor(name, value))
        response = pb_utils.InferenceRequest(
            model_name="preprocessing", requested_output_names=list(PREPROCESS_OUTPUTS), inputs=inputs
        ).exec()
        if response.has_error():
            raise ValueError(response.error().message())
        return [
            pb_utils.Tensor(llm_name, pb_utils.get_output_tensor_by_name(response, name).as_numpy())
            for name, llm_name in PREPROCESS_OUTPUTS.items()
        ]


def _input(request, name):
    """``name``'s array: from a Triton request (copied), or from inputs already copied (a dict)."""
    if isinstance(request, dict):
        return request.get(name)
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    return None if tensor is None else tensor.as_numpy().copy()


def _scalar(request, name, default):
    value = _input(request, name)
    return default if value is None or value.size == 0 else value.reshape(-1)[0]
