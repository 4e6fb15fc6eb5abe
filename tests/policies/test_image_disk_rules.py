"""pod-images-fit-node-disk (issue 28 R1): a workload's image must fit the root volume of the node groups its pods may
land on. The failing fixture is what prod planned before: the verification Job on the 50 GiB system nodes with the
40-50 GiB serving image."""

from __future__ import annotations

import json
from pathlib import Path

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
import pytest

from inference_platform.catalog import image_sizes
from inference_platform.components.verification.pods import system_affinity
from inference_platform.offline_plan.policy_runner import evaluate
from inference_platform.policies.pack import POLICIES
from tests.conftest import STACKS
from tests.upstream_quotes import assert_quote_holds

RULE = "pod-images-fit-node-disk"
FACTS = Path(__file__).parents[1] / "data" / "upstream" / "bottlerocket_data_volume.json"


def _program(
    unpacked_gib: float,
    *,
    system_disk: int = 50,
    affinity: bool = True,
    gpu_disk: int = 500,
    bottlerocket: bool = False,
    cache_gib: int | None = None,
):
    def program():
        def group(name, labels, disk, os_family="al2023"):
            devices = [{"device_name": "/dev/xvda", "ebs": {"volume_size": disk}}]
            ami_type = "AL2023_x86_64_NVIDIA"
            if os_family == "bottlerocket":  # as components/compute/node_pool.py renders it: a 4 GiB root
                devices = [{"device_name": "/dev/xvda", "ebs": {"volume_size": 4}},
                           {"device_name": "/dev/xvdb", "ebs": {"volume_size": disk}}]  # fmt: skip
                ami_type = "BOTTLEROCKET_x86_64_NVIDIA"
            if cache_gib is not None and name == "gpu":  # the image cache (catalog/image_cache.py)
                devices.append({"device_name": "/dev/xvdc",
                                "ebs": {"volume_size": cache_gib, "snapshot_id": "snap-0a1b2c3d4e5f60718"}})  # fmt: skip
            template = aws.ec2.LaunchTemplate(f"{name}-lt", block_device_mappings=devices)
            aws.eks.NodeGroup(
                f"{name}-ng", cluster_name="c", node_role_arn="arn:aws:iam::1:role/n", subnet_ids=["s"],
                scaling_config={"desired_size": 1, "max_size": 1, "min_size": 1}, labels=labels,
                launch_template={"id": template.id, "version": "1"}, ami_type=ami_type,
            )  # fmt: skip

        group("system", {"node-role": "system", "node-pool": "system"}, system_disk)
        group("gpu", {"node-role": "inference", "node-pool": "inference"}, gpu_disk,
              "bottlerocket" if bottlerocket else "al2023")  # fmt: skip
        repo = aws.ecr.Repository("serving", tags={image_sizes.UNPACKED_GIB_TAG: f"{unpacked_gib:g}"})
        spec = {"containers": [{"name": "verify", "image": pulumi.Output.concat(repo.repository_url, ":1")}],
                "restartPolicy": "Never", **({"affinity": system_affinity()} if affinity else {})}  # fmt: skip
        k8s.batch.v1.Job("verification", metadata={"name": "verify"}, spec={"template": {"spec": spec}})

    return program


def test_the_serving_image_on_the_system_nodes_fails_naming_the_job_the_image_and_the_disk(violations):
    (found,) = violations(_program(image_sizes.SERVING_GPU_IMAGE_GIB), RULE)
    assert found.mandatory and found.urn.endswith("::verification")
    assert "Job verify: its image (serving, 50 GiB unpacked, 75 GiB while pulled)" in found.message
    assert "system-ng's 50 GiB root volume (32.5 GiB for images)" in found.message


def test_the_verification_image_fits_the_system_nodes(violations):
    assert violations(_program(image_sizes.VERIFICATION_IMAGE_GIB), RULE) == []


def test_without_placement_every_node_group_must_hold_it(violations):
    found = violations(_program(image_sizes.SERVING_GPU_IMAGE_GIB, affinity=False), RULE)
    assert [v.message.split("does not fit node group ")[1].split("'")[0] for v in found] == ["system-ng"]
    assert violations(_program(image_sizes.SERVING_GPU_IMAGE_GIB, affinity=False, system_disk=200), RULE) == []


def test_a_bottlerocket_node_holds_images_on_its_data_volume(violations):
    """Bottlerocket's root volume holds its OS only (4 GiB here); the images go to the data volume. Judged by the
    root, every Bottlerocket serving pool was refused."""
    assert violations(_program(image_sizes.SERVING_GPU_IMAGE_GIB, affinity=False, system_disk=200,
                               bottlerocket=True), RULE) == []  # fmt: skip
    (found,) = violations(_program(image_sizes.SERVING_GPU_IMAGE_GIB, affinity=False, system_disk=200,
                                   gpu_disk=60, bottlerocket=True), RULE)  # fmt: skip
    assert "gpu-ng's 60 GiB data volume" in found.message


@pytest.mark.parametrize("fact", json.loads(FACTS.read_text())["facts"], ids=lambda f: f["quote"][:40])
def test_where_bottlerocket_keeps_images_holds_upstream(fact):
    assert_quote_holds(fact)


def test_the_arithmetic():
    assert image_sizes.pull_need_gib(50) == 75
    assert image_sizes.room_for_images_gib(50) == pytest.approx(32.5)
    assert image_sizes.fits(1, 50) and not image_sizes.fits(50, 50) and image_sizes.fits(50, 500)


@pytest.mark.parametrize("stack", STACKS)
def test_every_shipped_stack_passes_and_prods_job_runs_the_verification_image(stack_plan, stack):
    run = stack_plan(stack).run
    assert evaluate(run.resources, [p for p in POLICIES if p.name == RULE]) == []
    jobs = [r for r in run.resources if r.type == "kubernetes:batch/v1:Job"]
    for job in jobs:
        (container,) = job.inputs["spec"]["template"]["spec"]["containers"]
        assert "/verification@sha256:" in container["image"], container["image"]
    assert bool(jobs) is (stack == "prod")


def test_a_cached_node_holds_images_on_its_cache_volume_and_falls_back_to_its_root(violations):
    """With the image cache containerd's root is the cache volume; a node that boots without it pulls onto the root
    volume, so both must hold the image."""
    serving = image_sizes.SERVING_GPU_IMAGE_GIB
    assert violations(_program(serving, affinity=False, system_disk=200, cache_gib=100), RULE) == []
    (small_cache,) = violations(_program(serving, affinity=False, system_disk=200, cache_gib=60), RULE)
    assert "gpu-ng's 60 GiB image cache volume" in small_cache.message
    (small_root,) = violations(_program(serving, affinity=False, system_disk=200, gpu_disk=60, cache_gib=100), RULE)
    assert "gpu-ng's 60 GiB root volume" in small_root.message
