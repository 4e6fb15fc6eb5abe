"""Kubernetes exposure rules (issue 9 §6): root containers, unpinned or foreign images, the default
namespace, world-open LoadBalancer Services, hostPath PersistentVolumes, privileged patches and
cluster-admin bindings for service accounts. A passing and a failing fixture each."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s
import pytest

from policies.rules.kubernetes_exposure import image_parts, registry_allowed

ECR = "123456789012.dkr.ecr.us-east-1.amazonaws.com/team/app:1.2.3"
SAFE = {"runAsNonRoot": True, "runAsUser": 1000}


def _provider():
    return pulumi.ResourceOptions(provider=k8s.Provider("k8s", kubeconfig="{}"))


def deployment(name, *, namespace="apps", image=ECR, pod_context=None, container_context=None, opts=None):
    k8s.apps.v1.Deployment(name, metadata={"name": name, **({"namespace": namespace} if namespace else {})}, spec={
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}}, "spec": {
            "securityContext": pod_context if pod_context is not None else SAFE,
            "containers": [{"name": "c", "image": image, "securityContext": container_context or {}}]}}},
        opts=opts or _provider())  # fmt: skip


def names(found):
    return sorted({v.urn.rsplit("::", 1)[1] for v in found})


def test_root_containers_fail_and_non_root_pass(violations):
    def program():
        opts = _provider()
        deployment("uid-zero", pod_context={"runAsUser": 0}, opts=opts)
        deployment("container-root", container_context={"runAsUser": 0}, opts=opts)
        deployment("image-user", pod_context={}, opts=opts)
        deployment("non-root-false", pod_context={"runAsNonRoot": False}, opts=opts)
        deployment("ok", opts=opts)
        deployment("uid-only", pod_context={"runAsUser": 1000}, opts=opts)

    found = violations(program, "workloads-non-root")
    assert names(found) == ["container-root", "image-user", "non-root-false", "uid-zero"]


@pytest.mark.parametrize(
    ("image", "parts"),
    [("redis", ("docker.io/library/redis", None, None)), ("nginx:latest", ("docker.io/library/nginx", "latest", None)),
     ("public.ecr.aws/n/m:1@sha256:ab", ("public.ecr.aws/n/m", "1", "sha256:ab")),
     ("localhost:5000/x:2", ("localhost:5000/x", "2", None))],
)  # fmt: skip
def test_image_parts(image, parts):
    assert image_parts(image) == parts


def test_registry_patterns_match_hosts_and_whole_path_segments():
    allowed = ["*.dkr.ecr.*.amazonaws.com", "docker.io/library"]
    assert registry_allowed("1.dkr.ecr.us-east-1.amazonaws.com/a/b", allowed)
    assert registry_allowed("docker.io/library/redis", allowed)
    assert not registry_allowed("evil.example/x.dkr.ecr.y.amazonaws.com", allowed)
    assert not registry_allowed("docker.io/libraryx/redis", allowed)
    assert not registry_allowed("docker.io/bitnami/redis", allowed)


def test_unpinned_and_foreign_images_fail(violations):
    def program():
        opts = _provider()
        deployment("latest", image="123456789012.dkr.ecr.us-east-1.amazonaws.com/app:latest", opts=opts)
        deployment("untagged", image="123456789012.dkr.ecr.us-east-1.amazonaws.com/app", opts=opts)
        deployment("foreign", image="ghcr.io/someone/tool:1.0", opts=opts)
        deployment("digest", image="123456789012.dkr.ecr.us-east-1.amazonaws.com/app@sha256:" + "a" * 64, opts=opts)
        deployment("tagged", opts=opts)

    found = violations(program, "workloads-image-provenance")
    assert names(found) == ["foreign", "latest", "untagged"]
    # The stack's own list replaces the default: ghcr.io/someone allowed, ECR no longer.
    config = {"allowedRegistries": ["ghcr.io/someone"]}
    assert "foreign" not in names(violations(program, "workloads-image-provenance", config))


def test_workloads_in_default_fail(violations):
    def program():
        opts = _provider()
        deployment("implicit", namespace=None, opts=opts)
        deployment("explicit", namespace="default", opts=opts)
        deployment("own", namespace="apps", opts=opts)

    assert names(violations(program, "workloads-not-in-default")) == ["explicit", "implicit"]


def test_load_balancer_services_need_source_ranges(violations):
    def service(name, opts, *, ranges=None, annotations=None, type_="LoadBalancer"):
        spec = {"type": type_, "ports": [{"port": 443}], "selector": {"app": "x"}}
        if ranges is not None:
            spec["loadBalancerSourceRanges"] = ranges
        k8s.core.v1.Service(
            name, metadata={"namespace": "apps", "annotations": annotations or {}}, spec=spec, opts=opts
        )

    def program():
        opts = _provider()
        service("open", opts)
        service("world", opts, ranges=["0.0.0.0/0"])
        service("halves", opts, ranges=["0.0.0.0/1", "128.0.0.0/1"])
        service("three-quarters", opts, ranges=["0.0.0.0/1", "128.0.0.0/2"])
        service("named", opts, ranges=["198.51.100.0/24"])
        service("one-slash-8", opts, ranges=["17.0.0.0/8", "10.0.0.0/8"])
        service(
            "annotated", opts, annotations={"service.beta.kubernetes.io/load-balancer-source-ranges": "198.51.100.0/24"}
        )
        service("internal", opts, annotations={"service.beta.kubernetes.io/aws-load-balancer-scheme": "internal"})
        service("cluster-ip", opts, type_="ClusterIP")

    assert names(violations(program, "services-load-balancer-source-ranges")) == [
        "halves",
        "open",
        "three-quarters",
        "world",
    ]


def test_host_path_persistent_volumes_fail(violations):
    def program():
        opts = _provider()
        k8s.core.v1.PersistentVolume("host", spec={"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                                                   "hostPath": {"path": "/var/lib"}}, opts=opts)  # fmt: skip
        k8s.core.v1.PersistentVolume("csi", spec={"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                                                  "csi": {"driver": "fsx.csi.aws.com", "volumeHandle": "fs-1"}}, opts=opts)  # fmt: skip

    assert names(violations(program, "persistent-volumes-no-host-path")) == ["host"]


def test_patches_that_grant_privilege_fail(violations):
    def program():
        opts = _provider()
        k8s.apps.v1.DaemonSetPatch("aws-node-privileged", metadata={"name": "aws-node", "namespace": "kube-system"},
                                   spec={"template": {"spec": {"containers": [
                                       {"name": "aws-node", "securityContext": {"privileged": True}}]}}}, opts=opts)  # fmt: skip
        k8s.apps.v1.DeploymentPatch("coredns-host", metadata={"name": "coredns", "namespace": "kube-system"},
                                    spec={"template": {"spec": {"hostNetwork": True}}}, opts=opts)  # fmt: skip
        k8s.apps.v1.DeploymentPatch("coredns-replicas", metadata={"name": "coredns", "namespace": "kube-system"},
                                    spec={"replicas": 3}, opts=opts)  # fmt: skip
        k8s.apps.v1.DaemonSetPatch("annotate", metadata={"name": "kube-proxy", "namespace": "kube-system",
                                                         "annotations": {"team": "x"}}, opts=opts)  # fmt: skip

    found = violations(program, "workload-patches-not-privileged")
    assert names(found) == ["aws-node-privileged", "coredns-host"]
    assert any("DaemonSet/kube-system/aws-node" in v.message and "privileged" in v.message for v in found)


def test_cluster_admin_for_service_accounts_fails(violations):
    def binding(name, subjects, role, opts, kind="ClusterRoleBinding"):
        cls = getattr(k8s.rbac.v1, kind)
        cls(name, metadata={"name": name, **({"namespace": "apps"} if kind == "RoleBinding" else {})},
            role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            subjects=subjects, opts=opts)  # fmt: skip

    def program():
        opts = _provider()
        sa = {"kind": "ServiceAccount", "name": "ci", "namespace": "apps"}
        binding("sa-admin", [sa], "cluster-admin", opts)
        binding("ns-sa-admin", [sa], "cluster-admin", opts, kind="RoleBinding")
        binding("all-sas", [{"kind": "Group", "name": "system:serviceaccounts", "apiGroup": "rbac.authorization.k8s.io"}],
                "cluster-admin", opts)  # fmt: skip
        binding("sa-view", [sa], "view", opts)
        binding("humans", [{"kind": "Group", "name": "platform-admins", "apiGroup": "rbac.authorization.k8s.io"}],
                "cluster-admin", opts)  # fmt: skip

    assert names(violations(program, "rbac-no-cluster-admin-for-service-accounts")) == [
        "all-sas",
        "ns-sa-admin",
        "sa-admin",
    ]
