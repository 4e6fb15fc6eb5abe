"""custom-resources-after-crds, releases-after-system-nodes, failing-webhooks-before-their-objects (issue 17 §3):
passing and failing fixtures, ordering through parents and component dependencies (the closure), and the
exit status of ``inferctl plan`` on a program that creates a custom resource ahead of its CRD."""

from __future__ import annotations

import json
import textwrap

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
import pytest

from inference_platform.inferctl.cli import main

CRDS = "custom-resources-after-crds"
NODES = "releases-after-system-nodes"
WEBHOOKS = "failing-webhooks-before-their-objects"


def _names(found) -> list[str]:
    return sorted(v.urn.split("::")[-1] for v in found)


def _scaled_object(name: str = "scaled", opts: pulumi.ResourceOptions | None = None):
    return k8s.apiextensions.CustomResource(
        name,
        api_version="keda.sh/v1alpha1",
        kind="ScaledObject",
        metadata={"name": name, "namespace": "inference"},
        spec={"scaleTargetRef": {"name": "triton"}},
        opts=opts,
    )


def _keda(values: dict | None = None, opts: pulumi.ResourceOptions | None = None):
    return k8s.helm.v3.Release("keda", name="keda", chart="keda", version="2.20.2", values=values or {}, opts=opts)


class _Area(pulumi.ComponentResource):
    """A component with children: its depends_on is what its children wait for too."""

    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None, child=None) -> None:
        super().__init__("test:ordering:Area", name, None, opts)
        if child is not None:
            child(pulumi.ResourceOptions(parent=self))
        self.register_outputs({})


def test_a_custom_resource_ahead_of_its_crd_fails_naming_it(violations):
    def program():
        _keda()
        _scaled_object("ahead")

    (found,) = violations(program, CRDS)
    assert found.mandatory and found.urn.endswith("::ahead")
    assert "keda.sh ScaledObject" in found.message and "keda 2.20.2" in found.message


def test_a_custom_resource_after_its_crd_release_passes_directly_and_through_a_parent(violations):
    def program():
        keda = _keda()
        _scaled_object("direct", pulumi.ResourceOptions(depends_on=[keda]))
        # The component waits for the release; its child waits for the component (transitive).
        _Area("area", pulumi.ResourceOptions(depends_on=[keda]), child=lambda o: _scaled_object("child", o))
        # Depending on a component is depending on its children (the SDK expands it).
        holder = _Area("holder", child=lambda o: _keda(opts=o) and None)
        _scaled_object("via-component", pulumi.ResourceOptions(depends_on=[holder]))

    assert violations(program, CRDS) == []


def test_a_release_that_switches_its_crds_off_does_not_count(violations):
    def program():
        keda = _keda({"crds": {"install": False}})
        _scaled_object("switched-off", pulumi.ResourceOptions(depends_on=[keda]))
        karpenter = k8s.helm.v3.Release(
            "karpenter", chart="oci://public.ecr.aws/karpenter/karpenter", version="1.14.1", skip_crds=True
        )
        k8s.apiextensions.CustomResource(
            "pool",
            api_version="karpenter.sh/v1",
            kind="NodePool",
            metadata={"name": "gpu"},
            spec={},
            opts=pulumi.ResourceOptions(depends_on=[karpenter]),
        )

    assert _names(violations(program, CRDS)) == ["pool", "switched-off"]


def test_a_crd_resource_or_the_crd_chart_counts(violations):
    def program():
        crd = k8s.apiextensions.v1.CustomResourceDefinition(
            "crd",
            spec={
                "group": "keda.sh",
                "names": {"kind": "ScaledObject", "plural": "scaledobjects"},
                "scope": "Namespaced",
                "versions": [],
            },
        )
        _scaled_object("after-crd", pulumi.ResourceOptions(depends_on=[crd]))
        crds = k8s.helm.v3.Release("karpenter-crd", chart="oci://public.ecr.aws/karpenter/karpenter-crd", version="1")
        k8s.apiextensions.CustomResource(
            "pool",
            api_version="karpenter.sh/v1",
            kind="NodePool",
            metadata={"name": "gpu"},
            spec={},
            opts=pulumi.ResourceOptions(depends_on=[crds]),
        )

    assert violations(program, CRDS) == []


