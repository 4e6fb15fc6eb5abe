"""The LLM-API model's queued responses merged per request before they go to Triton (inference_image/llmapi/
coalesce.py says why): the text of every merged response in order, the later counts and reasons, logprobs joined,
errors never merged, each request's order kept, and what the OpenAI server reads from a merged run the same as from
the separate responses; and the Triton behaviour it answers, pinned."""

from __future__ import annotations

import json
import urllib.request

import numpy as np

from inference_platform.inference_image.llmapi import coalesce as coalesce_module
from inference_platform.inference_image.llmapi.coalesce import coalesce, merge
from inference_platform.inference_image.openai_api.llm_client import _merge, _update
from tests.conftest import REPO

FINAL = 1


def tensors(texts: list[str], reasons: list[str], out_tokens: list[int], *, logprobs: list[dict] | None = None,
            queued: float | None = None) -> dict:  # fmt: skip
    t = {
        "text_output": np.array([x.encode() for x in texts], dtype=np.object_),
        "finish_reason": np.array([r.encode() for r in reasons], dtype=np.object_),
        "num_input_tokens": np.array([7], dtype=np.int32),
        "num_output_tokens": np.array(out_tokens, dtype=np.int32),
        "num_cached_tokens": np.array([0], dtype=np.int32),
    }
    if logprobs is not None:
        t["logprobs"] = np.array([json.dumps(x).encode() for x in logprobs], dtype=np.object_)
    if queued is not None:
        t["queue_time_s"] = np.array([queued], dtype=np.float32)
    return t


def event(t: dict) -> dict:
    """What Triton's generate_stream sends for a response (one JSON event): its tensors as JSON values."""
    out = {}
    for name, array in t.items():
        values = [v.decode() if isinstance(v, bytes) else v.item() for v in array]
        out[name] = values if len(values) > 1 or name in ("text_output", "finish_reason", "logprobs") else values[0]
    return out


class Sender:
    def __init__(self, name: str) -> None:
        self.name = name


def test_a_run_of_queued_responses_is_one_with_all_its_text_and_the_last_counts():
    a, b, c = (tensors(["He"], [""], [2]), tensors(["ll"], [""], [4]),
               tensors(["o!"], ["stop"], [6], queued=0.25))  # fmt: skip
    s = Sender("s")
    ((sender, merged, flags),) = coalesce([(s, a, 0), (s, b, 0), (s, c, FINAL)])
    assert sender is s and flags == FINAL
    assert list(merged["text_output"]) == [b"Hello!"] and list(merged["finish_reason"]) == [b"stop"]
    assert list(merged["num_output_tokens"]) == [6] and float(merged["queue_time_s"][0]) == 0.25
    # The OpenAI server reads the merged response as it reads the three (llm_client's own merge of events).
    separate, together = _merge([_update(event(x)) for x in (a, b, c)]), _update(event(merged))
    assert (together.deltas, together.finish_reasons, together.output_tokens) == (
        separate.deltas, separate.finish_reasons, separate.output_tokens
    )  # fmt: skip


def test_several_sequences_keep_their_own_text_reasons_and_logprobs():
    a = tensors(
        ["a", "x"], ["", "length"], [1, 1], logprobs=[{"ids": [1], "top": [[[1, -0.1, 1]]]}, {"ids": [], "top": []}]
    )
    b = tensors(
        ["b", ""], ["stop", ""], [2, 1], logprobs=[{"ids": [2], "top": [[[2, -0.2, 1]]]}, {"ids": [], "top": []}]
    )
    merged = merge(a, b)
    assert list(merged["text_output"]) == [b"ab", b"x"]
    assert list(merged["finish_reason"]) == [b"stop", b"length"]  # a reason, once given, stays
    assert [json.loads(x) for x in merged["logprobs"]] == [
        {"ids": [1, 2], "top": [[[1, -0.1, 1]], [[2, -0.2, 1]]]}, {"ids": [], "top": []}
    ]  # fmt: skip


def test_requests_keep_their_order_and_errors_and_finals_are_never_merged():
    s, t = Sender("s"), Sender("t")
    error = object()  # a built response (an error or a cancellation)
    items = [(s, tensors(["1"], [""], [1]), 0), (t, tensors(["a"], [""], [1]), 0), (s, tensors(["2"], [""], [2]), 0),
             (t, error, FINAL), (s, tensors(["3"], ["stop"], [3]), FINAL)]  # fmt: skip
    out = coalesce(items)
    assert [(x[0].name, x[2]) for x in out] == [("s", FINAL), ("t", 0), ("t", FINAL)]
    assert list(out[0][1]["text_output"]) == [b"123"]
    assert list(out[1][1]["text_output"]) == [b"a"] and out[2][1] is error
    # A final response ends its request's run: nothing after it is merged into it.
    done = tensors(["x"], ["stop"], [1])
    late = tensors(["y"], ["stop"], [2])
    assert [p for _, p, _ in coalesce([(s, done, FINAL), (s, late, FINAL)])] == [done, late]


def test_one_response_is_sent_as_it_is():
    s = Sender("s")
    only = tensors(["hi"], ["stop"], [1])
    assert coalesce([(s, only, FINAL)]) == [(s, only, FINAL)]


UPSTREAM = json.loads((REPO / "tests/data/upstream/triton_v2.51.0_generate_stream_defer.json").read_text())


def test_the_triton_behaviour_it_answers_is_pinned_at_the_version_the_local_stack_runs(shared_stack):
    """The facts coalesce.py and llm_client.LOST_FINAL rest on, as read (tests/data/upstream/
    triton_v2.51.0_generate_stream_defer.json), at the Triton version the local stack really runs."""
    with urllib.request.urlopen(f"{shared_stack.triton_url}/v2", timeout=10) as response:
        assert json.loads(response.read())["version"] == UPSTREAM["source"].rsplit("/v", 1)[1]
    # Every response's write is deferred with evthr_defer, whose result is not looked at...
    defer = UPSTREAM["defer_ignored"]["text"]
    assert defer.count("evthr_defer(") == 2 and "if (evthr_defer" not in defer and "= evthr_defer" not in defer
    # ...one pending response per callback, and libevhtp refuses (RETRY, unqueued) on a full non-blocking socket.
    assert "pending_http_responses_.pop();" in UPSTREAM["one_pending_per_callback"]["text"]
    assert (
        "EVTHR_RES_RETRY" in UPSTREAM["libevhtp_defer"]["text"]
        and "O_NONBLOCK" in UPSTREAM["libevhtp_defer"]["nonblocking"]
    )
    for cited in (
        "src/http_server.cc",
        "GenerateRequestClass::InferResponseComplete",
        "evthr_defer",
        "EVTHR_RES_RETRY",
    ):
        assert cited in (coalesce_module.__doc__ or ""), cited
