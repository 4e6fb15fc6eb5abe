"""Triton ``postprocessing`` model: the LLM step's token ids back to text (NVIDIA's tensor names).

In the ensemble each streamed response is decoded on its own; a character whose UTF-8 bytes span two
tokens then arrives as replacement characters. Clients that stream non-ASCII text use
``tensorrt_llm_bls``, which decodes incrementally.
"""

from __future__ import annotations

import numpy as np
import triton_python_backend_utils as pb_utils

from inference_image.runtime.params import Parameters
from inference_image.runtime.tokenizer import load_tokenizer


class TritonPythonModel:
    def initialize(self, args):
        params = Parameters(args["model_config"])
        self.tokenizer = load_tokenizer(params.text("tokenizer_dir"))
        self.skip_special_tokens = params.flag("skip_special_tokens", default=True)

    def execute(self, requests):
        responses = []
        for request in requests:
            tokens = pb_utils.get_input_tensor_by_name(request, "TOKENS_BATCH").as_numpy()
            lengths = pb_utils.get_input_tensor_by_name(request, "SEQUENCE_LENGTH").as_numpy()
            texts = np.empty(lengths.shape, dtype=object)
            for index in np.ndindex(*lengths.shape):
                ids = tokens[index][: int(lengths[index])].tolist()
                texts[index] = self.tokenizer.decode(ids, skip_special_tokens=self.skip_special_tokens).encode("utf-8")
            responses.append(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("OUTPUT", texts)]))
        return responses
