"""What the build instance runs (``build.pull_script``) and the pure parts around it: the reference check, the AMI
parameter, the bounded SSM wait, the encryption check."""

from __future__ import annotations

import shlex
import subprocess

import boto3
import pytest
from botocore.stub import Stubber

from inference_platform.catalog.image_cache import CONTAINERD_ROOT, CRI_MANAGED_LABEL, FS_LABEL
from inference_platform.errors import CommandError
from inference_platform.inferctl.image_cache import build

from .conftest import DIGEST, IMAGE

VOLUME = "vol-0123456789abcdef0"


def script(ref: str = IMAGE) -> str:
    return build.pull_script(build.parse_image(ref), VOLUME)


def pull_line(text: str) -> list[str]:
    """The ctr pull command, as the shell splits it (its continuation joined)."""
    joined = text.replace("\\\n", " ")
    (line,) = [x for x in joined.splitlines() if " images pull " in x]
    return shlex.split(line)


def test_the_blank_volume_becomes_containerds_labelled_root_and_is_left_unmounted():
    text = script()
    steps = [
        "/dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_vol0123456789abcdef0",
        "systemctl stop containerd",
        f'mkfs.xfs -L {FS_LABEL} "$device"',
        f'mount -o noatime "$device" {CONTAINERD_ROOT}',
        "systemctl start containerd",
        "images pull",
        "images ls -q",
        "systemctl stop containerd",
        "sync",
        f"umount {CONTAINERD_ROOT}",
    ]
    at = 0
    for step in steps:
        found = text.find(step, at)
        assert found >= 0, f"{step!r} missing or out of order"
        at = found + len(step)
    assert text.startswith("#!/usr/bin/env bash\n") and "set -o errexit -o nounset -o pipefail" in text
    assert "mkfs.xfs -f" not in text  # never wipes a device that holds a filesystem
    result = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr


def test_the_pull_is_the_cris_managed_overlayfs_image_under_its_digest_name():
    words = pull_line(script())
    assert words[:4] == ["ctr", "--namespace", "k8s.io", "images"]
    assert f"--label {CRI_MANAGED_LABEL}" in " ".join(words) and CRI_MANAGED_LABEL == "io.cri-containerd.image=managed"
    assert "--snapshotter overlayfs" in " ".join(words) and "--platform linux/amd64" in " ".join(words)
    # The CRI names a tag+digest reference by its digest alone (distribution/reference ParseDockerRef).
    digest_ref = f"123456789012.dkr.ecr.us-west-2.amazonaws.com/serving/trtllm@{DIGEST}"
    assert words[-2:] == [digest_ref, ">/dev/null"]
    assert f"grep -qxF -- {digest_ref}" in script()


def test_an_ecr_image_logs_in_to_its_registrys_region():
    text = script()
    assert 'password="$(aws ecr get-login-password --region us-west-2)"' in text
    assert "--user AWS:${password}" in " ".join(pull_line(text))


@pytest.mark.parametrize("ref", [f"ghcr.io/acme/serving:1@{DIGEST}", f"public.ecr.aws/acme/serving@{DIGEST}",
                                 f"registry.example.com:5000/serving@{DIGEST}"])  # fmt: skip
def test_other_registries_get_no_ecr_login(ref):
    text = script(ref)
    assert "get-login-password" not in text and "--user" not in text


def test_a_hostile_reference_is_refused_and_would_be_quoted_anyway():
    hostile = f"ghcr.io/x/y@{DIGEST}';reboot;echo '$(halt)"
    with pytest.raises(CommandError) as refused:
        build.parse_image(hostile)
    assert refused.value.exit_code == 2 and str(refused.value).startswith("--image: ")
    # Past the check (it is the only guard the type has), every interpolation is still one shell word.
    image = build.Image(hostile, "ghcr.io", "x/y';reboot;echo '$(halt)", None, DIGEST)
    text = build.pull_script(image, VOLUME)
    assert pull_line(text)[-2] == image.pull_ref
    assert text.count(shlex.quote(image.pull_ref)) == 4  # pulled, looked for, reported missing or pulled
    assert "$(halt)" not in text.replace(shlex.quote(image.pull_ref), "")


