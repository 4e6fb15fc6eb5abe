"""The CPU stand-in engine on its own: the LLM API surface our tensorrt_llm model calls, and what it does."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from inference_platform.inference_image.testing.cpu_llm_api import LLM, GuidedDecodingParams, SamplingParams
from inference_platform.inference_image.testing.cpu_llm_api.checkpoint import CHAT_TEMPLATE, EOT, write_checkpoint
from inference_platform.inference_image.testing.cpu_llm_api.engine import STATE_FILE_ENV, TOKEN_DELAY_ENV
from tests.own_loop import run_on_own_loop

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 40},
        "age": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
    },
    "required": ["name", "age", "tags"],
    "additionalProperties": False,
}
CHAT = (
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n"
    "Hello 你好 🎉 world<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_checkpoint(tmp_path_factory.mktemp("checkpoint"))


def llm(checkpoint: Path, **args) -> LLM:
    return LLM(model=str(checkpoint), guided_decoding_backend="xgrammar", **args)


def run(coro):
    return run_on_own_loop(coro)


async def complete(engine: LLM, prompt, **params):
    return await engine.generate_async(prompt, sampling_params=SamplingParams(**params)).aresult()


def test_a_chat_prompt_gets_its_last_user_message_back_with_chinese_and_emoji_then_stops(checkpoint):
    out = run(complete(llm(checkpoint), CHAT, max_tokens=100, add_special_tokens=False)).outputs[0]
    assert (out.text, out.finish_reason) == ("Hello 你好 🎉 world", "stop")
    assert len(out.token_ids) == len("Hello 你好 🎉 world".encode())  # one token per UTF-8 byte


def test_a_stream_yields_each_new_text_once_and_never_half_a_character(checkpoint):
    async def collect():
        result = llm(checkpoint).generate_async(CHAT, SamplingParams(max_tokens=100), streaming=True)
        return [(o.outputs[0].text_diff, o.outputs[0].text, o.finished) async for o in result]

    steps = run(collect())
    assert "".join(d for d, _, _ in steps) == steps[-1][1] == "Hello 你好 🎉 world"
    assert all("\ufffd" not in text for _, text, _ in steps)
    assert [f for _, _, f in steps].count(True) == 1 and steps[-1][2]


def test_max_tokens_and_stop_strings_end_a_sequence_as_the_llm_api_does(checkpoint):
    engine = llm(checkpoint)
    cut = run(complete(engine, "The quick brown fox", max_tokens=5)).outputs[0]
    assert (cut.text, cut.finish_reason) == ("The q", "length")
    stopped = run(complete(engine, "The quick brown fox", max_tokens=50, stop=["brown"])).outputs[0]
    assert (stopped.text, stopped.finish_reason, stopped.stop_reason) == ("The quick ", "stop", "brown")
    kept = run(complete(engine, "The quick brown fox", stop=["brown"], include_stop_str_in_output=True))
    assert kept.outputs[0].text == "The quick brown"


def test_a_stream_never_shows_text_a_stop_string_takes_back(checkpoint):
    async def diffs():
        params = SamplingParams(max_tokens=50, stop=[" brown"])
        return [
            o.outputs[0].text_diff
            async for o in llm(checkpoint).generate_async("The quick brown fox", params, streaming=True)
        ]

    steps = run(diffs())
    assert "".join(steps) == "The quick" and not any("b" in step for step in steps)


def test_greedy_decoding_echoes_and_sampling_shuffles_the_same_words(checkpoint):
    engine = llm(checkpoint)
    prompt = "one two three four five six seven eight"

    def text(**params):
        return run(complete(engine, prompt, max_tokens=100, **params)).outputs[0].text

    assert text() == text(temperature=0) == text(top_k=1) == prompt
    assert sorted(text(temperature=0.8).split()) == sorted(prompt.split())


def test_json_schema_guided_output_is_an_instance_of_the_schema(checkpoint):
    engine = llm(checkpoint)
    for seed in range(5):
        guide = GuidedDecodingParams(json=json.dumps(PERSON))
        out = run(complete(engine, CHAT, max_tokens=300, seed=seed, guided_decoding=guide)).outputs[0]
        assert out.finish_reason == "stop"
        jsonschema.validate(json.loads(out.text), PERSON)
    assert json.loads(out.text)["name"].startswith("Hello 你好 🎉")


def test_a_small_integer_range_is_kept_and_a_wide_one_is_not_refused(checkpoint):
    """A tool's "days: 1-7" (what litellm's and LangChain's tests ask): outlines-core's regex bounds no integer, so
    the stand-in makes a range of at most SMALL_INTEGER_RANGE values an enum; wider ranges stay unbounded."""
    engine = llm(checkpoint)
    days = {"type": "object", "properties": {"days": {"type": "integer", "minimum": 1, "maximum": 7}},
            "required": ["days"], "additionalProperties": False}  # fmt: skip
    wide = {**days, "properties": {"days": {"type": "integer", "minimum": 0, "maximum": 10**6}}}
    for seed in range(8):
        for schema in (days, wide):
            guide = GuidedDecodingParams(json=json.dumps(schema))
            out = run(complete(engine, CHAT, max_tokens=40, seed=seed, temperature=1.0, guided_decoding=guide))
            value = json.loads(out.outputs[0].text)["days"]
            assert isinstance(value, int) and (schema is wide or 1 <= value <= 7), (schema, value)


def test_json_object_and_regex_guides_constrain_the_tokens(checkpoint):
    engine = llm(checkpoint)
    obj = run(complete(engine, CHAT, guided_decoding=GuidedDecodingParams(json_object=True))).outputs[0].text
    assert isinstance(json.loads(obj), dict)
    pattern = r"[A-Z][a-z]{2,5}-[0-9]{3}"
    text = run(complete(engine, CHAT, guided_decoding=GuidedDecodingParams(regex=pattern))).outputs[0].text
    assert re.fullmatch(pattern, text), text


def test_guided_decoding_is_refused_without_a_backend_and_for_grammars(checkpoint):
    with pytest.raises(ValueError, match="guided_decoding_backend"):
        run(complete(LLM(model=str(checkpoint)), CHAT, guided_decoding=GuidedDecodingParams(json_object=True)))
    with pytest.raises(ValueError, match="grammar"):
        run(complete(llm(checkpoint), CHAT, guided_decoding=GuidedDecodingParams(grammar="root ::= 'a'")))
    with pytest.raises(ValueError, match="Only one guide"):
        GuidedDecodingParams(json="{}", regex="a")


def test_prompts_over_max_input_len_are_refused_and_the_context_caps_generation(checkpoint):
    engine = llm(checkpoint, max_input_len=16, max_seq_len=24)
    with pytest.raises(ValueError, match=r"prompt length \(18\) exceeds max_input_len \(16\)"):
        run(complete(engine, "x" * 17))
    out = run(complete(engine, "abcdefghijklmn", max_tokens=100)).outputs[0]
    assert (len(out.token_ids), out.finish_reason) == (24 - 15, "length")


def test_reused_kv_blocks_are_the_shared_prefix_blocks_and_none_without_reuse(checkpoint):
    engine = llm(checkpoint, kv_cache_config={"tokens_per_block": 8, "enable_partial_reuse": False})

    def reused(prompt):
        out = run(complete(engine, prompt, max_tokens=1, return_perf_metrics=True)).outputs[0]
        return out.request_perf_metrics.kv_cache_metrics.num_reused_blocks

    base = "a" * 40
    assert reused(base) == 0
    assert reused(base) == (41 - 1) // 8  # BOS + 40 bytes; the last token is always computed
    assert reused(base[:20] + "b" * 20) == 2  # blocks 0-1 (BOS + 15 a's) are shared, block 2 differs
    no_reuse = llm(checkpoint, kv_cache_config={"enable_block_reuse": False, "tokens_per_block": 8})
    for _ in range(2):
        out = run(complete(no_reuse, base, max_tokens=1, return_perf_metrics=True)).outputs[0]
        assert out.request_perf_metrics.kv_cache_metrics.num_reused_blocks == 0


def test_least_recently_used_cached_blocks_leave_first_when_the_pool_is_full(checkpoint):
    # 6 blocks of 8 tokens: a prompt of 17 tokens + 1 generated leaves 2 full blocks cached.
    engine = llm(checkpoint, kv_cache_config={"tokens_per_block": 8, "max_tokens": 48, "enable_partial_reuse": False})

    def cached(prompt):
        return run(complete(engine, prompt, max_tokens=1)).cached_tokens

    a, b, c = "a" * 16, "b" * 16, "c" * 16
    assert [cached(p) for p in (a, b, a)] == [0, 0, 16]  # a and b cached (4 blocks), a touched again
    assert cached(c) == 0  # needs 3 blocks: 2 free, one evicted: b's last (the least recently used leaf)
    assert [cached(a), cached(b)] == [16, 8]  # b's first block, a prefix of what left, stays
    stats = engine.kv_cache_stats()
    assert stats["evictedBlocks"] >= 1 and stats["maxNumBlocks"] == 6 and stats["tokensPerBlock"] == 8


def test_abort_ends_a_request_at_once_and_frees_its_slot(checkpoint, tmp_path, monkeypatch):
    state = tmp_path / "state.json"
    monkeypatch.setenv(TOKEN_DELAY_ENV, "50")
    monkeypatch.setenv(STATE_FILE_ENV, str(state))
    engine = llm(checkpoint, max_batch_size=1)

    async def scenario():
        first = engine.generate_async("x" * 200, SamplingParams(max_tokens=200), streaming=True)
        second = engine.generate_async("y", SamplingParams(max_tokens=1))
        await first.__anext__()
        counts = json.loads(state.read_text())
        assert (counts["active"], counts["waiting"]) == (1, 1)
        held = len(first.outputs[0].token_ids)
        first.abort()
        await first.aresult()
        await second.aresult()
        return first.outputs[0].finish_reason, held, len(first.outputs[0].token_ids), second.outputs[0].finish_reason

    reason, held, final, second = run(scenario())
    # At once: the abort ended the decode step it interrupted, not one more token (of 200) came.
    assert reason == "cancelled" and final == held < 200
    # The slot went to the waiting request, which then ran to its end.
    assert second == "length"
    counts = json.loads(state.read_text())
    assert (counts["active"], counts["waiting"]) == (0, 0)


def test_the_surface_matches_the_llm_api_where_a_caller_could_get_it_wrong(checkpoint):
    with pytest.raises(TypeError):
        SamplingParams(max_new_tokens=3)  # not an LLM API name
    with pytest.raises(TypeError, match="by keyword"):
        run(_positional_streaming(llm(checkpoint)))
    with pytest.raises(ValueError, match=r"config\.json"):
        LLM(model=str(checkpoint.parent))
    assert SamplingParams().max_tokens == 32 and SamplingParams().add_special_tokens is True
    assert EOT in CHAT_TEMPLATE


async def _positional_streaming(engine: LLM):
    return engine.generate_async("hi", SamplingParams(), True)
