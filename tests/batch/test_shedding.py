"""Reading the shed signals: Prometheus instant-query answers and Prometheus text pages, and how the allowed
concurrency follows them."""

from __future__ import annotations

import json

import pytest

from inference_platform.batch.config import ShedRule, worker_config
from inference_platform.batch.shedding import Shedder, parse_selector, value_from_prometheus, value_from_text
from tests.batch.test_config import BASE

PAGE = """# TYPE nv_inference_pending_request_count gauge
nv_inference_pending_request_count{model="tensorrt_llm",version="1"} 3
nv_inference_pending_request_count{model="other",version="1"} 5
# TYPE kv gauge
kv{kv_cache_block_type="fraction"} 0.5
kv{kv_cache_block_type="used"} 900
"""


def test_a_selector_sums_the_matching_series():
    assert value_from_text(PAGE, 'nv_inference_pending_request_count{model="tensorrt_llm"}') == 3
    assert value_from_text(PAGE, "nv_inference_pending_request_count") == 8
    assert value_from_text(PAGE, 'kv{kv_cache_block_type="fraction"}') == 0.5
    assert value_from_text(PAGE, "absent") == 0
    assert parse_selector('a{b="c", d="e"}') == ("a", {"b": "c", "d": "e"})
    with pytest.raises(ValueError):
        parse_selector("rate(a[1m])")


def test_a_query_answer_gives_its_largest_sample():
    vector = {
        "status": "success",
        "data": {"resultType": "vector", "result": [{"value": [0, "2"]}, {"value": [0, "7.5"]}]},
    }
    assert value_from_prometheus(vector) == 7.5
    assert value_from_prometheus({"status": "success", "data": {"resultType": "vector", "result": []}}) == 0
    assert value_from_prometheus({"status": "success", "data": {"resultType": "scalar", "result": [0, "4"]}}) == 4
    with pytest.raises(ValueError, match="bad_data"):
        value_from_prometheus({"status": "error", "error": "bad_data"})


def test_the_limit_drops_at_once_and_climbs_one_step_at_a_time():
    config = worker_config({**BASE, "BATCH_SERVING_URL": "http://s:9000", "BATCH_CONCURRENCY": "3",
                            "BATCH_SIGNALS_METRICS_URL": "http://m/metrics",
                            "BATCH_SHED_RULES": '[{"expr": "x", "above": 1}]'})  # fmt: skip
    shedder = Shedder(config)
    assert shedder.rules == (ShedRule(expr="x", above=1.0),)
    assert shedder.limit == 0, "a fresh worker waits for its first reading"
    limits = []
    for above in (False, False, False, False, True, False):
        shedder.apply(above)
        limits.append(shedder.limit)
    assert limits == [1, 2, 3, 3, 0, 1]


LLM_API_PAGE = """# HELP nv_trt_llm_request_metrics LLM step requests (active, max, waiting)
# TYPE nv_trt_llm_request_metrics gauge
nv_trt_llm_request_metrics{model="tensorrt_llm",request_type="active",version="1"} 16
nv_trt_llm_request_metrics{model="tensorrt_llm",request_type="max",version="1"} 16
nv_trt_llm_request_metrics{model="tensorrt_llm",request_type="waiting",version="1"} 3
# TYPE nv_inference_pending_request_count gauge
nv_inference_pending_request_count{model="tensorrt_llm",version="1"} 0
"""
"""Triton's /metrics as the LLM-API model publishes its gauges (runtime/request_gauges.py): Triton's own pending
count does not count the requests queued inside the LLM API (test_lane_shedding.py prints its peak: 0 or 1 while 11
waited), the waiting gauge does."""


def test_the_llm_api_models_waiting_gauge_is_the_signal_a_metrics_page_rule_reads():
    waiting = 'nv_trt_llm_request_metrics{model="tensorrt_llm",request_type="waiting"}'
    assert value_from_text(LLM_API_PAGE, waiting) == 3
    assert value_from_text(LLM_API_PAGE, 'nv_trt_llm_request_metrics{request_type="active"}') == 16
    assert value_from_text(LLM_API_PAGE, 'nv_inference_pending_request_count{model="tensorrt_llm"}') == 0
    config = worker_config({**BASE, "BATCH_SERVING_URL": "http://s:9000", "BATCH_SIGNALS_METRICS_URL": "http://m/metrics",
                            "BATCH_SHED_RULES": f'[{{"expr": {json.dumps(waiting)}, "above": 2}}]'})  # fmt: skip
    shedder = Shedder(config)
    assert [value_from_text(LLM_API_PAGE, r.expr) > r.above for r in shedder.rules] == [True]
