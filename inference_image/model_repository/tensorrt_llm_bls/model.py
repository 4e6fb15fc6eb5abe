"""Triton ``tensorrt_llm_bls`` model: preprocessing -> LLM step -> text, as one Python model.

Offers the ensemble's client contract (text_input, max_tokens, ... -> text_output) through business
logic scripting: it calls ``preprocessing`` and the LLM step (``tensorrt_llm_model_name``) with
Triton's in-process API and decodes the tokens itself, incrementally, so streamed text never splits
a character. A cancelled client request cancels the LLM step's request.
"""

from __future__ import annotations

import json

import numpy as np
import triton_python_backend_utils as pb_utils

from inference_image.runtime.detokenize import IncrementalText
from inference_image.runtime.params import ModelConfigError, Parameters
from inference_image.runtime.tokenizer import load_tokenizer

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
# LLM step outputs the client contract returns as they are
LLM_OUTPUTS = (
    "cum_log_probs",
    "output_log_probs",
    "context_logits",
    "generation_logits",
    "batch_index",
    "sequence_index",
    "kv_cache_alloc_new_blocks",
    "kv_cache_reused_blocks",
    "kv_cache_alloc_total_blocks",
    "arrival_time_ns",
    "first_scheduled_time_ns",
    "first_token_time_ns",
    "last_token_time_ns",
    "acceptance_rate",
    "total_accepted_draft_tokens",
    "total_draft_tokens",
)


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

    def execute(self, requests):
        responses = []
        for request in requests:
            sender = request.get_response_sender() if self.decoupled else None
            try:
                for response in self._generate(request, sender):
                    if sender is not None:
                        sender.send(response)
                    else:
                        responses.append(response)
            except Exception as err:  # every failure becomes the client's error response
                error = pb_utils.InferenceResponse(output_tensors=[], error=pb_utils.TritonError(str(err)))
                if sender is None:
                    responses.append(error)
                else:
                    sender.send(error)
            if sender is not None:
                sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None if self.decoupled else responses

    def _generate(self, request, sender):
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
        llm_request = pb_utils.InferenceRequest(
            model_name=self.llm,
            requested_output_names=["output_ids", "sequence_length", *LLM_OUTPUTS],
            inputs=llm_inputs,
        )
        text = IncrementalText(self.tokenizer, skip_special_tokens=self.skip_special_tokens)
        llm_responses = llm_request.exec(decoupled=True) if self.decoupled else [llm_request.exec()]
        for llm_response in llm_responses:
            if sender is not None and sender.is_cancelled():
                cancel = getattr(llm_responses, "cancel", None)
                if cancel is not None:
                    cancel()
                return
            if llm_response.has_error():
                raise RuntimeError(llm_response.error().message())
            outputs = {t.name(): t.as_numpy() for t in llm_response.output_tensors()}
            if "output_ids" not in outputs:
                continue  # the flag-only end of a stream
            length = int(outputs["sequence_length"].reshape(-1)[0])
            ids = outputs["output_ids"].reshape(-1)[:length].tolist()
            if streaming:
                yield _response(text.add(ids), outputs)
            else:
                yield _response(self.tokenizer.decode(ids, skip_special_tokens=self.skip_special_tokens), outputs)
        if streaming:
            rest = text.flush()
            if rest:
                yield _response(rest, {})

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


def _response(text, outputs):
    tensors = [pb_utils.Tensor("text_output", np.array([[text.encode("utf-8")]], dtype=object))]
    tensors += [pb_utils.Tensor(name, outputs[name]) for name in LLM_OUTPUTS if name in outputs]
    return pb_utils.InferenceResponse(output_tensors=tensors)


def _input(request, name):
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    return None if tensor is None else tensor.as_numpy()


def _scalar(request, name, default):
    value = _input(request, name)
    return default if value is None or value.size == 0 else value.reshape(-1)[0]
