"""The Neuron engine's side of the LLM-API text contract, with a real Hugging Face tokenizer (the stand-in
checkpoint's byte-level one with Llama 3's special tokens) and the real stopping rules (runtime.generation)."""

from __future__ import annotations

import numpy as np
import pytest

from inference_platform.inference_image.llmapi import contract
from inference_platform.inference_image.runtime.generation import SequenceState
from inference_platform.inference_image.runtime.text_contract import (
    TextRequestError,
    TextStream,
    parse_text_request,
)
from inference_platform.inference_image.runtime.tokenizer import load_tokenizer
from inference_platform.inference_image.testing.cpu_llm_api.checkpoint import write_checkpoint


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return load_tokenizer(write_checkpoint(tmp_path_factory.mktemp("checkpoint")))


def _tensors(**values):
    out = {}
    for name, value in values.items():
        if isinstance(value, str):
            out[name] = np.array([value.encode()], dtype=np.object_)
        elif isinstance(value, list):
            out[name] = np.array([v.encode() for v in value], dtype=np.object_)
        else:
            out[name] = np.array([value])
    return out


def _parse(tokenizer, **inputs):
    return parse_text_request(_tensors(text_input="Hi", **inputs), tokenizer, stop_token_ids=(), max_seq_len=4096)


def _run(tokenizer, answer: str, *, eot: bool = True, **inputs):
    """Feed the engine's tokens for ``answer`` (then <|eot_id|>) through SequenceState and TextStream."""
    eot_id = tokenizer.encode("<|eot_id|>", add_special_tokens=False)[0]
    request = parse_text_request(_tensors(text_input="Hi", **inputs), tokenizer, stop_token_ids=(eot_id,),
                                 max_seq_len=4096)  # fmt: skip
    state = SequenceState(request.llm, exclude_input_default=True, max_seq_len=4096)
    stream = TextStream(request, tokenizer)
    responses = []
    for token in [*tokenizer.encode(answer, add_special_tokens=False), *([eot_id] if eot else [])]:
        chunk = state.push(token)
        if chunk is not None:
            out = stream.outputs(chunk.tokens, state, final=chunk.final)
            if out is not None:
                responses.append({k: v[0].decode() if v.dtype == object else int(v[0]) for k, v in out.items()})
        if stream.done:
            break
    return request, responses


def test_the_outputs_are_the_contracts():
    # Every response carries these; logprobs, queue_time_s and the liveness_* answers are per request kind.
    assert {"text_output", "finish_reason", "num_input_tokens", "num_output_tokens", "num_cached_tokens"} < {
        t.name for t in contract.OUTPUTS
    }


def test_what_the_neuron_engine_lacks_is_refused_naming_the_input(tokenizer):
    for name, value in (("sampling_param_n", 2), ("sampling_param_logprobs", 1), ("sampling_param_ignore_eos", True)):
        with pytest.raises(TextRequestError, match=name):
            _parse(tokenizer, **{name: value})
    assert _parse(tokenizer, sampling_param_n=1, sampling_param_logprobs=0).llm.sampling.temperature == 1.0


def test_a_streamed_answer_arrives_as_deltas_with_unicode_intact_and_counts(tokenizer):
    answer = "héllo 你好 🌍"
    request, responses = _run(tokenizer, answer, streaming=True, sampling_param_max_tokens=64)
    assert "".join(r["text_output"] for r in responses) == answer
    assert all(r["finish_reason"] == "" for r in responses[:-1]) and responses[-1]["finish_reason"] == "stop"
    assert responses[-1]["num_output_tokens"] == len(tokenizer.encode(answer, add_special_tokens=False))
    assert {r["num_input_tokens"] for r in responses} == {len(request.llm.input_ids)}
    assert {r["num_cached_tokens"] for r in responses} == {0}


def test_a_whole_answer_comes_once_and_length_is_reported(tokenizer):
    _, responses = _run(tokenizer, "abcdefgh", eot=False, sampling_param_max_tokens=3)
    (only,) = responses
    assert only["text_output"] == "abc" and only["finish_reason"] == "length" and only["num_output_tokens"] == 3


def test_a_stop_string_ends_the_answer_before_it_and_is_never_streamed(tokenizer):
    _, responses = _run(tokenizer, "one two END three", streaming=True, sampling_param_stop=["END"],
                        sampling_param_max_tokens=64)  # fmt: skip
    text = "".join(r["text_output"] for r in responses)
    assert text == "one two " and responses[-1]["finish_reason"] == "stop"
    assert not any("E" in r["text_output"] for r in responses)  # the held-back prefix never leaked


def test_add_special_tokens_controls_the_bos(tokenizer):
    with_bos = parse_text_request(_tensors(text_input="x"), tokenizer, stop_token_ids=(), max_seq_len=64)
    without = parse_text_request(_tensors(text_input="x", sampling_param_add_special_tokens=False), tokenizer,
                                 stop_token_ids=(), max_seq_len=64)  # fmt: skip
    assert len(with_bos.llm.input_ids) == len(without.llm.input_ids) + 1


@pytest.mark.parametrize(
    ("inputs", "named"),
    [
        ({"guided_decoding_guide_type": "json_object"}, "guided_decoding_guide_type"),
        ({"sampling_param_max_tokens": 0}, "sampling_param_max_tokens"),
        ({"text_input": "word " * 100}, "text_input"),
        ({"text_input": ""}, "text_input"),
    ],
)
def test_refusals_name_the_input(tokenizer, inputs, named):
    with pytest.raises(TextRequestError, match=f"^{named}"):
        parse_text_request(_tensors(**{"text_input": "Hi", **inputs}), tokenizer, stop_token_ids=(), max_seq_len=64)
