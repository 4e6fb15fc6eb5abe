"""Triton ``preprocessing`` model: prompt text, word lists and bias words to the LLM step's tensors.

Inputs and outputs follow NVIDIA's TensorRT-LLM preprocessing model, so the ensemble wiring of
existing deployments applies unchanged. Prompts longer than maxInputLen, or that leave no room for
max_tokens below maxSeqLen, are refused here with a message naming the limit.
"""

from __future__ import annotations

import numpy as np
import triton_python_backend_utils as pb_utils
from inference_platform.inference_image.runtime.params import Parameters
from inference_platform.inference_image.runtime.tokenizer import load_tokenizer
from inference_platform.inference_image.runtime.words import to_word_list_format


class TritonPythonModel:
    def initialize(self, args):
        params = Parameters(args["model_config"])
        self.tokenizer = load_tokenizer(params.text("tokenizer_dir"))
        self.add_special_tokens = params.flag("add_special_tokens", default=True)
        self.max_input_len = params.integer("max_input_len", minimum=1)
        self.max_seq_len = params.integer("max_seq_len", minimum=2)
        # NVIDIA's multimodal keys (their gpt_model_path serves the multimodal path only).
        params.unsupported("multimodal_model_path", "max_num_images", "gpt_model_path", why="text-only preprocessing")

    def execute(self, requests):
        responses = []
        for request in requests:
            try:
                responses.append(pb_utils.InferenceResponse(output_tensors=self._process(request)))
            except ValueError as err:
                responses.append(pb_utils.InferenceResponse(output_tensors=[], error=pb_utils.TritonError(str(err))))
        return responses

    def _process(self, request):
        queries = _array(request, "QUERY")
        batch = queries.shape[0]
        output_len = _array(request, "REQUEST_OUTPUT_LEN").reshape(batch, -1)[:, :1].astype(np.int32)
        ids = [self.tokenizer.encode(_text(q), add_special_tokens=self.add_special_tokens) for q in queries[:, 0]]
        for row, (tokens, wanted) in enumerate(zip(ids, output_len[:, 0], strict=True)):
            if not tokens:
                raise ValueError(f"text_input[{row}] is empty")
            if len(tokens) > self.max_input_len:
                raise ValueError(f"text_input[{row}] is {len(tokens)} tokens; maxInputLen is {self.max_input_len}")
            if wanted < 1 or len(tokens) + int(wanted) > self.max_seq_len:
                raise ValueError(
                    f"max_tokens[{row}] = {int(wanted)} with a {len(tokens)}-token prompt does not fit "
                    f"maxSeqLen {self.max_seq_len} (must be 1..{self.max_seq_len - len(tokens)})"
                )
        end_id = _optional(request, "END_ID")
        pad_id = _optional(request, "PAD_ID")
        end = end_id.reshape(batch, 1) if end_id is not None else np.full((batch, 1), self.tokenizer.end_id)
        pad = pad_id.reshape(batch, 1) if pad_id is not None else np.full((batch, 1), self.tokenizer.pad_id)
        width = max(len(t) for t in ids)
        input_ids = np.stack(
            [np.pad(np.asarray(t), (0, width - len(t)), constant_values=int(pad[i, 0])) for i, t in enumerate(ids)]
        )
        return [
            pb_utils.Tensor("INPUT_ID", input_ids.astype(np.int32)),
            pb_utils.Tensor("REQUEST_INPUT_LEN", np.array([[len(t)] for t in ids], dtype=np.int32)),
            pb_utils.Tensor("BAD_WORDS_IDS", self._word_lists(request, "BAD_WORDS_DICT", batch)),
            pb_utils.Tensor("STOP_WORDS_IDS", self._word_lists(request, "STOP_WORDS_DICT", batch)),
            pb_utils.Tensor("EMBEDDING_BIAS", self._embedding_bias(request, batch)),
            pb_utils.Tensor("REQUEST_OUTPUT_LEN", output_len),
            pb_utils.Tensor("OUT_END_ID", end.astype(np.int32)),
            pb_utils.Tensor("OUT_PAD_ID", pad.astype(np.int32)),
        ]

    def _word_lists(self, request, name, batch):
        words = _optional(request, name)
        if words is None:
            return to_word_list_format([[] for _ in range(batch)])
        return to_word_list_format(
            [[self.tokenizer.encode(_text(w), add_special_tokens=False) for w in row if _text(w)] for row in words]
        )

    def _embedding_bias(self, request, batch):
        words = _optional(request, "EMBEDDING_BIAS_WORDS")
        weights = _optional(request, "EMBEDDING_BIAS_WEIGHTS")
        if words is None or weights is None:
            return np.empty((batch, 0), dtype=np.float32)
        bias = np.zeros((batch, self.tokenizer.vocab_size), dtype=np.float32)
        for row, (row_words, row_weights) in enumerate(zip(words, weights, strict=True)):
            if len(row_words) != len(row_weights):
                raise ValueError("embedding_bias_words and embedding_bias_weights must have the same length")
            for word, weight in zip(row_words, row_weights, strict=True):
                for token in self.tokenizer.encode(_text(word), add_special_tokens=False):
                    bias[row, token] += float(weight)
        return bias


def _array(request, name):
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    if tensor is None:
        raise ValueError(f"{name} is required")
    return tensor.as_numpy()


def _optional(request, name):
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    return None if tensor is None else tensor.as_numpy()


def _text(value) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)
