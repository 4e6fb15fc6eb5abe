"""Worker sizing for a target request rate, and the nodes that host the workers."""

from __future__ import annotations

import pytest

from inference_platform.loadgen.sizing import worker_fleet, workers_needed


def test_workers_for_the_reference_peak():
    plan = workers_needed(100_000, 1_000, utilization=0.7)
    assert plan.workers == 143  # 100,000 / 700 = 142.9
    fleet = worker_fleet(plan, "m7i.2xlarge")
    assert fleet.workers_per_node == 7 and fleet.nodes == 21
    assert fleet.price_per_hour_usd == pytest.approx(21 * 0.4032)


def test_exact_multiple_needs_no_extra_worker():
    assert workers_needed(700, 100, utilization=0.7).workers == 10


@pytest.mark.parametrize(("target", "per_worker", "utilization"), [(0, 1, 0.7), (1, 0, 0.7), (1, 1, 0), (1, 1, 1.5)])
def test_bad_inputs_are_refused(target, per_worker, utilization):
    with pytest.raises(ValueError):
        workers_needed(target, per_worker, utilization=utilization)


def test_workers_never_go_on_accelerator_nodes():
    with pytest.raises(ValueError, match="accelerator"):
        worker_fleet(workers_needed(10, 1), "p5.48xlarge")


def test_size_command_prints_workers_nodes_and_price(capsys):
    import json

    from inference_platform.inferctl.cli import main

    assert main(["loadtest", "size", "--target-rps", "100000", "--per-worker-rps", "701", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["workers"] == 204 and printed["nodes"] == 30 and printed["instance_type"] == "m7i.2xlarge"
    assert main(["loadtest", "size", "--per-worker-rps", "701", "--instance-type", "g6e.xlarge"]) == 2
    assert "accelerator" in capsys.readouterr().err


def test_size_defaults_to_the_measured_worker_and_prices_one_run(capsys):
    """`inferctl loadtest size --qps 100000`: the measured 701 requests/s per worker is the default."""
    import json

    from inference_platform.catalog.load_generator import MEASURED_PER_WORKER_RPS, workers_for
    from inference_platform.inferctl.cli import main

    assert main(["loadtest", "size", "--qps", "100000", "--minutes", "10", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["per_worker_rps"] == MEASURED_PER_WORKER_RPS and printed["workers"] == workers_for(100_000) == 204
    assert printed["price_per_run_usd"] == round(printed["price_per_hour_usd"] / 6, 4)
