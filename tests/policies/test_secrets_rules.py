"""secretsmanager-cmk and no-secret-literals: a passing and a failing fixture each."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
import pytest

from inference_platform.components.secrets.secrets_manager import Secrets, SecretsArgs
from inference_platform.policies.rules.secrets import secret_literals

KEY = "arn:aws:kms:us-west-2:123456789012:key/storage"
KUBECONFIG = "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n"


def _names(found) -> list[str]:
    return sorted(v.urn.split("::")[-1] for v in found)


def test_secrets_under_a_customer_managed_key_pass_and_others_fail(violations):
    def program():
        Secrets("platform", SecretsArgs(name_prefix="demo", kms_key_arn=KEY, api_key_count=1))
        aws.secretsmanager.Secret("default-key")
        aws.secretsmanager.Secret("aws-managed", kms_key_id="alias/aws/secretsmanager")

    found = violations(program, "secretsmanager-cmk")
    assert _names(found) == ["aws-managed", "default-key"]
    assert all("customer-managed key" in v.message and v.mandatory for v in found)


def _deployment(env):
    def program():
        provider = k8s.Provider("k8s", kubeconfig=KUBECONFIG)
        k8s.apps.v1.Deployment(
            "server",
            metadata={"name": "server", "namespace": "inference"},
            spec={
                "selector": {"matchLabels": {"app": "server"}},
                "template": {
                    "metadata": {"labels": {"app": "server"}},
                    "spec": {"containers": [{"name": "triton", "image": "triton:2.51", "env": env}]},
                },
            },
            opts=pulumi.ResourceOptions(provider=provider),
        )

    return program


def test_a_literal_api_key_in_a_container_env_fails(violations):
    (found,) = violations(_deployment([{"name": "API_KEY", "value": "sk-live-123"}]), "no-secret-literals")
    assert "spec.template.spec.containers[0].env.API_KEY" in found.message and found.urn.endswith("::server")


@pytest.mark.parametrize(
    "env",
    [
        [{"name": "API_KEY", "valueFrom": {"secretKeyRef": {"name": "keys", "key": "api-key"}}}],
        [{"name": "HF_TOKEN_FILE", "value": "/mnt/secrets/model-sync/hf-token"}],
        [{"name": "NGC_API_KEY_SECRET_ARN", "value": "arn:aws:secretsmanager:us-east-1:1:secret:ngc"}],
        [{"name": "MODEL_NAME", "value": "llama"}, {"name": "TOKENIZER_PARALLELISM", "value": ""}],
    ],
)
def test_references_paths_and_ordinary_names_pass(violations, env):
    assert violations(_deployment(env), "no-secret-literals") == []


def test_a_secret_marked_value_in_an_env_var_still_fails(violations):
    # The engine shows policies secrets unwrapped, and the pod spec would hold the value in clear anyway.
    env = [{"name": "HF_TOKEN", "value": pulumi.Output.secret("hf_abc")}]
    assert len(violations(_deployment(env), "no-secret-literals")) == 1


def test_tags_configmaps_lambda_env_and_helm_values_are_judged(violations):
    def program():
        provider = pulumi.ResourceOptions(provider=k8s.Provider("k8s", kubeconfig=KUBECONFIG))
        aws.s3.Bucket("tagged", tags={"db-password": "hunter2", "owner": "ml"})
        k8s.core.v1.ConfigMap(
            "config", metadata={"name": "c"}, data={"auth_token": "t0k3n", "mode": "fast"}, opts=provider
        )
        aws.lambda_.Function(
            "fn",
            role="arn:aws:iam::1:role/r",
            runtime="python3.12",
            handler="h.h",
            code=None,
            environment={"variables": {"SECRET_KEY": "s", "LOG_LEVEL": "info"}},
        )
        k8s.helm.v3.Release("chart", chart="c", values={"server": {"env": {"ADMIN_PASSWORD": "p"}}}, opts=provider)
        aws.s3.Bucket("clean", tags={"owner": "ml"})

    found = violations(program, "no-secret-literals")
    assert _names(found) == ["chart", "config", "fn", "tagged"]
    messages = " ".join(v.message for v in found)
    for path in (
        "tags.db-password",
        "data.auth_token",
        "environment.variables.SECRET_KEY",
        "server.env.ADMIN_PASSWORD",
    ):
        assert path in messages


def test_allowed_names_are_configurable(violations):
    program = _deployment([{"name": "PUBLIC_KEY", "value": "ssh-ed25519 AAAA"}])
    assert len(violations(program, "no-secret-literals")) == 1
    assert violations(program, "no-secret-literals", {"allowedNames": ["PUBLIC_KEY"]}) == []


def test_secret_literals_reads_plain_mappings_too():
    props = {"tags": {"api-key": "x"}, "env": [{"name": "TOKEN", "value": "y"}], "other": {"key": "nvidia.com/gpu"}}
    assert list(secret_literals(props)) == ["tags.api-key", "env.TOKEN"]
