"""Interactive traffic keeps its SLO while a burst of batch work is queued: the same interactive load measured
alone and then beside a few thousand queued batch requests, in one run, with the workers shedding on the
serving endpoint's waiting-requests gauge."""

from __future__ import annotations

import statistics
import threading
import time

import pytest
from inference_platform.offline_plan import stack_settings

from tests.batch.conftest import stand_in_serving
from tests.batch.lane_requests import chat_line, submit

pytestmark = [pytest.mark.motoserver, pytest.mark.live]

BURST = 2000
INTERACTIVE_CLIENTS = 3
REQUESTS_PER_CLIENT = 20


def interactive_ttfts(serving_url: str) -> list[float]:
    """TTFT in ms of streamed chat requests, INTERACTIVE_CLIENTS clients one request after another."""
    from openai import OpenAI

    found: list[float] = []
    lock = threading.Lock()

    def client_loop(index: int) -> None:
        client = OpenAI(base_url=serving_url + "/v1", api_key="unused", max_retries=0)
        for n in range(REQUESTS_PER_CLIENT):
            started = time.perf_counter()
            stream = client.chat.completions.create(
                model="stand-in",
                messages=[{"role": "user", "content": f"interactive {index}-{n}"}],
                max_tokens=8,
                stream=True,
            )
            first = None
            for chunk in stream:
                if first is None and chunk.choices and chunk.choices[0].delta.content:
                    first = (time.perf_counter() - started) * 1000
            with lock:
                found.append(first)

    threads = [threading.Thread(target=client_loop, args=(i,)) for i in range(INTERACTIVE_CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert len(found) == INTERACTIVE_CLIENTS * REQUESTS_PER_CLIENT and None not in found
    return found


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


def test_a_queued_burst_leaves_interactive_ttft_within_the_dev_slo(lane_factory, tmp_path):
    slo = stack_settings.load("dev").serving.slo
    with stand_in_serving(tmp_path, slots=4, token_ms=10, first_token_ms=50) as serving:
        lane = lane_factory()
        api = lane.api()
        client = api.openai()
        alone = interactive_ttfts(serving.url)
        submit(client, [chat_line(i, max_tokens=100) for i in range(BURST)])
        shed = {
            "BATCH_SERVING_URL": serving.url,
            "BATCH_CONCURRENCY": "8",
            "BATCH_SIGNALS_METRICS_URL": serving.metrics_url,
            "BATCH_SHED_RULES": '[{"expr": "stand_in_pending_requests{model=\\"stand-in\\"}", "above": 0}]',
            "BATCH_SIGNALS_INTERVAL_SECONDS": "0.2",
        }
        workers = [lane.worker(f"worker-{i}", **shed) for i in range(2)]
        deadline = time.monotonic() + 30
        while sum(w.metric("batch_worker_in_flight") for w in workers) == 0:
            assert time.monotonic() < deadline, "the workers never took batch work"
            time.sleep(0.1)
        beside = interactive_ttfts(serving.url)
        backoff = sum(w.metric("batch_worker_backoff_seconds_total") for w in workers)
        # Sheddable, not stopped: the batch keeps moving beside the interactive load (a batch request takes ~1 s).
        deadline = time.monotonic() + 30
        while (completed := sum(w.metric("batch_requests_total", status="completed") for w in workers)) == 0:
            assert time.monotonic() < deadline, "batch work made no progress beside the interactive load"
            time.sleep(0.2)
        print(
            f"\ninteractive TTFT ms alone p50 {statistics.median(alone):.0f} p95 {p95(alone):.0f}; beside {BURST} queued "
            f"p50 {statistics.median(beside):.0f} p95 {p95(beside):.0f} (SLO p50 {slo.ttft_p50_ms}, p95 {slo.ttft_p95_ms}); "
            f"batch lines done beside it {completed:.0f}, workers shed {backoff:.1f} s"
        )
        assert statistics.median(beside) <= slo.ttft_p50_ms
        assert p95(beside) <= slo.ttft_p95_ms
        assert backoff > 0, "the workers never yielded"
