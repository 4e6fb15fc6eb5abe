"""Issue 28 R4: EFA nodes reserve the 2 MiB huge pages their pods request (nothing else is shown to: catalog/efa.py
says why), in user data that runs before the kubelet starts; the script raises, never lowers, and survives reboots.

Facts read: awslabs/amazon-eks-ami v20260724 templates/al2023/provisioners/install-efa.sh (``efa_installer.sh
--minimal -y``, nothing of huge pages in the AMI's own sources: ``git grep -i hugepage`` finds none) and
templates/al2023/runtime/rootfs/etc/systemd/system/nodeadm-run.service (``After=nodeadm-config.service
cloud-final.service``: "start after cloud-init, in order to pickup changes the user may have applied via cloud-init
scripts"); aws/karpenter-provider-aws pkg/providers/amifamily/bootstrap/nodeadm.go ``parseUserData`` keeps every
MIME part of an EC2NodeClass's userData, mime.go's shell-script content type.
"""

from __future__ import annotations

import base64
import email
import subprocess
from pathlib import Path

import pytest

from inference_platform.catalog import efa
from inference_platform.components.compute.node_pool import SHELL_SCRIPT
from tests.components.compute.test_karpenter_node_pool import crs
from tests.components.compute.test_node_pool import pool_resources
from tests.conftest import STACKS, one


def _scripts(mime: str) -> list[str]:
    message = email.message_from_string(mime)
    return [p.get_payload() for p in message.walk() if p.get("Content-Type") == SHELL_SCRIPT]


def test_an_efa_node_group_reserves_a_pods_worth_of_huge_pages_per_accelerator(run_components):
    lt = one(pool_resources(run_components, "p5.48xlarge", local_nvme_raid0=True), "pool-us-west-2a-lt").inputs
    (script,) = _scripts(base64.b64decode(lt["userData"]).decode())
    pages = efa.node_hugepages_2mi(8, 32)
    assert pages == 8 * 5120 // 2 == 20480  # 40 GiB of the p5.48xlarge's 2 TiB
    assert efa.node_hugepages_2mi(16, 8) == 20480  # trn1.32xlarge: at most 8 EFA pods
    assert f"want={pages}\n" in script and efa.HUGEPAGES_2MI_SYSFS in script


def test_a_karpenter_efa_node_class_runs_the_same_script_and_other_nodes_none(run_components):
    _, node_class, _ = crs(run_components, "p5.48xlarge", max_size=2)
    (script,) = _scripts(node_class.inputs["spec"]["userData"])
    assert f"want={efa.node_hugepages_2mi(8, 32)}\n" in script
    assert "userData" not in one(pool_resources(run_components, "g6.xlarge"), "pool-lt").inputs


def _run(script: str, tmp_path: Path, have: int) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    sysfs, sysctl = tmp_path / "nr_hugepages", tmp_path / "sysctl.conf"
    sysfs.write_text(f"{have}\n")
    text = script.replace(efa.HUGEPAGES_2MI_SYSFS, str(sysfs)).replace(efa.HUGEPAGES_SYSCTL_FILE, str(sysctl))
    result = subprocess.run(["bash", "-c", text], capture_output=True, text=True, timeout=30, check=False)
    return result, sysfs, sysctl


@pytest.mark.parametrize(("have", "after"), [(0, 2560), (100, 2560), (9000, 9000)])
def test_the_script_raises_never_lowers_and_persists(tmp_path, have, after):
    result, sysfs, sysctl = _run(efa.efa_hugepages_script(2560), tmp_path, have)
    assert result.returncode == 0, result.stderr
    assert int(sysfs.read_text()) == after
    assert sysctl.read_text() == f"vm.nr_hugepages = {after}\n"


def test_the_script_fails_the_boot_when_the_kernel_keeps_fewer(tmp_path):
    sysfs = tmp_path / "nr_hugepages"
    script = efa.efa_hugepages_script(2560).replace(
        f'echo "$want" > {efa.HUGEPAGES_2MI_SYSFS}', "true  # the kernel found no memory"
    )
    result, _, sysctl = _run(script, tmp_path, 10)
    assert result.returncode == 1 and "reserved 10 of 2560" in result.stderr and not sysctl.exists()
    assert sysfs.read_text() == "10\n"


@pytest.mark.parametrize("stack", STACKS)
def test_every_pod_asking_for_huge_pages_lands_where_they_are_reserved(stack_plan, stack):
    """The serving pods' hugepages-2Mi requests, times the pods a node of their pool holds, fit what each node of that
    pool reserves (prod's p5 pool: two 4-GPU pods of 5 GiB each within 40 GiB)."""
    resources = stack_plan(stack).run.resources
    reserved: dict[str, int] = {}
    for t in resources:
        if t.type == "aws:ec2/launchTemplate:LaunchTemplate" and t.inputs.get("userData"):
            for script in _scripts(base64.b64decode(t.inputs["userData"]).decode()):
                if "want=" in script:  # the huge pages' script, beside others (prod's image cache mount)
                    reserved[t.name] = int(script.split("want=", 1)[1].split("\n", 1)[0])
    pods = [r for r in resources if r.type == "kubernetes:apps/v1:Deployment" and efa.HUGEPAGES_2MI in str(r.inputs)]
    for deployment in pods:
        (container,) = [c for c in deployment.inputs["spec"]["template"]["spec"]["containers"]
                        if efa.HUGEPAGES_2MI in c["resources"]["requests"]]  # fmt: skip
        mib = int(container["resources"]["requests"][efa.HUGEPAGES_2MI].removesuffix("Mi"))
        gpus = int(container["resources"]["requests"]["nvidia.com/gpu"])
        affinity = deployment.inputs["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
        (term,) = affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        (pool,) = [e["values"][0] for e in term["matchExpressions"] if e["key"] == "node-pool"]
        nodes = {name: pages for name, pages in reserved.items() if name.startswith(f"pool-{pool}-")}
        assert nodes, f"{stack}: pods of pool {pool} request {mib}Mi of {efa.HUGEPAGES_2MI}; its nodes reserve none"
        per_node = 8 // gpus  # p5.48xlarge
        assert all(pages * 2 >= mib * per_node for pages in nodes.values()), (nodes, mib, per_node)
