"""no-secret-values (issue 9 §6): credential-looking literals under any name, judged by value."""

from __future__ import annotations

import base64

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
import pytest

from inference_platform.policies.rules.secret_values import detect

TOKEN = "sk-live-8fj2K9s0dLq7ZxP3vB1nM4cT6yW8eR0a"
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"


@pytest.mark.parametrize(
    ("value", "kinds"),
    [(TOKEN, ["Base64 High Entropy String"]), (AWS_KEY, ["AWS Access Key"]),
     ("postgres://app:s3cr3tPassw0rd@db:5432/app", ["Basic Auth Credentials"]),
     ('{"upstream": {"apiKey": "' + TOKEN + '"}}', ["Base64 High Entropy String"]),
     ("mode: fast\ntoken: " + TOKEN + "\n", ["Base64 High Entropy String"])],
)  # fmt: skip
def test_secrets_are_found_by_value(value, kinds):
    assert detect(value) == kinds


@pytest.mark.parametrize(
    "value",
    ["us-east-1", "1000", "true", "/mnt/secrets/inference/api-key", "arn:aws:iam::123456789012:role/triton-inference",
     "sha256:ad6173e2e81ca98fe7d95ef6ec9750291158741384f9934f6114e5336620edf4",
     "ad6173e2e81ca98fe7d95ef6ec9750291158741384f9934f6114e5336620edf4", "c0ffee254729296a45a3885639ac7e10f9d54979",
     "123456789012.dkr.ecr.us-east-1.amazonaws.com/inference@sha256:" + "a" * 64, "redis://ratelimit-redis:6379",
     '{"max_batch_size": 16, "engine": "llama-3.1-8b-instruct/fp8-tp1-sm89/2026-11-30/"}'],
)  # fmt: skip
def test_digests_arns_paths_and_settings_are_not_secrets(value):
    assert detect(value) == []


def _opts():
    return pulumi.ResourceOptions(provider=k8s.Provider("k8s", kubeconfig="{}"))


def _deployment(name, env, opts):
    k8s.apps.v1.Deployment(name, metadata={"namespace": "apps"}, spec={
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [
            {"name": "c", "image": "x:1", "env": env}]}}}, opts=opts)  # fmt: skip


def test_literal_secrets_under_innocent_names_fail(violations):
    def program():
        opts = _opts()
        _deployment("env", [{"name": "UPSTREAM", "value": TOKEN}], opts)
        k8s.core.v1.ConfigMap("config", metadata={"namespace": "apps"}, data={"settings.json": '{"k": "' + TOKEN + '"}'},
                              opts=opts)  # fmt: skip
        k8s.core.v1.Secret("string-data", metadata={"namespace": "apps"}, string_data={"id": AWS_KEY}, opts=opts)
        k8s.core.v1.Secret("data", metadata={"namespace": "apps"},
                           data={"conn": base64.b64encode(b"postgres://app:s3cr3tPassw0rd@db/app").decode()}, opts=opts)  # fmt: skip
        aws.lambda_.Function("fn", role="arn:aws:iam::1:role/l", runtime="python3.12", handler="h.main",
                             code=pulumi.AssetArchive({}), environment={"variables": {"CFG": TOKEN}})  # fmt: skip

    found = violations(program, "no-secret-values")
    assert sorted(v.urn.rsplit("::", 1)[1] for v in found) == ["config", "data", "env", "fn", "string-data"]
    assert any("AWS Access Key" in v.message for v in found)


def test_references_settings_and_exempted_secrets_pass(violations):
    def program():
        opts = _opts()
        _deployment("env", [{"name": "REGION", "value": "us-east-1"},
                            {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "token"}}}], opts)  # fmt: skip
        k8s.core.v1.ConfigMap("config", metadata={"namespace": "apps"},
                              data={"serving.json": '{"manifest": "sha256:' + "b" * 64 + '"}'}, opts=opts)  # fmt: skip
        k8s.core.v1.Secret("from-config", metadata={"namespace": "apps", "name": "legacy"}, string_data={"id": AWS_KEY},
                           opts=opts)  # fmt: skip

    assert violations(program, "no-secret-values", {"exemptions": ["Secret/apps/legacy"]}) == []
