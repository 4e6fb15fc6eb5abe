"""``inferctl image-cache build`` end to end against moto's server: the instance launched with IMDSv2 and the
encrypted blank volume, the script sent through SSM, the snapshot made of that volume and tagged, the instance
terminated, also when a step fails or the operator presses Ctrl-C; and bad input exits 2 naming the flag.

moto's SSM runs no script (every command reports Success at once) and has no DescribeInstanceInformation: the SSM
wait is a recorder (conftest.py); what the instance would do is tests/inferctl/image_cache/test_script.py's."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.client import BaseClient
from botocore.exceptions import ClientError

from inference_platform.catalog.image_cache import IMAGE_TAG_KEY, SNAPSHOT_ID, SNAPSHOTTER, SNAPSHOTTER_TAG_KEY
from inference_platform.inferctl.cli import main
from inference_platform.inferctl.image_cache import build

from .conftest import IMAGE, Account

pytestmark = pytest.mark.motoserver


def run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def fail_on(monkeypatch, operation: str, answer=None):
    """``operation`` raises a ClientError (or returns ``answer``) from every client; the rest reach moto."""
    original = BaseClient._make_api_call

    def call(self, name, params):
        if name != operation:
            return original(self, name, params)
        if answer is not None:
            return answer
        raise ClientError({"Error": {"Code": "InternalError", "Message": f"{name} injected failure"}}, name)

    monkeypatch.setattr(BaseClient, "_make_api_call", call)


def test_a_build_launches_pulls_snapshots_and_terminates(account: Account, capsys):
    code, out, err = run(capsys, account.argv("--size-gib", "120", "--timeout-minutes", "7", "--output", "json"))
    assert code == 0, err
    result = json.loads(out)
    assert set(result) == {"snapshotId", "image", "sizeGib", "encrypted", "kmsKeyId"}
    assert (result["image"], result["sizeGib"], result["encrypted"]) == (IMAGE, 120, True)
    assert result["kmsKeyId"] == account.key_arn and SNAPSHOT_ID.match(result["snapshotId"])
    assert account.online == [(account.instance_id, 7 * 60.0)]

    assert account.instance()["State"]["Name"] == "terminated"
    instance = account.running  # as launched
    assert instance["MetadataOptions"]["HttpTokens"] == "required"
    assert instance["InstanceType"] == "m6i.2xlarge" and instance["SubnetId"] == account.subnet
    assert instance["IamInstanceProfile"]["Arn"].endswith(f"instance-profile/{account.profile}")
    tags = {t["Key"]: t["Value"] for t in instance["Tags"]}
    assert tags[build.PURPOSE_TAG[0]] == build.PURPOSE_TAG[1] and tags["Name"]
    volume_id = account.volume_id
    volume = account.running["BlockDeviceMappings"]
    assert [m["Ebs"]["DeleteOnTermination"] for m in volume] == [True]

    (snapshot,) = account.snapshots_of(volume_id)
    assert snapshot["SnapshotId"] == result["snapshotId"] and snapshot["Encrypted"] and snapshot["VolumeSize"] == 120
    snapshot_tags = {t["Key"]: t["Value"] for t in snapshot["Tags"]}
    assert snapshot_tags[IMAGE_TAG_KEY] == IMAGE and snapshot_tags[SNAPSHOTTER_TAG_KEY] == SNAPSHOTTER
    assert snapshot_tags["Name"]

    (command,) = account.ssm.list_commands(InstanceId=account.instance_id)["Commands"]
    assert command["DocumentName"] == "AWS-RunShellScript"
    assert command["Parameters"]["commands"] == [build.pull_script(build.parse_image(IMAGE), volume_id)]
    assert command["Parameters"]["executionTimeout"] == [str(7 * 60)]
    # Terminated with the instance (DeleteOnTermination), so only the snapshot remains.
    with pytest.raises(ClientError, match=r"InvalidVolume\.NotFound"):
        account.ec2.describe_volumes(VolumeIds=[volume_id])
    assert "terminated" in err and account.instance_id in err


def test_the_launch_asks_for_an_encrypted_gp3_volume_with_the_key(account: Account, capsys, monkeypatch):
    requests = []
    original = build.launch_request
    monkeypatch.setattr(build, "launch_request", lambda *a: requests.append(original(*a)) or requests[-1])
    assert run(capsys, account.argv())[0] == 0
    (mapping,) = requests[0]["BlockDeviceMappings"]
    assert mapping == {"DeviceName": "/dev/sdf", "Ebs": {"VolumeSize": 100, "VolumeType": "gp3", "Encrypted": True,
                       "KmsKeyId": account.key_arn, "DeleteOnTermination": True}}  # fmt: skip
    assert requests[0]["MetadataOptions"]["HttpTokens"] == "required"
    assert requests[0]["InstanceInitiatedShutdownBehavior"] == "terminate"


def test_text_output_is_the_snapshot_id_then_the_setting_to_paste(account: Account, capsys):
    code, out, _ = run(capsys, account.argv())
    lines = out.splitlines()
    assert code == 0 and SNAPSHOT_ID.match(lines[0])
    assert lines[-1] == (f"inference-platform:coldStart: {{imagePull: cached, imageCache: {{snapshotId: {lines[0]}, "
                         "sizeGib: 100}}")  # fmt: skip


def test_a_failed_aws_call_exits_1_and_terminates_the_instance(account: Account, capsys, monkeypatch):
    fail_on(monkeypatch, "CreateSnapshot")
    code, out, err = run(capsys, account.argv())
    assert code == 1 and out == ""
    assert "CreateSnapshot injected failure" in err.splitlines()[-1]
    assert account.instance()["State"]["Name"] == "terminated"
    assert account.snapshots_of(account.volume_id) == []


def test_a_failed_pull_exits_1_with_the_stderr_tail_and_terminates(account: Account, capsys, monkeypatch):
    stderr = "\n".join(f"line {i}" for i in range(40)) + "\nctr: failed to resolve reference: 403 Forbidden\n"
    fail_on(monkeypatch, "GetCommandInvocation",
            {"Status": "Failed", "StatusDetails": "Failed", "StandardErrorContent": stderr})  # fmt: skip
    code, _, err = run(capsys, account.argv())
    assert code == 1
    assert "ended Failed" in err and err.rstrip().endswith("ctr: failed to resolve reference: 403 Forbidden")
    assert "line 20" not in err and "line 21" in err  # the last 20 lines
    assert account.instance()["State"]["Name"] == "terminated"
    assert account.snapshots_of(account.volume_id) == []


def test_ctrl_c_terminates_the_instance(account: Account, capsys, monkeypatch):
    def interrupted(ssm, instance_id, timeout_s):
        account.online.append((instance_id, timeout_s))
        raise KeyboardInterrupt

    monkeypatch.setattr(build, "wait_ssm_online", interrupted)
    code, _, err = run(capsys, account.argv())
    assert code == 130
    assert account.instance()["State"]["Name"] == "terminated" and f"terminated {account.instance_id}" in err


def test_an_interrupted_launch_is_found_by_its_build_tag_and_terminated(account: Account, capsys, monkeypatch):
    """run_instances made the instance, but the answer never came (Ctrl-C during the call)."""
    original = BaseClient._make_api_call

    def call(self, name, params):
        answer = original(self, name, params)
        if name == "RunInstances":
            account.online.append((answer["Instances"][0]["InstanceId"], 0.0))
            raise KeyboardInterrupt
        return answer

    monkeypatch.setattr(BaseClient, "_make_api_call", call)
    assert run(capsys, account.argv())[0] == 130
    assert account.instance()["State"]["Name"] == "terminated"


def test_a_kubernetes_version_without_an_ami_parameter_exits_2_before_any_launch(account: Account, capsys):
    argv = [a for a in account.argv() if a not in ("--ami", account.ami)]
    code, _, err = run(capsys, [*argv, "--kubernetes-version", "1.99", "--accelerator", "nvidia"])
    assert code == 2 and "--kubernetes-version" in err
    assert build.ami_parameter("1.99", "nvidia") in err and account.online == []


def test_an_unknown_key_exits_2_naming_the_flag(account: Account, capsys):
    argv = account.argv()
    argv[argv.index("--kms-key-id") + 1] = account.key_arn.rsplit("/", 1)[0] + "/00000000-0000-0000-0000-000000000000"
    code, _, err = run(capsys, argv)
    assert code == 2 and "--kms-key-id" in err and account.online == []


def test_a_key_alias_is_resolved_to_the_arn_the_volume_is_checked_against(account: Account, capsys):
    alias = f"alias/storage-{account.profile}"
    boto3.client("kms", region_name="us-east-1").create_alias(AliasName=alias, TargetKeyId=account.key_arn)
    argv = account.argv("--output", "json")
    argv[argv.index("--kms-key-id") + 1] = alias
    code, out, err = run(capsys, argv)
    assert code == 0, err
    assert json.loads(out)["kmsKeyId"] == account.key_arn
