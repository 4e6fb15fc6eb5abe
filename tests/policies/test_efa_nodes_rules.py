"""efa-nodes-lock-memory: the node pools we render for EFA pass; a launch template that attaches EFA interfaces
without the containers' memlock limit or the huge pages fails, naming what is missing. The class it catches: a
Bottlerocket EFA pool got neither (now also refused by the settings and the component)."""

from __future__ import annotations

import base64

import pulumi_aws as aws
import pytest

from inference_platform.catalog.efa import efa_hugepages_script
from inference_platform.catalog.pool_profile import PoolSpec, profile
from inference_platform.components.common.errors import ComponentArgsError
from inference_platform.components.compute.node_pool import (
    EFA_MEMLOCK_NODE_CONFIG,
    LOCAL_STORAGE_NODE_CONFIG,
    NodePool,
    NodePoolArgs,
    node_config_mime,
)

RULE = "efa-nodes-lock-memory"
ZONES = ("us-west-2a", "us-west-2b")


def _pool_args(ami_family: str = "al2023") -> NodePoolArgs:
    pool = profile(PoolSpec(name="gpu", instance_types=("p5.48xlarge",), ami_family=ami_family), ZONES)
    return NodePoolArgs(
        cluster_name="demo",
        name_prefix="demo",
        kubernetes_version="1.36",
        node_role_arn="arn:aws:iam::123456789012:role/nodes",
        pool=pool,
        subnet_ids_by_zone={"us-west-2a": "subnet-a", "us-west-2b": "subnet-b"},
        security_group_ids=["sg-cluster", "sg-nodes"],
        instance_tags={"owner": "team"},
    )


def _user_data(parts, scripts=()) -> str:
    return base64.b64encode(node_config_mime(parts, scripts).encode()).decode()


def _template(user_data: str | None, efa: bool = True):
    def program():
        interfaces = [{"network_card_index": 0, "device_index": 0, "interface_type": "efa"}] if efa else []
        aws.ec2.LaunchTemplate("lt", instance_type="p5.48xlarge", network_interfaces=interfaces, user_data=user_data)

    return program


def test_the_efa_pool_we_render_passes(violations):
    assert violations(lambda: NodePool("pool", _pool_args()), RULE) == []


@pytest.mark.parametrize(
    ("user_data", "missing"),
    [
        (None, {"RLIMIT_MEMLOCK", "huge pages"}),
        (_user_data([LOCAL_STORAGE_NODE_CONFIG]), {"RLIMIT_MEMLOCK", "huge pages"}),
        (_user_data([EFA_MEMLOCK_NODE_CONFIG]), {"huge pages"}),
        (_user_data([LOCAL_STORAGE_NODE_CONFIG], [efa_hugepages_script(2048)]), {"RLIMIT_MEMLOCK"}),
        (
            _user_data(
                [EFA_MEMLOCK_NODE_CONFIG.replace("9223372036854775807", "8388608")], [efa_hugepages_script(2048)]
            ),
            {"RLIMIT_MEMLOCK"},
        ),
    ],
)
def test_an_efa_template_without_memlock_or_huge_pages_fails(violations, user_data, missing):
    found = violations(_template(user_data), RULE)
    assert all(v.mandatory for v in found)
    assert {word for word in ("RLIMIT_MEMLOCK", "huge pages") if any(word in v.message for v in found)} == missing
    assert len(found) == len(missing)


def test_a_template_without_efa_is_not_judged(violations):
    assert violations(_template(None, efa=False), RULE) == []


def test_the_component_refuses_efa_on_bottlerocket():
    with pytest.raises(ComponentArgsError, match="ami_family: bottlerocket with EFA"):
        NodePool("pool", _pool_args("bottlerocket"))
