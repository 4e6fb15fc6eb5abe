"""The engine seam: what our model.py passes to the LLM API per request exists in TensorRT-LLM's
SamplingParams/GuidedDecodingParams, and the CPU stand-in accepts nothing the real classes would refuse."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from inference_platform.inference_image.llmapi import llm_args_schema
from inference_platform.inference_image.testing.cpu_llm_api import GuidedDecodingParams, SamplingParams

MODEL = Path(llm_args_schema.__file__).with_name("model.py")


def _model_keywords() -> set[str]:
    """The SamplingParams keywords model.py writes: its tensor map's values and the literal kwargs keys."""
    tree = ast.parse(MODEL.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "_SAMPLING" for t in node.targets):
            found |= set(ast.literal_eval(node.value).values())
        if isinstance(node, ast.AnnAssign | ast.Assign) and getattr(node, "value", None) is not None:
            target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0]
            if getattr(target, "id", None) == "kwargs" and isinstance(node.value, ast.Dict):
                found |= {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
        subscript = isinstance(node, ast.Subscript) and getattr(node.value, "id", None) == "kwargs"
        if subscript and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
            found.add(node.slice.value)
    return found


def test_model_py_passes_only_sampling_params_the_llm_api_has():
    used = _model_keywords()
    assert {"max_tokens", "stop", "guided_decoding", "add_special_tokens", "return_perf_metrics"} <= used
    assert used <= llm_args_schema.SAMPLING_PARAMS_NAMES, used - llm_args_schema.SAMPLING_PARAMS_NAMES


def test_the_stand_in_accepts_no_keyword_the_real_classes_lack():
    stand_in = {f.name for f in dataclasses.fields(SamplingParams)}
    assert stand_in <= llm_args_schema.SAMPLING_PARAMS_NAMES, stand_in - llm_args_schema.SAMPLING_PARAMS_NAMES
    guided = {f.name for f in dataclasses.fields(GuidedDecodingParams)}
    assert guided == llm_args_schema.GUIDED_DECODING_NAMES