@pytest.mark.parametrize(
    "ref",
    [
        "ghcr.io/acme/serving:1",  # a tag alone
        f"acme/serving@{DIGEST}",  # no registry
        f"ghcr.io/acme/serving@sha256:{'ab' * 31}",  # a short digest
        f"ghcr.io/Acme/serving@{DIGEST}",  # upper case repository
        f"ghcr.io/acme/serving@{DIGEST} ",
    ],
)
def test_references_that_are_not_pinned_full_references_are_refused(ref):
    with pytest.raises(CommandError, match=r"^--image: "):
        build.parse_image(ref)


def test_a_reference_too_long_for_the_tag_is_refused():
    with pytest.raises(CommandError, match=r"^--image: .* 256"):
        build.parse_image(f"ghcr.io/{'a' * 200}/serving:v1@{DIGEST}")


def test_the_ami_comes_from_the_eks_al2023_parameter_of_the_variant():
    ssm = boto3.client("ssm", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    name = "/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/recommended/image_id"
    with Stubber(ssm) as stub:
        stub.add_response("get_parameter", {"Parameter": {"Value": "ami-0123456789abcdef0"}}, {"Name": name})
        assert build.resolve_ami(ssm, "1.33", "none") == "ami-0123456789abcdef0"
        stub.add_client_error("get_parameter", "ParameterNotFound", expected_params={"Name": name})
        with pytest.raises(CommandError) as missing:
            build.resolve_ami(ssm, "1.33", "none")
    assert missing.value.exit_code == 2 and str(missing.value).startswith("--kubernetes-version: ")
    assert build.ami_parameter("1.31", "nvidia").endswith("/1.31/amazon-linux-2023/x86_64/nvidia/recommended/image_id")
    assert "/neuron/" in build.ami_parameter("1.31", "neuron")


class FakeSsm:
    def __init__(self, statuses):
        self.statuses = list(statuses)
        self.calls = []

    def describe_instance_information(self, Filters):
        self.calls.append(Filters)
        status = self.statuses.pop(0) if self.statuses else None
        return {"InstanceInformationList": [{"PingStatus": status}] if status else []}


class FakeClock:
    """Time that moves only when the code under test sleeps."""

    def __init__(self):
        self.now = 0.0
        self.sleeps = []

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


def test_the_ssm_wait_polls_until_online():
    ssm, clock = FakeSsm([None, "ConnectionLost", "Online"]), FakeClock()
    build.wait_ssm_online(ssm, "i-1", 60, clock=lambda: clock.now, sleep=clock.sleep)
    assert clock.sleeps == [build.SSM_POLL_SECONDS] * 2
    assert ssm.calls[0] == [{"Key": "InstanceIds", "Values": ["i-1"]}]


def test_the_ssm_wait_is_bounded():
    ssm, clock = FakeSsm([]), FakeClock()
    with pytest.raises(CommandError, match="did not come online in SSM within 1 min"):
        build.wait_ssm_online(ssm, "i-1", 60, clock=lambda: clock.now, sleep=clock.sleep)
    assert len(ssm.calls) == 60 // build.SSM_POLL_SECONDS + 1


@pytest.mark.parametrize(
    ("resource", "problem"),
    [
        ({"Encrypted": False}, "is not encrypted"),
        ({"Encrypted": True, "KmsKeyId": "arn:other"}, "encrypted with arn:other"),
    ],
)
def test_a_volume_or_snapshot_without_the_stacks_key_fails_the_build(resource, problem):
    with pytest.raises(CommandError, match=problem) as failed:
        build.check_encryption("snapshot snap-1", resource, "arn:the-key")
    assert failed.value.exit_code == 1


def test_every_waiter_is_bounded_by_the_timeout():
    for name, delay in build.DELAYS.items():
        config = build._waiter_config(name, 600)
        assert config["Delay"] == delay and config["Delay"] * config["MaxAttempts"] >= 600
        assert config["Delay"] * (config["MaxAttempts"] - 1) < 600


def test_a_docker_hub_one_component_name_is_pulled_under_the_name_the_cri_looks_up():
    """ParseDockerRef (distribution/reference normalize.go) turns docker.io/foo into docker.io/library/foo: the
    kubelet would ask for that name, so the cache must hold it under it."""
    digest = "sha256:" + "a" * 64
    assert build.parse_image(f"docker.io/nginx:1@{digest}").pull_ref == f"docker.io/library/nginx@{digest}"
    assert build.parse_image(f"docker.io/team/nginx@{digest}").pull_ref == f"docker.io/team/nginx@{digest}"
