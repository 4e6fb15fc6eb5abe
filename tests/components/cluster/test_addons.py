"""Managed add-ons at exact versions, with Pod Identity roles for those that call AWS, and the gp3
default StorageClass encrypted with the stack's storage key."""

from __future__ import annotations

import pulumi_kubernetes as k8s
import pytest

from inference_platform.components.cluster.addons import AddonIdentity, AddonSpec, ClusterAddons, ClusterAddonsArgs
from inference_platform.components.common.errors import ComponentArgsError
from tests.conftest import by_type, one

KEY = "arn:aws:kms:us-west-2:123456789012:key/storage"


def test_versions_are_pinned_and_identities_bound_before_the_addon(run_components):
    def program():
        ClusterAddons(
            "addons",
            ClusterAddonsArgs(
                cluster_name="demo",
                addons=[
                    AddonSpec(name="eks-pod-identity-agent", version="v1.3.10-eksbuild.3"),
                    AddonSpec(name="kube-proxy", version="v1.36.0-eksbuild.21"),
                    AddonSpec(
                        name="vpc-cni",
                        version="v1.22.4-eksbuild.3",
                        identity=AddonIdentity(service_account="aws-node", managed_policies=["AmazonEKS_CNI_Policy"]),
                    ),
                ],
            ),
        )

    resources = run_components(program).resources
    addons = {a.inputs["addonName"]: a for a in by_type(resources, "aws:eks/addon:Addon")}
    assert {n: a.inputs["addonVersion"] for n, a in addons.items()} == {
        "eks-pod-identity-agent": "v1.3.10-eksbuild.3",
        "kube-proxy": "v1.36.0-eksbuild.21",
        "vpc-cni": "v1.22.4-eksbuild.3",
    }
    association = one(resources, "addons-vpc-cni-association")
    assert (association.inputs["namespace"], association.inputs["serviceAccount"]) == ("kube-system", "aws-node")
    # Depending on the identity component means depending on its children: the association included.
    assert association.urn in addons["vpc-cni"].dependencies
    assert not [d for d in addons["kube-proxy"].dependencies if "PodIdentity" in d]
    # An add-on that uses Pod Identity waits for the agent that hands out its credentials.
    assert addons["eks-pod-identity-agent"].urn in addons["vpc-cni"].dependencies
    assert not by_type(resources, "kubernetes:storage.k8s.io/v1:StorageClass")


def test_gp3_storage_class_is_default_encrypted_with_the_key_and_waits_for_the_driver(run_components):
    def program():
        provider = k8s.Provider("k8s", kubeconfig="{}")
        ClusterAddons(
            "addons",
            ClusterAddonsArgs(
                cluster_name="demo",
                addons=[AddonSpec(name="aws-ebs-csi-driver", version="v1.63.1-eksbuild.1")],
                storage_class_key_arn=KEY,
                provider=provider,
            ),
        )

    resources = run_components(program).resources
    (sc,) = by_type(resources, "kubernetes:storage.k8s.io/v1:StorageClass")
    assert sc.inputs["metadata"]["annotations"] == {"storageclass.kubernetes.io/is-default-class": "true"}
    assert sc.inputs["parameters"] == {
        "type": "gp3",
        "encrypted": "true",
        "kmsKeyId": KEY,
        "csi.storage.k8s.io/fstype": "ext4",
    }
    assert sc.inputs["volumeBindingMode"] == "WaitForFirstConsumer" and sc.provider.endswith("::k8s")
    assert one(resources, "addons-aws-ebs-csi-driver").urn in sc.dependencies


def test_bad_addons_are_reported_together():
    with pytest.raises(ComponentArgsError) as err:
        ClusterAddons(
            "a",
            ClusterAddonsArgs(
                cluster_name="c",
                addons=[AddonSpec(name="coredns", version="latest"), AddonSpec(name="coredns", version="v1.0.0-eksbuild.1"),
                        AddonSpec(name="istio", version="v1.0.0-eksbuild.1")],
                storage_class_key_arn=KEY,
            ),
        )  # fmt: skip
    text = str(err.value)
    assert all(w in text for w in ("repeats", "'latest'", "'istio'", "provider: required", "aws-ebs-csi-driver"))
