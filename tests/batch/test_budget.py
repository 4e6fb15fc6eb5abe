"""The batch lane's calls for the shared monthly budgets (issue 30) against the rate-limit service's stand-in,
which decides as ``envoyproxy/ratelimit`` does (a per-descriptor ``hits_addend`` of 0 checks only; over when the
count after the increase is strictly above the limit): the check admits until the budget is spent, each debit adds
the line's weighted charge at the batch weight, and an unreachable service admits (fail open) without a debit."""

from __future__ import annotations

import itertools
import time
from concurrent.futures import ThreadPoolExecutor

from inference_platform.batch import budget
from inference_platform.batch.budget import BudgetClient, batch_charge, period
from inference_platform.batch.config import Budgets
from inference_platform.catalog.token_limits import TokenWeights
from inference_platform.components.edge.token_limits import batch_budgets, debits
from inference_platform.inferctl.serving.rate_limit_service import rate_limit_service, read_ledger
from inference_platform.processes import free_port
from inference_platform.settings import load_settings

TAGS = {"owner": "team", "costCenter": "cc-1"}


def _policy(budget: int, weights: dict[str, float]):
    edge = {
        "auth": {"clients": {"alpha": {"tier": "std"}, "beta": {"tier": "std"}}},
        "rateLimits": {"tiers": {"std": {}}},
        "tokenLimits": {"tokensPerMinute": 100, "clients": {"alpha": {"tokensPerMonth": budget}}, "weights": weights},
    }
    return load_settings({"tags": TAGS, "edge": edge}, project="p", stack="s", region="us-west-2").edge.policy()


def _budgets(document) -> Budgets:
    return Budgets(
        address=document["address"],
        domain=document["domain"],
        weights=document["weights"],
        clients={c: tuple((k, v) for k, v in e) for c, e in document["clients"].items()},
    )


def test_the_lanes_charge_is_the_catalogs():
    for w in ({"input": 1000, "cached": 1000, "output": 1000, "batch": 1000},
              {"input": 2000, "cached": 100, "output": 500, "batch": 250},
              {"input": 1, "cached": 0, "output": 99_999, "batch": 333}):  # fmt: skip
        weights = TokenWeights(**w)
        for prompt, completion, cached in itertools.product((0, 1, 7, 1000), (0, 3, 999), (0, 2, 5000)):
            assert batch_charge(w, prompt, completion, cached) == weights.batch_charge(prompt, completion, cached)


def test_checks_and_debits_reach_the_edges_budget_counter(tmp_path):
    policy = _policy(100, {"output": 2, "batch": 0.5})
    port = free_port()
    from inference_platform.components.edge.token_limits import service_config

    document = batch_budgets(policy, address=f"127.0.0.1:{port}")
    assert document is not None and set(document["clients"]) == {"alpha"}  # beta has no budget
    with rate_limit_service(service_config(policy), work_dir=tmp_path, port=port) as ledger:
        client = BudgetClient(_budgets(document))
        try:
            assert client.check("alpha") and client.check("beta")
            # (10 + 2 x 20) x 0.5 = 25 a line: four lines reach the budget exactly, still admitted (not above it).
            for _ in range(4):
                assert client.debit("alpha", {"prompt": 10, "completion": 20, "cached": 0}) == 25
            assert client.check("alpha")
            assert client.debit("alpha", {"prompt": 1, "completion": 0, "cached": 0}) == 1
            assert not client.check("alpha") and client.check("beta")
            assert client.debit("beta", {"prompt": 10, "completion": 20, "cached": 0}) is None
        finally:
            client.close()
        calls = read_ledger(ledger)
    assert debits(calls, policy) == {"alpha": {"Month": 101}}
    # The edge's own descriptor: this month's period in the entry the edge's request_headers action fills.
    (periods,) = {tuple(v for k, v in d["entries"] if k.endswith("-match-1")) for c in calls for d in c["descriptors"]}
    assert periods == (period(),)


def test_an_unreachable_service_admits_and_debits_nothing(monkeypatch):
    monkeypatch.setattr(budget, "DEBIT_WAIT_SECONDS", 1.0)  # the debit waits for the service this long, then gives up
    policy = _policy(100, {})
    document = batch_budgets(policy, address=f"127.0.0.1:{free_port()}")
    client = BudgetClient(_budgets(document))
    try:
        assert client.check("alpha")
        assert client.debit("alpha", {"prompt": 10, "completion": 20, "cached": 0}) is None
    finally:
        client.close()


def test_a_debit_waits_for_a_restarting_service_and_lands_once(tmp_path):
    """The service is down when the line is debited and up a moment later (its pod replaced): the debit waits for
    it (gRPC wait for ready) and is charged exactly once; a check in the same outage is admitted at once."""
    from inference_platform.components.edge.token_limits import service_config

    policy = _policy(1000, {})
    port = free_port()
    document = batch_budgets(policy, address=f"127.0.0.1:{port}")
    client = BudgetClient(_budgets(document))
    try:
        with ThreadPoolExecutor(1) as pool:
            debit = pool.submit(client.debit, "alpha", {"prompt": 10, "completion": 20, "cached": 0})
            assert client.check("alpha")  # fails open while the debit waits
            time.sleep(1.0)
            assert not debit.done()
            with rate_limit_service(service_config(policy), work_dir=tmp_path, port=port) as ledger:
                assert debit.result(timeout=budget.DEBIT_WAIT_SECONDS) == 30
                calls = read_ledger(ledger)
    finally:
        client.close()
    assert debits(calls, policy) == {"alpha": {"Month": 30}}


def test_the_grpc_facts_the_debit_rests_on_hold_at_the_locked_version():
    """The pinned grpcio's unary call takes ``wait_for_ready`` (tests/data/upstream/batch_budget.json, with gRPC's
    own statement of what it means); the live test above shows the waiting debit land once."""
    import inspect
    import json
    from pathlib import Path

    import grpc
    from grpc._channel import _UnaryUnaryMultiCallable

    root = Path(__file__).parents[2]
    facts = json.loads((root / "tests" / "data" / "upstream" / "batch_budget.json").read_text())
    (pinned,) = [k for k in facts if k.startswith("grpcio==")]
    version = pinned.removeprefix("grpcio==").split()[0]
    assert f"grpcio=={version} " in (root / "locks" / "image-batch.txt").read_text()
    assert grpc.__version__ == version
    signature = facts[pinned]["grpc/_channel.py"]["_UnaryUnaryMultiCallable.__call__"]
    assert "wait_for_ready" in inspect.signature(_UnaryUnaryMultiCallable.__call__).parameters
    assert "wait_for_ready=None" in signature
