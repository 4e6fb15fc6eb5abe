"""The recording engine: what it keeps of each registration is what the real engine would get."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from tests.conftest import one


def program():
    class Box(pulumi.ComponentResource):
        def __init__(self, name):
            super().__init__("test:box:Box", name)
            self.key = aws.kms.Key(
                f"{name}-key",
                enable_key_rotation=True,
                deletion_window_in_days=7,
                opts=pulumi.ResourceOptions(parent=self),
            )
            self.register_outputs({})

    box = Box("box")
    aws.kms.Alias(
        "alias",
        name="alias/x",
        target_key_id=box.key.key_id,
        opts=pulumi.ResourceOptions(protect=True, retain_on_delete=True, depends_on=[box]),
    )
    aws.ssm.Parameter("param", type="SecureString", value=pulumi.Output.secret("hush"))
    pulumi.export("keyArn", box.key.arn)


def test_urns_parents_dependencies_and_options(run_components):
    run = run_components(program, project="proj", stack="st")
    box, key, alias = one(run.resources, "box"), one(run.resources, "box-key"), one(run.resources, "alias")
    assert box.urn == "urn:pulumi:st::proj::test:box:Box::box" and not box.custom and box.parent is None
    assert key.urn == "urn:pulumi:st::proj::test:box:Box$aws:kms/key:Key::box-key" and key.parent == box.urn
    assert alias.urn == "urn:pulumi:st::proj::aws:kms/alias:Alias::alias"
    assert alias.property_dependencies["targetKeyId"] == [key.urn]
    # depends_on a component means on its custom children, as the SDK tells the engine.
    assert alias.dependencies == [key.urn]
    assert alias.protect and alias.retain_on_delete and not key.protect


def test_names_are_camel_case_and_numbers_floats_as_the_engine_sees_them(run_components):
    key = one(run_components(program).resources, "box-key")
    assert key.inputs == {"enableKeyRotation": True, "deletionWindowInDays": 7.0}
    assert isinstance(key.inputs["deletionWindowInDays"], float)


def test_secrets_stay_wrapped_and_outputs_are_recorded(run_components):
    run = run_components(program)
    value = one(run.resources, "param").inputs["value"]
    assert value["4dabf18193072939515e22adb298388d"] == "1b47061264138c4ac30d75fd1eb44270"
    assert run.outputs["keyArn"].startswith("arn:aws:kms:us-west-2:123456789012:key/")


def test_mock_outputs_look_like_aws(run_components):
    key = one(run_components(program).resources, "box-key")
    assert key.outputs["keyId"] in key.outputs["arn"]
