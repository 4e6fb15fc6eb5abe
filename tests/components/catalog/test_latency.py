"""The latency model against published measurements (every calibration row within ±25 %), its physics
(prefill compute-bound, decode bandwidth-bound with a compute ceiling, TP communication, KV-bound batch)
and the published checks that were not used to fit it."""

from __future__ import annotations

import pytest

from components.catalog import latency
from components.catalog.latency import Slo, Workload
from components.catalog.latency_calibration import CALIBRATION, CALIBRATION_TOLERANCE, CHECKS, LLAMA2_70B
from components.catalog.models import SizingError

W1K = Workload(isl=1000, osl=1000)


@pytest.mark.parametrize("row", CALIBRATION, ids=lambda m: m.label)
def test_every_calibration_row_within_tolerance(row):
    assert row.source, "every calibration row names its source"
    error = row.error()
    assert abs(error) <= CALIBRATION_TOLERANCE, (
        f"{row.label}: predicted {row.predicted():.0f} vs published {row.tokens_per_s_per_accelerator:.0f} "
        f"tokens/s/GPU ({error:+.1%}; source {row.source})"
    )


def test_calibration_covers_h100_b200_l40s_offline_and_server():
    chips = {latency.replica(m.model, m.precision, m.instance_type, m.tp).node.accelerator_model for m in CALIBRATION}
    assert {"h100", "b200", "l40s"} <= chips
    assert {m.scenario for m in CALIBRATION} == {"offline", "server"}


@pytest.mark.parametrize("row", CHECKS, ids=lambda m: m.label)
def test_published_results_outside_the_fit_stay_within_25_percent(row):
    # These rows (H200 among them) were not used to fit the efficiencies.
    assert row not in CALIBRATION
    assert abs(row.error()) <= 0.25, f"{row.label}: {row.error():+.1%}"


def test_decode_is_memory_bound_at_batch_one_and_compute_bound_when_large():
    r = latency.replica("Llama-3.1-70B", "fp8", "p5.48xlarge", 2)
    small = latency.point(r, W1K, 1)
    assert small.decode_bound == "memory"
    r8 = latency.replica(LLAMA2_70B, "fp8", "p5.48xlarge", 2)
    big = latency.point(r8, Workload(isl=100, osl=100), latency.max_batch(r8, Workload(isl=100, osl=100)))
    assert big.decode_bound == "compute"


def test_prefill_is_compute_bound_and_grows_faster_than_linearly_with_input():
    r = latency.replica("Llama-3.1-8B", "fp8", "p5.48xlarge", 1)
    p1, p8 = latency.prefill_seconds(r, 1000), latency.prefill_seconds(r, 8000)
    assert p8 > 8 * p1  # the attention term is quadratic


def test_tensor_parallel_pays_for_communication_and_pcie_more_than_nvlink():
    nvlink = latency.point(latency.replica("Llama-3.1-8B", "fp8", "p5.48xlarge", 2), W1K, 64)
    pcie = latency.point(latency.replica("Llama-3.1-8B", "fp8", "g6e.12xlarge", 2), W1K, 64)
    single = latency.point(latency.replica("Llama-3.1-8B", "fp8", "p5.48xlarge", 1), W1K, 64)
    assert single.communication_s == 0
    assert pcie.communication_s > 3 * nvlink.communication_s > 0


def test_kv_capacity_bounds_the_batch():
    r = latency.replica("Llama-3.1-70B", "fp8", "p5.48xlarge", 2)
    limit = latency.max_batch(r, W1K)
    assert limit == int(latency.kv_capacity_tokens(r) / W1K.mean_context)
    prediction = latency.predict(r, W1K, scenario="offline")
    assert max(p.batch for p in prediction.sweep) == limit
    with pytest.raises(SizingError, match="KV cache"):
        latency.predict(r, Workload(isl=2_000_000, osl=10))


def test_server_slo_lowers_the_batch_and_the_rate():
    r = latency.replica("Llama-3.1-70B", "fp8", "p5.48xlarge", 4)
    offline = latency.predict(r, W1K, scenario="offline").best
    server = latency.predict(r, W1K, scenario="server", slo=Slo(ttft_ms=400, itl_ms=40)).best
    assert server.itl_ms <= 40 and server.ttft_ms <= 400
    assert server.batch < offline.batch
    assert server.tokens_per_s_per_replica < offline.tokens_per_s_per_replica


def test_unmeetable_slo_reports_the_closest_point():
    r = latency.replica("Llama-3.1-70B", "fp8", "p5.48xlarge", 2)
    prediction = latency.predict(r, W1K, scenario="server", slo=Slo(ttft_ms=1, itl_ms=1))
    assert not prediction.met and prediction.closest.batch == 1


def test_tp_across_nodes_uses_efa():
    r = latency.replica("Llama-3.1-405B", "fp8", "p5.48xlarge", 16)
    assert r.nodes == 2 and r.interconnect.name == "EFA"
    with pytest.raises(SizingError, match="multiple of 8"):
        latency.replica("Llama-3.1-405B", "fp8", "p5.48xlarge", 12)
