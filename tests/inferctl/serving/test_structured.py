"""Structured-output checks smoke applies to whatever the endpoint returns."""

from __future__ import annotations

import json

from inference_platform.loadgen.structured import ANSWER_SCHEMA, GUIDES, Guide, schema_problem

SCHEMA_GUIDE, REGEX_GUIDE = GUIDES


def test_conforming_outputs_pass():
    assert SCHEMA_GUIDE.check(json.dumps({"answer": "a", "confidence": 0.5, "tags": ["x"]})) is None
    assert REGEX_GUIDE.check("ABC-1234") is None
    assert Guide("json", "").check("[1, 2]") is None


def test_violations_are_described():
    assert "missing required 'tags'" in SCHEMA_GUIDE.check(json.dumps({"answer": "a", "confidence": 1}))
    assert "$.confidence: expected number, got bool" in SCHEMA_GUIDE.check(
        json.dumps({"answer": "a", "confidence": True, "tags": ["x"]})
    )
    assert "below minimum" in SCHEMA_GUIDE.check(json.dumps({"answer": "a", "confidence": -1, "tags": ["x"]}))
    assert "fewer than 1 items" in SCHEMA_GUIDE.check(json.dumps({"answer": "a", "confidence": 1, "tags": []}))
    assert "$.tags[0]: expected string" in SCHEMA_GUIDE.check(json.dumps({"answer": "a", "confidence": 1, "tags": [3]}))
    assert "is not JSON" in SCHEMA_GUIDE.check("{nope")
    assert "does not match" in REGEX_GUIDE.check("abc-1234")
    assert schema_problem("x", {"enum": ["a"]}, "$") == "$: 'x' not in ['a']"
    assert ANSWER_SCHEMA["required"] == ["answer", "confidence", "tags"]
