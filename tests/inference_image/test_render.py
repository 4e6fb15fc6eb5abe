"""The strict renderer: every placeholder filled or every missing key named; nothing left over."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from inference_platform.inference_image.render import (
    Fragment,
    ParameterBlocks,
    RenderError,
    format_value,
    placeholders,
    render,
)

TEMPLATE = (
    'name: "{{ name }}"\nmax_batch_size: {{ batch }}\nparameters { key: "x" value: { string_value: "{{ flag }}" } }\n'
)


def test_fills_every_placeholder_with_typed_values():
    text = render(TEMPLATE, {"name": "ensemble", "batch": 8, "flag": True}, source="t")
    assert text == 'name: "ensemble"\nmax_batch_size: 8\nparameters { key: "x" value: { string_value: "true" } }\n'


def test_one_error_names_every_missing_key():
    with pytest.raises(RenderError) as err:
        render(TEMPLATE, {"name": "x"}, source="ensemble/config.pbtxt.tmpl")
    assert err.value.problems == ("ensemble/config.pbtxt.tmpl: missing batch, flag",)


def test_unknown_keys_are_rejected_with_the_missing_ones():
    with pytest.raises(RenderError) as err:
        render(TEMPLATE, {"name": "x", "batch": 1, "flag": False, "max_batch": 2, "typo": 3}, source="t")
    assert "t: unknown max_batch, typo" in str(err.value)


def test_malformed_and_foreign_placeholders_are_errors():
    for bad in ("a: {{ name }} {{ unclosed", "a: ${triton_max_batch_size}", "a: {{Name}}"):
        with pytest.raises(RenderError, match="malformed placeholder"):
            render(bad, {"name": "x"} if "name" in bad else {}, source="t")


def test_a_fragment_cannot_smuggle_in_a_placeholder():
    with pytest.raises(RenderError, match="still holds a placeholder"):
        render("x: {{ body }}", {"body": Fragment("y: {{ other }}")}, source="t")


def test_values_that_break_a_pbtxt_string_are_refused():
    for value in ('a"b', "a\\b", "a\nb"):
        with pytest.raises(RenderError, match="quote, backslash or line break"):
            render('s: "{{ v }}"', {"v": value}, source="t")
    with pytest.raises(RenderError, match="finite"):
        render("f: {{ v }}", {"v": float("nan")}, source="t")
    with pytest.raises(RenderError, match="unsupported value type list"):
        render("f: {{ v }}", {"v": [1]}, source="t")  # type: ignore[dict-item]


def test_all_problems_of_one_template_come_together():
    with pytest.raises(RenderError) as err:
        render('{{ a }} {{ b }} "{{ c }}"', {"a": 1, "c": 'x"', "z": 0}, source="t")
    assert len(err.value.problems) == 3


@given(st.integers(min_value=-(2**31), max_value=2**31), st.booleans())
def test_numbers_and_booleans_render_as_protobuf_literals(number, flag):
    assert format_value("n", number) == str(number)
    assert format_value("b", flag) in ("true", "false")
    assert placeholders("{{ a }}{{ b_1 }} {{a}}") == {"a", "b_1"}


def test_parameter_blocks_render_typed_entries_and_name_bad_ones():
    blocks = ParameterBlocks((("gpu_device_ids", "0,1"), ("max_tokens_in_paged_kv_cache", 4096)))
    text = render("{{ params }}", {"params": blocks}, source="t")
    assert text == (
        'parameters: {\n  key: "gpu_device_ids"\n  value: { string_value: "0,1" }\n}\n'
        'parameters: {\n  key: "max_tokens_in_paged_kv_cache"\n  value: { string_value: "4096" }\n}'
    )
    with pytest.raises(RenderError, match=r"params\.tokenizer_dir"):
        render("{{ params }}", {"params": ParameterBlocks((("tokenizer_dir", 'a"b'),))}, source="t")
