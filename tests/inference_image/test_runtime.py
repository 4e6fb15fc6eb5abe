"""The Triton models' pure logic: word lists, request parsing, stopping rules, outputs, tokenizers."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from inference_platform.inference_image.runtime.detokenize import IncrementalText
from inference_platform.inference_image.runtime.generation import FinishReason, SequenceState, completes_word
from inference_platform.inference_image.runtime.llm_request import LlmRequest, RequestError, parse_request
from inference_platform.inference_image.runtime.params import ModelConfigError, Parameters
from inference_platform.inference_image.runtime.tokenizer import TokenizerError, load_tokenizer
from inference_platform.inference_image.runtime.words import from_word_list, to_word_list_format
from inference_platform.inference_image.testing.assets import EOS

words = st.lists(st.lists(st.integers(0, 50_000), min_size=1, max_size=5), max_size=6)


@given(st.lists(words, min_size=1, max_size=4))
def test_word_lists_round_trip_in_tensorrt_llm_layout(batch):
    tensor = to_word_list_format(batch)
    assert tensor.dtype == np.int32 and tensor.shape[:2] == (len(batch), 2)
    for row, expected in zip(tensor, batch, strict=True):
        assert from_word_list(row) == expected
        assert from_word_list(row[None]) == expected


def test_word_list_layout_matches_nvidias_example():
    tensor = to_word_list_format([[[5, 6], [7]], []])
    assert tensor.tolist() == [[[5, 6, 7], [2, 3, -1]], [[0, 0, 0], [-1, -1, -1]]]
    with pytest.raises(ValueError, match="do not fit"):
        from_word_list(np.array([[1, 2], [3, -1]], dtype=np.int32))


def _tensors(**overrides):
    tensors = {
        "input_ids": np.array([[11, 12, 13, 0]], dtype=np.int32),
        "input_lengths": np.array([3], dtype=np.int32),
        "request_output_len": np.array([5], dtype=np.int32),
    }
    tensors.update(overrides)
    return tensors


def test_a_request_is_read_from_the_step_tensors():
    request = parse_request(
        _tensors(
            end_id=np.array([2], dtype=np.int32),
            streaming=np.array([True]),
            runtime_top_k=np.array([1], dtype=np.int32),
            stop_words_list=to_word_list_format([[[12, 13]]]),
            guided_decoding_guide_type=np.array([[b"regex"]], dtype=object),
            guided_decoding_guide=np.array([[rb"\d+"]], dtype=object),
        )
    )
    assert request.input_ids == (11, 12, 13) and request.max_new_tokens == 5
    assert request.end_id == 2 and request.pad_id is None and request.streaming
    assert request.stop_words == ((12, 13),) and request.sampling.greedy
    assert (request.guide_type, request.guide) == ("regex", r"\d+")
    assert request.exclude_input_in_output is None


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"input_ids": np.zeros((2, 3), dtype=np.int32)}, "one sequence per request"),
        ({"input_lengths": np.array([9], dtype=np.int32)}, "does not fit"),
        ({"request_output_len": np.array([0], dtype=np.int32)}, "must be >= 1"),
        ({"beam_width": np.array([0], dtype=np.int32)}, "beam_width"),
        ({"guided_decoding_guide_type": np.array([[b"xml"]], dtype=object)}, "not one of"),
        ({"guided_decoding_guide_type": np.array([[b"regex"]], dtype=object)}, "guided_decoding_guide: required"),
        ({"temperature": np.array([1.0, 0.5], dtype=np.float32)}, "one value per request"),
    ],
)
def test_malformed_requests_are_refused_naming_the_tensor(overrides, message):
    with pytest.raises(RequestError, match=message):
        parse_request(_tensors(**overrides))
    with pytest.raises(RequestError, match="input_ids: required"):
        parse_request({})


def _request(**fields) -> LlmRequest:
    base = {"input_ids": (1, 2, 3), "max_new_tokens": 10, "end_id": 0, "pad_id": 0, "streaming": False}
    base.update(fields)
    base.setdefault("exclude_input_in_output", None)
    return LlmRequest(**base)


def _feed(state: SequenceState, tokens):
    chunks = []
    for token in tokens:
        chunk = state.push(token)
        if chunk is not None:
            chunks.append(chunk)
        if state.done:
            break
    return chunks


def test_end_id_ends_generation_and_is_not_returned():
    state = SequenceState(_request(), exclude_input_default=False)
    chunks = _feed(state, [7, 8, 0, 9])
    assert state.finish_reason is FinishReason.END_ID
    assert [c.tokens for c in chunks] == [(1, 2, 3, 7, 8)]


def test_end_id_is_ignored_before_min_tokens():
    state = SequenceState(_request(min_tokens=3), exclude_input_default=True)
    chunks = _feed(state, [7, 0, 8, 9, 0])
    assert chunks[-1].tokens == (7, 8, 9) and state.finish_reason is FinishReason.END_ID


def test_stop_words_are_matched_in_the_output_and_included():
    state = SequenceState(_request(stop_words=((2, 3), (9,))), exclude_input_default=True)
    chunks = _feed(state, [5, 2, 3, 4])
    assert chunks[-1].tokens == (5, 2, 3) and state.finish_reason is FinishReason.STOP_WORD


def test_length_limits_from_the_request_and_max_seq_len():
    state = SequenceState(_request(max_new_tokens=2), exclude_input_default=True)
    assert _feed(state, [5, 6, 7])[-1].tokens == (5, 6)
    state = SequenceState(_request(), exclude_input_default=True, max_seq_len=5)
    assert _feed(state, [5, 6, 7])[-1].tokens == (5, 6) and state.finish_reason is FinishReason.LENGTH


def test_streaming_sends_one_token_per_response_and_closes_without_the_end_id():
    state = SequenceState(_request(streaming=True, exclude_input_in_output=False), exclude_input_default=True)
    chunks = _feed(state, [7, 8, 0])
    assert [(c.tokens, c.final) for c in chunks] == [((7,), False), ((8,), False), ((), True)]
    state = SequenceState(_request(streaming=True, max_new_tokens=2), exclude_input_default=True)
    assert [(c.tokens, c.final) for c in _feed(state, [7, 8, 9])] == [((7,), False), ((8,), True)]


def test_completes_word_detects_only_whole_words():
    assert completes_word([1, 2], 3, ((2, 3),))
    assert completes_word([], 4, ((4,),))
    assert not completes_word([1], 3, ((2, 3),))
    assert not completes_word([], 3, ((2, 3),))


def test_the_test_tokenizer_is_a_real_hugging_face_tokenizer(tokenizer):
    ids = tokenizer.encode("Héllo", add_special_tokens=False)
    assert len(ids) == 6  # one token per UTF-8 byte
    assert tokenizer.decode(ids, skip_special_tokens=True) == "Héllo"
    assert tokenizer.decode([*ids, tokenizer.end_id], skip_special_tokens=True) == "Héllo"
    assert tokenizer.pad_id == tokenizer.end_id  # no pad token: Hugging Face falls back to EOS


def test_incremental_text_never_splits_a_character(tokenizer):
    text = IncrementalText(tokenizer, skip_special_tokens=True)
    pieces = [text.add([token]) for token in tokenizer.encode("añb", add_special_tokens=False)]
    assert pieces == ["a", "", "ñ", "b"]
    assert text.flush() == ""


def test_tokenizer_directories_are_checked(tmp_path, tokenizer_dir):
    with pytest.raises(TokenizerError, match="does not exist"):
        load_tokenizer(tmp_path / "missing")
    with pytest.raises(TokenizerError, match=r"holds none of tokenizer.json"):
        load_tokenizer(tmp_path)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "tokenizer.json").write_text((tokenizer_dir / "tokenizer.json").read_text())
    (broken / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|eot_id|>"}))
    with pytest.raises(TokenizerError, match="not in the vocabulary"):
        load_tokenizer(broken)
    (broken / "tokenizer_config.json").write_text("{}")
    (broken / "generation_config.json").write_text(json.dumps({"eos_token_id": [257, 9]}))
    assert load_tokenizer(broken).end_id == 257
    assert EOS in (tokenizer_dir / "tokenizer_config.json").read_text()


def test_model_parameters_are_read_strictly():
    params = Parameters(
        {
            "name": "m",
            "parameters": {
                "a": {"string_value": "true"},
                "n": {"string_value": "12"},
                "left": {"string_value": "${engine_dir}"},
                "bad": {"string_value": "maybe"},
            },
        }
    )
    assert params.flag("a") and params.integer("n") == 12 and params.text("missing", default="x") == "x"
    for call, message in (
        (lambda: params.text("left"), "never rendered"),
        (lambda: params.flag("bad"), "true or false"),
        (lambda: params.integer("a"), "integer"),
        (lambda: params.text("missing"), "required"),
        (lambda: params.integer("n", minimum=20), ">= 20"),
    ):
        with pytest.raises(ModelConfigError, match=message):
            call()
