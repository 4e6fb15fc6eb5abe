"""The node role: EC2 trust, worker + ECR pull-only + SSM, and no CNI permissions."""

from __future__ import annotations

import json

from inference_platform.components.identity.node_role import NodeRole, NodeRoleArgs
from tests.conftest import by_type, one


def test_node_role_has_only_what_a_kubelet_needs(run_components):
    resources = run_components(lambda: NodeRole("nodes", NodeRoleArgs(cluster_name="demo"))).resources
    trust = json.loads(one(resources, "nodes-role").inputs["assumeRolePolicy"])
    assert trust["Statement"][0]["Principal"] == {"Service": "ec2.amazonaws.com"}
    policies = sorted(
        a.inputs["policyArn"].rsplit("/", 1)[1]
        for a in by_type(resources, "aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    )
    assert policies == [
        "AmazonEC2ContainerRegistryPullOnly",
        "AmazonEKSWorkerNodePolicy",
        "AmazonSSMManagedInstanceCore",
    ]
    assert not by_type(resources, "aws:iam/rolePolicy:RolePolicy")