def test_a_kind_no_pinned_chart_installs_fails(violations):
    def program():
        k8s.apiextensions.CustomResource("widget", api_version="example.com/v1", kind="Widget", metadata={"name": "w"})

    (found,) = violations(program, CRDS)
    assert "no pinned chart" in found.message and "catalog/crds.py" in found.message


def _system_nodes(name: str = "system-ng", opts: pulumi.ResourceOptions | None = None):
    return aws.eks.NodeGroup(
        name,
        cluster_name="c",
        node_role_arn="arn:aws:iam::123456789012:role/nodes",
        subnet_ids=["subnet-1"],
        labels={"node-role": "system", "pool": "system"},
        scaling_config={"min_size": 2, "max_size": 3, "desired_size": 2},
        opts=opts,
    )


def _system_release(name: str, opts: pulumi.ResourceOptions | None = None):
    # Nested, as charts put it: kube-prometheus-stack's prometheus.prometheusSpec.nodeSelector.
    values = {"prometheus": {"prometheusSpec": {"nodeSelector": {"node-role": "system"}}}}
    return k8s.helm.v3.Release(name, chart="kube-prometheus-stack", version="88.5.3", values=values, opts=opts)


def test_a_release_on_system_nodes_ahead_of_the_node_group_fails(violations):
    def program():
        _system_nodes()
        _system_release("ahead")
        # Selecting other nodes only: not this rule's business.
        k8s.helm.v3.Release("gpu", chart="gpu-operator", version="v26.7.0", values={"nodeSelector": {"a": "b"}})

    (found,) = violations(program, NODES)
    assert found.mandatory and found.urn.endswith("::ahead")
    assert "node-role=system" in found.message and "system-ng" in found.message


def test_a_release_after_the_system_node_group_passes_directly_and_transitively(violations):
    def program():
        pool = _Area("pool-system", child=lambda o: _system_nodes(opts=o))
        _system_release("direct", pulumi.ResourceOptions(depends_on=[pool]))
        addons = _Area(
            "addons", pulumi.ResourceOptions(depends_on=[pool]), child=lambda o: k8s.core.v1.ConfigMap("cm", opts=o)
        )
        _Area("area", pulumi.ResourceOptions(depends_on=[addons]), child=lambda o: _system_release("nested", o))

    assert violations(program, NODES) == []


def test_a_component_without_children_orders_nothing(violations):
    # The SDK expands depends_on=[component] to the component's children: none here, so nothing waits.
    def program():
        pool = _Area("pool-system", child=lambda o: _system_nodes(opts=o))
        empty = _Area("empty", pulumi.ResourceOptions(depends_on=[pool]))
        _system_release("unordered", pulumi.ResourceOptions(depends_on=[empty]))

    assert _names(violations(program, NODES)) == ["unordered"]


def _envoy_gateway(values: dict | None = None, opts: pulumi.ResourceOptions | None = None):
    return k8s.helm.v3.Release(
        "envoy-gateway",
        chart="oci://docker.io/envoyproxy/gateway-helm",
        version="v1.9.0",
        values=values or {},
        opts=opts,
    )


def test_a_release_whose_waited_pods_select_no_nodes_needs_an_untainted_node_group(violations):
    def program():
        _system_nodes()
        _envoy_gateway()

    (found,) = violations(program, NODES)
    assert found.urn.endswith("::envoy-gateway") and "deployment.pod.nodeSelector" in found.message
    assert "untainted" in found.message and "system-ng" in found.message

    def ordered():
        nodes = _system_nodes()
        _envoy_gateway(opts=pulumi.ResourceOptions(depends_on=[nodes]))

    assert violations(ordered, NODES) == []


