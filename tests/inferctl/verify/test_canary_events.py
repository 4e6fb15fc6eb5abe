"""One Kubernetes Event per canary decision, on the verification Job (inferctl/verify/canary_events.py): a valid
core/v1 Event (kubernetes-validate, strict, Kubernetes 1.33), its reason the action, a rollback a Warning, the
message the weight and why (bounded); ``inferctl verify --event-job`` posts it through the API and a failed post
is reported, not raised."""

from __future__ import annotations

import argparse
import datetime

import pytest

from inference_platform.inferctl.verify import canary_events
from inference_platform.inferctl.verify.canary_gate import Decision

NOW = datetime.datetime(2026, 12, 5, 19, 0, tzinfo=datetime.UTC)


def manifest(decision: Decision) -> dict:
    return canary_events.event_manifest(decision, model="Llama-3.1-8B", version="v2", namespace="inference",
                                        job="verification-0123456789", instance="verification-0123456789-abcde",
                                        now=NOW)  # fmt: skip


@pytest.mark.parametrize(
    ("action", "reason", "kind"),
    [
        ("promote", "CanaryPromoted", "Normal"),
        ("hold", "CanaryHeld", "Normal"),
        ("rollback", "CanaryRolledBack", "Warning"),
        ("complete", "CanaryCompleted", "Normal"),
    ],
)
def test_each_decision_is_an_event_on_the_job(action, reason, kind):
    import kubernetes_validate

    event = manifest(Decision(action, 25, "live: canary TTFT p95 480 ms above 1.25 x the current version's 38 ms"))
    kubernetes_validate.validate(event, "1.33", strict=True)
    assert (event["reason"], event["type"]) == (reason, kind)
    assert event["involvedObject"] == {"apiVersion": "batch/v1", "kind": "Job", "name": "verification-0123456789",
                                       "namespace": "inference"}  # fmt: skip
    assert event["message"].startswith(f"Llama-3.1-8B canary v2: {action} to 25 %: live: canary TTFT p95 480 ms")
    assert event["lastTimestamp"] == "2026-12-05T19:00:00Z"


def test_a_long_reason_is_cut_visibly():
    event = manifest(Decision("rollback", 0, "x" * 5000))
    assert len(event["message"]) == canary_events.MAX_MESSAGE and event["message"].endswith("...")


def test_the_stand_in_api_has_the_real_clients_signature():
    """FakeApi below mirrors kubernetes' CoreV1Api.create_namespaced_event(namespace, body, **kwargs): POST
    /api/v1/namespaces/{namespace}/events, the core group the Role's rule grants."""
    import inspect

    from kubernetes import client

    real = list(inspect.signature(client.CoreV1Api.create_namespaced_event).parameters)
    assert real[:3] == ["self", "namespace", "body"]
    assert list(inspect.signature(FakeApi.create_namespaced_event).parameters) == real[:3]
    source = inspect.getsource(client.CoreV1Api.create_namespaced_event_with_http_info)
    assert "'/api/v1/namespaces/{namespace}/events', 'POST'" in source


class FakeApi:
    def __init__(self, fail: bool = False) -> None:
        self.created: list[tuple[str, dict]] = []
        self.fail = fail

    def create_namespaced_event(self, namespace: str, body: dict) -> None:
        if self.fail:
            raise RuntimeError("events is forbidden")
        self.created.append((namespace, body))


@pytest.mark.parametrize("fail", [False, True])
def test_verify_posts_the_event_or_says_why_not(monkeypatch, fail):
    from inference_platform.inferctl.verify import command, logs
    from inference_platform.settings import load_settings

    api = FakeApi(fail)
    monkeypatch.setattr(logs, "kubernetes_api", lambda: api)
    settings = load_settings(
        {"tags": {"owner": "t", "costCenter": "c"},
         "inference": {"image": {"tag": "1"}, "model": {"engine": "e/", "tokenizer": "t/"}},
         "models": {"canary": {"version": "v2", "inference": {"image": {"tag": "2"}}}}},
        project="p", stack="dev", region="us-west-2",
    )  # fmt: skip
    args = argparse.Namespace(namespace="inference", event_job="verification-0123456789")
    said = command._canary_event(args, settings, Decision("rollback", 0, "too slow"))
    if fail:
        assert said.startswith("not posted: events is forbidden") and api.created == []
    else:
        assert said == "posted CanaryRolledBack on job/verification-0123456789"
        ((namespace, body),) = api.created
        assert namespace == "inference" and body["message"] == "Llama-3.1-8B canary v2: rollback to 0 %: too slow"
