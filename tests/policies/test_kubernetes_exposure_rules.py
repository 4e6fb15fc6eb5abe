"""Kubernetes exposure rules (issue 9 §6): root containers, unpinned or foreign images, the default
namespace, world-open LoadBalancer Services, hostPath PersistentVolumes, privileged patches and
cluster-admin bindings for service accounts. A passing and a failing fixture each."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
import pytest
from pulumi_policy import PolicyResource, StackValidationArgs
from pulumi_policy.proxy import unknown_checking_proxy

from inference_platform.policies.rules import kubernetes_exposure
from inference_platform.policies.rules.kubernetes_exposure import image_parts, registry_allowed
from inference_platform.policies.rules.workloads import ECR_REPOSITORY

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


def _repository():
    return aws.ecr.Repository("repo", name="team/app", image_tag_mutability="IMMUTABLE")


def test_unpinned_and_foreign_images_fail(violations):
    def program():
        repository = _repository()
        own = repository.repository_url.apply(lambda url: url.partition("/")[0])
        opts = _provider()
        deployment("latest", image=own.apply(lambda host: f"{host}/app:latest"), opts=opts)
        deployment("untagged", image=own.apply(lambda host: f"{host}/app"), opts=opts)
        deployment("foreign", image="ghcr.io/someone/tool:1.0", opts=opts)
        deployment("digest", image=own.apply(lambda host: f"{host}/app@sha256:" + "a" * 64), opts=opts)
        deployment("tagged", image=repository.repository_url.apply(lambda url: f"{url}:1.2.3"), opts=opts)

    found = violations(program, "workloads-image-provenance")
    assert names(found) == ["foreign", "latest", "untagged"]
    # The stack's own list replaces the named images: ghcr.io/someone allowed; its own ECR stays allowed.
    config = {"allowedRegistries": ["ghcr.io/someone"]}
    assert names(violations(program, "workloads-image-provenance", config)) == ["latest", "untagged"]


def test_only_this_stacks_account_and_region_ecr_and_named_public_images_pass(violations):
    def program():
        own = _repository().repository_url.apply(lambda url: url.partition("/")[0])
        account = own.apply(lambda h: h.partition(".")[0])
        opts = _provider()
        deployment("own-account-region", image=own.apply(lambda h: f"{h}/mirror/redis:7.4"), opts=opts)
        deployment("other-account", image=own.apply(lambda h: "210987654321" + h[len(h.partition(".")[0]):] +
                                                   "/x:1"), opts=opts)  # fmt: skip
        deployment("other-region", image=account.apply(lambda a: f"{a}.dkr.ecr.ap-south-1.amazonaws.com/x:1"),
                   opts=opts)  # fmt: skip
        deployment("public-ecr-other-path", image="public.ecr.aws/someone/miner:1.0", opts=opts)
        deployment("named-pause", image="registry.k8s.io/pause:3.10", opts=opts)
        deployment("named-redis", image="redis:7.4.5-alpine", opts=opts)
        deployment("other-k8s-image", image="registry.k8s.io/kube-proxy:v1.33.0", opts=opts)
        deployment("neuron-monitor", image="public.ecr.aws/neuron/neuron-monitor:1.10.0", opts=opts)

    found = violations(program, "workloads-image-provenance")
    assert names(found) == ["other-account", "other-k8s-image", "other-region", "public-ecr-other-path"]
    assert all("neither from this stack's ECR nor a named public image" in v.message for v in found)


def test_without_an_ecr_repository_no_aws_account_is_trusted(violations):
    def program():
        deployment("ecr", opts=_provider())

    (found,) = violations(program, "workloads-image-provenance")
    assert "123456789012.dkr.ecr.us-east-1.amazonaws.com/team/app:1.2.3" in found.message


def test_unknown_values_skip_one_image_not_the_stack():
    unknown = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # the engine's unknown-string sentinel during a preview

    def pod(name, image):
        props = {"metadata": {"namespace": "apps", "name": name},
                 "spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}}  # fmt: skip
        return PolicyResource("kubernetes:apps/v1:Deployment", unknown_checking_proxy(props), f"urn::{name}", name,
                              None, None, None, [], {})  # fmt: skip

    repo = PolicyResource(ECR_REPOSITORY, unknown_checking_proxy({"repositoryUrl": unknown}), "urn::repo", "repo",
                          None, None, None, [], {})  # fmt: skip
    found = []
    policy = next(p for p in kubernetes_exposure.POLICIES if p.name == "workloads-image-provenance")
    args = StackValidationArgs([repo, pod("pending", unknown), pod("foreign", "ghcr.io/x/y:1")], {})
    policy.validate(args, lambda message, urn=None: found.append(urn))
    assert found == ["urn::foreign"]


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