def test_tainted_node_groups_do_not_count_as_room_for_unplaced_pods(violations):
    def program():
        gpu = aws.eks.NodeGroup(
            "gpu-ng",
            cluster_name="c",
            node_role_arn="arn:aws:iam::123456789012:role/nodes",
            subnet_ids=["subnet-1"],
            taints=[{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}],
            scaling_config={"min_size": 1, "max_size": 1, "desired_size": 1},
        )
        # Ordered after a tainted group only, with an untainted one in the stack: still ahead.
        _system_nodes()
        _envoy_gateway(opts=pulumi.ResourceOptions(depends_on=[gpu]))

    (found,) = violations(program, NODES)
    assert found.urn.endswith("::envoy-gateway")


def test_a_release_that_places_its_pods_on_system_nodes_is_checked_as_such(violations):
    system = {"nodeSelector": {"node-role": "system"}}

    def program():
        _system_nodes()
        _envoy_gateway({"deployment": {"pod": system}, "certgen": {"job": system}})

    (found,) = violations(program, NODES)
    assert "select the system nodes" in found.message


def _controller(values: dict, **kwargs):
    return k8s.helm.v3.Release(
        "lbc", chart="aws-load-balancer-controller", version="3.5.0", namespace="kube-system", values=values, **kwargs
    )


def _service(name: str, opts: pulumi.ResourceOptions | None = None):
    return k8s.core.v1.Service(name, metadata={"name": name}, spec={"ports": [{"port": 80}]}, opts=opts)


def test_the_controllers_default_service_webhook_fails_every_unordered_creator(violations):
    def program():
        lbc = _controller({"clusterName": "c"})
        _service("after", pulumi.ResourceOptions(depends_on=[lbc]))
        _service("ahead")
        _keda()
        aws.eks.Addon("coredns", cluster_name="c", addon_name="coredns")

    (found,) = violations(program, WEBHOOKS)
    assert found.urn.endswith("::lbc") and "mservice.elbv2.k8s.aws" in found.message
    assert "ahead (a Service)" in found.message and "keda (a release" in found.message
    assert "the EKS add-on coredns" in found.message and "after (a Service)" not in found.message


def test_the_service_webhook_switched_off_or_ignoring_passes(violations):
    def program():
        _controller({"enableServiceMutatorWebhook": False})
        _service("ahead")
        _keda()

    assert violations(program, WEBHOOKS) == []

    def ignoring():
        _controller({"serviceMutatorWebhookConfig": {"failurePolicy": "Ignore"}})
        _service("ahead")

    assert violations(ignoring, WEBHOOKS) == []


def _ingress(name: str, opts: pulumi.ResourceOptions | None = None):
    return k8s.networking.v1.Ingress(name, metadata={"name": name}, spec={"ingressClassName": "alb"}, opts=opts)


def test_an_ingress_ahead_of_the_controller_fails_and_one_after_it_passes(violations):
    def program():
        lbc = _controller({"enableServiceMutatorWebhook": False})
        _ingress("after", pulumi.ResourceOptions(depends_on=[lbc]))
        _ingress("ahead")

    (found,) = violations(program, WEBHOOKS)
    assert "vingress.elbv2.k8s.aws" in found.message and "ahead (a Ingress)" in found.message
    assert "after (a Ingress)" not in found.message


def test_a_failing_webhook_release_that_skips_its_await_fails(violations):
    def program():
        _controller({"enableServiceMutatorWebhook": False}, skip_await=True)

    found = violations(program, WEBHOOKS)
    assert found and all("skipAwait" in v.message for v in found)


