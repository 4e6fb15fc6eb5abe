"""Every node OS the settings accept plans and passes the pack: prod's serving pool on Bottlerocket (without EFA,
which Bottlerocket nodes cannot lock memory for) used to be refused by ``pod-images-fit-node-disk``, which measured
the node by its 4 GiB root volume while Bottlerocket keeps images on its data volume."""

from __future__ import annotations

import yaml

from inference_platform.inferctl.plan.command import make_plan
from tests.conftest import REPO


def test_prod_on_bottlerocket_plans_and_passes_the_pack(tmp_path):
    doc = yaml.safe_load((REPO / "stacks" / "Pulumi.prod.yaml").read_text())
    config = doc["config"]
    pool = config["inference-platform:nodePools"]["inference"]
    pool.update({"amiFamily": "bottlerocket", "efa": False})
    pool.pop("localStorage", None)  # the RAID0 of instance disks is nodeadm's (AL2023)
    config["inference-platform:coldStart"].pop("imagePull", None)  # FastImagePull is nodeadm's too
    config["inference-platform:coldStart"].pop("imageCache", None)  # and the cache is mounted by AL2023's cloud-init
    stack_file = tmp_path / "Pulumi.prod.yaml"
    stack_file.write_text(yaml.safe_dump(doc))
    plan = make_plan(REPO, "prod", stack_file=stack_file)
    assert [v.message for v in plan.violations] == []
    (group, *_) = [r for r in plan.run.resources if r.type == "aws:eks/nodeGroup:NodeGroup" and "inference" in r.urn]
    assert group.inputs["amiType"].startswith("BOTTLEROCKET_")
