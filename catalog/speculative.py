"""Speculative decoding methods of the pinned TensorRT-LLM LLM API (1.2.1, in the 26.07 image).

Each method is one ``speculative_config.decoding_type`` of ``tensorrt_llm/llmapi/llm_args.py``
(``SpeculativeConfig``, discriminated on ``decoding_type``): EAGLE-3 and draft/target need a second
checkpoint (the EAGLE-3 head or the draft model, ``speculative_model``), MTP uses the target's own
multi-token-prediction layers (DeepSeek-style checkpoints; the number of modules is its candidate
length: ``MTPDecodingConfig`` sets ``max_draft_len = num_nextn_predict_layers``), n-gram drafts from the
prompt and the text so far. Every method drafts one linear chain of ``maxDraftLen`` tokens per step,
verified by the target; a lower candidate length is the seed's cure for garbled output.
"""

from __future__ import annotations

from types import MappingProxyType

METHODS = ("none", "eagle3", "mtp", "ngram", "draft_model")
# Our method name -> the LLM API's decoding_type literal (DraftTargetDecodingConfig: "Draft_Target").
DECODING_TYPE = MappingProxyType({"eagle3": "Eagle3", "mtp": "MTP", "ngram": "NGram", "draft_model": "Draft_Target"})
# validate_speculative_model (Eagle) and validate_draft_target_config: "speculative_model must be specified".
NEEDS_DRAFT_MODEL = frozenset({"eagle3", "draft_model"})
SOURCE = (
    "NVIDIA/TensorRT-LLM tensorrt_llm/llmapi/llm_args.py (1.2 line): Eagle3DecodingConfig, MTPDecodingConfig, "
    "NGramDecodingConfig, DraftTargetDecodingConfig"
)