def _plan_program(tmp_path, ordered: bool):
    program = tmp_path / f"prog-{ordered}"
    (program / "app").mkdir(parents=True)
    (program / "Pulumi.yaml").write_text("name: p\nruntime: python\nmain: app/\n")
    (program / "Pulumi.s.yaml").write_text("config: {}\n")
    opts = "pulumi.ResourceOptions(depends_on=[driver])" if ordered else "None"
    (program / "app" / "__main__.py").write_text(
        textwrap.dedent(
            f"""\
            import pulumi
            import pulumi_kubernetes as k8s
            driver = k8s.helm.v3.Release("driver", chart="secrets-store-csi-driver", version="1.6.0",
                                         repository_opts={{"repo": "https://kubernetes-sigs.github.io/secrets-store-csi-driver/charts"}})
            k8s.apiextensions.CustomResource(
                "keys", api_version="secrets-store.csi.x-k8s.io/v1", kind="SecretProviderClass",
                metadata={{"name": "keys", "namespace": "inference"}},
                spec={{"provider": "aws", "parameters": {{}}}}, opts={opts})
            """
        )
    )
    out = tmp_path / f"out-{ordered}"
    return main(["plan", "--program", str(program), "--stack", "s", "--out", str(out), "--quiet"]), out


def test_inferctl_plan_exits_1_naming_a_custom_resource_ahead_of_its_crd(tmp_path):
    code, out = _plan_program(tmp_path, ordered=False)
    assert code == 1
    found = [v for v in json.loads((out / "s.json").read_text())["policies"]["violations"] if v["policy"] == CRDS]
    assert len(found) == 1 and found[0]["urn"].endswith("::keys") and "SecretProviderClass" in found[0]["message"]
    code, out = _plan_program(tmp_path, ordered=True)
    assert code == 0, json.loads((out / "s.json").read_text())["policies"]["violations"]


@pytest.mark.parametrize("name", [CRDS, NODES, WEBHOOKS])
def test_each_rule_is_in_the_pack_and_mandatory(name):
    from inference_platform.policies.pack import POLICIES

    (policy,) = [p for p in POLICIES if p.name == name]
    assert policy.enforcement_level.value == "mandatory"


def _view(type_: str, name: str, props: dict, parent=None, dependencies=()):
    from pulumi_policy import PolicyCustomTimeouts, PolicyResource, PolicyResourceOptions
    from pulumi_policy.proxy import unknown_checking_proxy

    opts = PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [], parent)
    return PolicyResource(
        type_, unknown_checking_proxy(props), f"urn:pulumi:s::p::{type_}::{name}", name, opts, None, parent,
        list(dependencies), {},
    )  # fmt: skip


def test_a_value_unknown_during_preview_skips_that_resource_not_the_rule():
    from pulumi_policy import StackValidationArgs

    from inference_platform.policies.rules.ordering import POLICIES

    unknown = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # the engine's unknown sentinel (pulumi.runtime.rpc.UNKNOWN)
    nodes = _view("aws:eks/nodeGroup:NodeGroup", "system-ng", {"labels": {"node-role": "system"}})
    resources = [
        nodes,
        _view("kubernetes:helm.sh/v3:Release", "unknown-values", {"chart": "keda", "values": unknown}),
        _view("kubernetes:helm.sh/v3:Release", "ahead", {"chart": "keda", "values": {"nodeSelector": {"node-role": "system"}}}),
    ]  # fmt: skip
    found: list[tuple[str, str | None]] = []
    (nodes_rule,) = [p for p in POLICIES if p.name == NODES]
    nodes_rule.validate(StackValidationArgs(resources, {}), lambda message, urn=None: found.append((message, urn)))
    assert [urn.rsplit("::", 1)[-1] for _, urn in found] == ["ahead"]


def test_a_leader_worker_set_ahead_of_its_controller_fails_both_checks(violations):
    def program():
        lws = k8s.helm.v3.Release("lws", chart="oci://registry.k8s.io/lws/charts/lws", version="0.10.0")
        for name, opts in (("ahead", None), ("after", pulumi.ResourceOptions(depends_on=[lws]))):
            k8s.apiextensions.CustomResource(
                name,
                api_version="leaderworkerset.x-k8s.io/v1",
                kind="LeaderWorkerSet",
                metadata={"name": name},
                spec={},
                opts=opts,
            )

    assert _names(violations(program, CRDS)) == ["ahead"]
    (found,) = violations(program, WEBHOOKS)
    assert "mleaderworkerset.kb.io" in found.message and "ahead (a LeaderWorkerSet)" in found.message
    assert "after (a" not in found.message
