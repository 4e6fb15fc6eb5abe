"""Guided decoding with bounded cost: each limit of serving.guidedDecoding.limits gets OpenAI's 400 naming it, and the
compile itself runs in a worker bounded in time and memory that is replaced after an overrun.

Upstream facts the bounds rest on (mlc-ai/xgrammar @ v0.1.25 = e4e816f5, read in the fetched repository):
- ``python/xgrammar/compiler.py`` ``GrammarCompiler.__init__(tokenizer_info, max_threads=8, cache_enabled=True,
  cache_limit_bytes=-1)``: no timeout, no size limit; ``compile_json_schema(..., any_whitespace=True, ...)``;
- ``cpp/json_schema_converter.cc``: ``minLength``/``maxLength`` read as int64 and lowered to a counted repetition
  ``{min,max}`` of the string body (so the grammar grows with the bound); ``minItems``/``maxItems`` likewise;
- ``cpp/support/recursion_guard.{h,cc}``: the one built-in bound, a recursion depth (``XGRAMMAR_MAX_RECURSION_DEPTH``).
TensorRT-LLM compiles inline in its executor loop with no timeout (``_torch/pyexecutor/guided_decoder.py``, 1.2-era
copies; shared/facts/engine.md section 6).
"""

from __future__ import annotations

import json

import pytest

from inference_platform.inference_image.openai_api.errors import ApiError
from inference_platform.inference_image.openai_api.guides import Guide, GuideChecker, check_regex, check_schema
from inference_platform.inference_image.openai_api.server_file import GuideLimits
from inference_platform.inference_image.testing.cpu_llm_api.checkpoint import write_checkpoint
from inference_platform.settings.serving import GuidedDecodingLimits
from tests.own_loop import run_on_own_loop

LIMITS = GuideLimits()
XGRAMMAR = "mlc-ai/xgrammar @ v0.1.25 (e4e816f5)"


def refused(schema, limits=LIMITS) -> ApiError:
    with pytest.raises(ApiError) as caught:
        check_schema(schema, limits, param="response_format.json_schema.schema")
    err = caught.value
    assert (err.status, err.type, err.param) == (400, "invalid_request_error", "response_format.json_schema.schema")
    return err


def obj(**properties):
    return {"type": "object", "properties": properties}


def test_the_server_limits_are_the_settings_limits_one_for_one():
    assert GuideLimits().__dict__ == GuidedDecodingLimits().model_dump()


@pytest.mark.parametrize(
    ("schema", "limit"),
    [
        (obj(a={"type": "string", "maxLength": 1_000_000_000}), "stringLength"),
        (obj(a={"type": "string", "minLength": 129}), "stringLength"),
        (obj(a={"type": "array", "items": {"type": "integer"}, "maxItems": 100_000}), "arrayItems"),
        (obj(a={"type": "string", "pattern": "a{1000000}"}), "stringLength"),
        (obj(a={"type": "string", "pattern": "(a{20}){20}"}), "stringLength"),
        (obj(a={"type": "string", "pattern": "x" * 1001}), "patternChars"),
        (obj(**{f"p{i}": {"type": "integer"} for i in range(5001)}), "properties"),
        (obj(a={"enum": list(range(1001))}), "enumValues"),
        (obj(blob={"description": "y" * 270_000}), "schemaBytes"),
    ],
)
def test_each_limit_is_a_400_naming_it(schema, limit):
    err = refused(schema)
    assert f"serving.guidedDecoding.limits.{limit}" in err.message and err.code == "guide_limit_exceeded"


def test_nesting_deeper_than_the_limit_is_refused_and_shallower_passes():
    schema: dict = {"type": "string"}
    for _ in range(11):
        schema = obj(x=schema)
    assert "limits.depth" in refused(schema).message
    assert json.loads(check_schema(obj(x=obj(y={"type": "string", "maxLength": 64})), LIMITS, param="p"))


def test_malformed_bounds_are_400s_too():
    assert "non-negative integer" in refused(obj(a={"type": "string", "maxLength": "9"})).message
    assert "non-negative integer" in refused(obj(a={"type": "string", "maxLength": -1})).message


def test_a_regex_guide_is_bounded_like_a_pattern():
    with pytest.raises(ApiError, match="stringLength"):
        check_regex("[a-z]{0,100000}", LIMITS, param="p")
    check_regex(r"\d{3}-\d{4}", LIMITS, param="p")


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    return write_checkpoint(tmp_path_factory.mktemp("ckpt"))


def test_a_compile_over_its_time_is_refused_the_worker_replaced_and_the_next_guide_served(tokenizer_dir):
    # Within the structure limits but slow for the stand-in's compiler (an outlines-core index of a 10^5 repetition):
    # the limits are raised here so that the compile bound is the one that holds.
    limits = GuideLimits(string_length=1_000_000, compile_seconds=1.0)
    checker = GuideChecker(tokenizer_dir, limits, compiler="outlines")
    slow = Guide("json_schema", json.dumps(obj(a={"type": "string", "maxLength": 100_000})))
    fine = Guide("json_schema", json.dumps(obj(a={"type": "integer"})))

    async def scenario():
        await checker.check(fine, param="p")
        with pytest.raises(ApiError) as caught:
            await checker.check(slow, param="p")
        await checker.check(fine, param="p")  # cached verdict
        await checker.check(Guide("json_schema", json.dumps(obj(b={"type": "boolean"}))), param="p")  # a new worker
        with pytest.raises(ApiError):
            await checker.check(slow, param="p")  # the verdict is cached: no second overrun
        return caught.value

    try:
        err = run_on_own_loop(scenario(), timeout=120)
    finally:
        checker.close()
    assert "limits.compileSeconds" in err.message and err.status == 400
    assert (checker.killed, checker.compiles) == (1, 3)


def test_a_compile_over_its_memory_is_refused(tokenizer_dir):
    limits = GuideLimits(string_length=1_000_000, compile_seconds=60, compile_memory_mib=64)
    checker = GuideChecker(tokenizer_dir, limits, compiler="outlines")
    big = Guide("json_schema", json.dumps(obj(a={"type": "string", "maxLength": 100_000})))
    try:
        with pytest.raises(ApiError, match=r"limits\.compileMemoryMib"):
            run_on_own_loop(checker.check(big, param="p"), timeout=120)
        run_on_own_loop(checker.check(Guide("json_object"), param="p"), timeout=120)
    finally:
        checker.close()


def test_a_guide_the_compiler_refuses_is_a_400_with_its_reason(tokenizer_dir):
    checker = GuideChecker(tokenizer_dir, LIMITS, compiler="outlines")
    try:
        with pytest.raises(ApiError, match="does not compile"):
            run_on_own_loop(checker.check(Guide("regex", "(unclosed"), param="p"), timeout=120)
    finally:
        checker.close()


def test_the_upstream_facts_the_bounds_rest_on():
    # The keywords xgrammar 0.1.25 lowers to counted repetitions are exactly the ones bounded here.
    bounded = {"minLength", "maxLength", "minItems", "maxItems"}
    from inference_platform.inference_image.openai_api import guides

    assert bounded <= set(guides._STRING_BOUNDS) | set(guides._ARRAY_BOUNDS), XGRAMMAR
    # The compile worker builds xgrammar's compiler as TensorRT-LLM does: defaults but one thread, no cache.
    from pathlib import Path

    text = Path(guides.__file__).with_name("guide_worker.py").read_text(encoding="utf-8")
    assert "GrammarCompiler(info, max_threads=1, cache_enabled=False)" in text and "compile_json_schema(guide)" in text
