"""Secret delivery: the workload role may read exactly its secrets; a SecretProviderClass (Pod
Identity) maps each secret to a file; no value in any manifest."""

from __future__ import annotations

import json

import pulumi_kubernetes as k8s
import pytest
import yaml

from inference_platform.components.common.errors import ComponentArgsError
from inference_platform.components.secrets.delivery import SecretDelivery, SecretDeliveryArgs, provider_objects
from inference_platform.offline_plan.manifests import manifest
from inference_platform.policies.rules.storage import broad_storage_grants
from tests.conftest import one

KUBECONFIG = "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n"
KEY = "arn:aws:kms:us-east-1:123456789012:key/storage"
ARNS = {
    "api-key": "arn:aws:secretsmanager:us-east-1:123456789012:secret:demo/inference/api-key-1-abcdef",
    "api-key-2": "arn:aws:secretsmanager:us-east-1:123456789012:secret:demo/inference/api-key-2-ghijkl",
}


def delivery_args(**overrides) -> SecretDeliveryArgs:
    values = dict(
        k8s_provider=None,
        namespace="inference",
        service_account="triton",
        role_name="reader-role",
        files=ARNS,
        kms_key_arn=KEY,
        region="us-east-1",
    )
    values.update(overrides)
    return SecretDeliveryArgs(**values)


@pytest.fixture
def delivery(run_components):
    def program():
        SecretDelivery("inf", delivery_args(k8s_provider=k8s.Provider("k8s", kubeconfig=KUBECONFIG)))

    return run_components(program).resources


def test_the_role_reads_exactly_these_secrets_and_their_key_through_secrets_manager(delivery):
    grant = one(delivery, "inf-read").inputs
    assert grant["role"] == "reader-role"
    statements = {s["Sid"]: s for s in json.loads(grant["policy"])["Statement"]}
    assert statements["ReadSecrets"]["Resource"] == sorted(ARNS.values())
    assert statements["ReadSecrets"]["Action"] == ["secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"]
    kms = statements["SecretKeyThroughSecretsManager"]
    assert kms["Resource"] == KEY and kms["Action"] == ["kms:Decrypt"]
    assert kms["Condition"] == {"StringEquals": {"kms:ViaService": "secretsmanager.us-east-1.amazonaws.com"}}
    assert list(broad_storage_grants(json.loads(grant["policy"]))) == []


def test_the_class_mounts_each_secret_as_its_file_through_pod_identity(delivery):
    spc = manifest(one(delivery, "inf-class"))
    assert spc["apiVersion"] == "secrets-store.csi.x-k8s.io/v1" and spc["kind"] == "SecretProviderClass"
    assert spc["metadata"]["name"] == "triton-secrets" and spc["metadata"]["namespace"] == "inference"
    params = spc["spec"]["parameters"]
    assert spc["spec"]["provider"] == "aws" and params["usePodIdentity"] == "true" and params["region"] == "us-east-1"
    objects = yaml.safe_load(params["objects"])
    assert objects == [
        {"objectName": ARNS["api-key"], "objectType": "secretsmanager", "objectAlias": "api-key"},
        {"objectName": ARNS["api-key-2"], "objectType": "secretsmanager", "objectAlias": "api-key-2"},
    ]
    assert one(delivery, "inf-class").provider.endswith("::k8s")


def test_provider_objects_is_yaml_the_provider_parses_in_file_order():
    text = provider_objects({"b": "arn:b", "a": "arn:a"})
    assert [o["objectAlias"] for o in yaml.safe_load(text)] == ["a", "b"]


def test_bad_arguments_are_reported_together():
    with pytest.raises(ComponentArgsError) as err:
        SecretDelivery("x", delivery_args(namespace="Inference", service_account="", files={"../key": "arn:x"}))
    text = str(err.value)
    assert "namespace='Inference'" in text and "service_account=''" in text and "'../key'" in text
    with pytest.raises(ComponentArgsError, match="files is empty"):
        SecretDelivery("x", delivery_args(files={}))
