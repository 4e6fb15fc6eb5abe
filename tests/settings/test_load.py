"""Stack settings: every bad value is reported at once, naming its key path, value and what is
allowed; Pulumi.yaml declares every key with the defaults the settings use."""

from __future__ import annotations

import pytest
import yaml

from inference_platform.settings import SECTIONS, SettingsError, known_keys, load_settings

TAGS = {"owner": "team", "costCenter": "cc-1"}


def problems(values, region="us-west-2", **kw):
    with pytest.raises(SettingsError) as err:
        load_settings(values, project="p", stack="s", region=region, **kw)
    return {p.path: p.message for p in err.value.problems}, str(err.value)


def test_good_settings_load_with_defaults():
    settings = load_settings({"tags": TAGS}, project="p", stack="dev", region="us-west-2")
    assert settings.network.cidr == "10.0.0.0/16" and settings.network.az_count == 2
    assert settings.environment == "development" and settings.keys.deletion_window("development") == 7
    assert settings.default_tags == {"project": "p", "stack": "dev", "owner": "team", "cost-center": "cc-1"}


@pytest.mark.parametrize(
    ("values", "region", "path", "words"),
    [
        ({"network": {"cidr": "10.0.0.0/33"}}, "us-west-2", "network.cidr", ["10.0.0.0/33", "IPv4 CIDR"]),
        ({"network": {"cidr": "banana"}}, "us-west-2", "network.cidr", ["banana"]),
        ({"network": {"cidr": "8.8.0.0/16"}}, "us-west-2", "network.cidr", ["10.0.0.0/8"]),
        ({"network": {"cidr": "10.0.0.0/22"}}, "us-west-2", "network.cidr", ["/22"]),
        ({"network": {"cidr": "10.0.0.0/20", "privateSubnetPrefix": 22}}, "us-west-2", "network.cidr", ["too small"]),
        ({"network": {"azCount": 0}}, "us-west-2", "network.azCount", ["greater than or equal to 1"]),
        ({"network": {"azCount": 7}}, "us-east-1", "network.azCount", ["less than or equal to 6"]),
        ({"network": {"azCount": 3}}, "us-west-1", "network.azCount", ["us-west-1 offers 2 zones"]),
        ({"network": {"azCuont": 3}}, "us-west-2", "network.azCuont", ["unknown key", "did you mean 'azCount'"]),
        ({"network": {"natGateways": "two"}}, "us-west-2", "network.natGateways", ["'single', 'perAz' or 'none'"]),
        ({"network": {"natGateways": "none"}}, "us-west-2", "network.natGateways", ["interfaceEndpoints"]),
        ({"network": {"flowLogs": {"retentionDays": 0}}}, "us-west-2", "network.flowLogs.retentionDays", ["allowed"]),
        ({"network": {"flowLogs": {"retentionDays": -5}}}, "us-west-2", "network.flowLogs.retentionDays", ["-5"]),
        ({"keys": {"deletionWindowDays": 3}}, "us-west-2", "keys.deletionWindowDays", ["greater than or equal to 7"]),
        ({"edge": {"allowedIngressCidrs": ["1.2.3.4/40"]}}, "us-west-2", "edge.allowedIngressCidrs[0]", ["1.2.3.4/40"]),
        ({"access": {"adminRoleArns": ["root"]}}, "us-west-2", "access.adminRoleArns[0]", ["IAM role ARN"]),
        ({"environment": "staging"}, "us-west-2", "environment", ["development, production"]),
        ({"netwrok": {}}, "us-west-2", "netwrok", ["did you mean 'network'"]),
    ],
)
def test_each_bad_value_names_its_key_value_and_what_is_allowed(values, region, path, words):
    found, _ = problems({"tags": TAGS, **values}, region=region)
    assert path in found, found
    for word in words:
        assert word in found[path]


@pytest.mark.parametrize(("region", "message"), [(None, "missing"), ("us-weast-2", "did you mean 'us-west-2'")])
def test_region_is_required_and_known(region, message):
    found, _ = problems({"tags": TAGS}, region=region)
    assert message in found["aws:region"]


def test_missing_required_tags():
    found, _ = problems({})
    assert found == {"tags.owner": "missing; this key is required", "tags.costCenter": "missing; this key is required"}


def test_all_problems_come_in_one_error():
    found, text = problems(
        {
            "tags": {"owner": "t"},
            "network": {"cidr": "10.0.0.0/33", "azCuont": 2, "natGateways": "x"},
            "keys": {"x": 1},
        },
        region="mars-1",
    )
    assert set(found) == {
        "aws:region",
        "tags.costCenter",
        "network.cidr",
        "network.azCuont",
        "network.natGateways",
        "keys.x",
    }
    assert text.startswith("invalid stack configuration (6 problems):")
    assert "Traceback" not in text


def test_zones_given_explicitly_must_match_the_count_and_the_region():
    found, _ = problems({"tags": TAGS, "network": {"azCount": 2, "availabilityZones": ["us-west-2a", "eu-west-1a"]}})
    assert "eu-west-1a" in found["network.availabilityZones[1]"]
    found, _ = problems({"tags": TAGS, "network": {"azCount": 3, "availabilityZones": ["us-west-2a", "us-west-2a"]}})
    assert "3 distinct zones" in found["network.availabilityZones"]


def test_reserved_and_aws_tag_keys_are_refused():
    found, _ = problems({"tags": {**TAGS, "extra": {"owner": "x", "aws:foo": "y"}}})
    assert "set by the platform" in found["tags.extra.owner"] and "aws:" in found["tags.extra.aws:foo"]


def test_pulumi_yaml_declares_every_key_with_the_settings_defaults(repo):
    declared = yaml.safe_load((repo / "Pulumi.yaml").read_text())["config"]
    assert set(declared) == set(known_keys())
    for key, decl in declared.items():
        assert decl.get("description"), f"{key} has no description"
    for section in SECTIONS:
        default = declared[section.key].get("default", {})
        if section.key == "tags":
            continue  # owner and costCenter have no sensible default: the stack must say
        model_default = section.model_validate(default).model_dump(by_alias=True)
        assert model_default == section.model_validate({}).model_dump(by_alias=True), (
            f"Pulumi.yaml default of {section.key} differs from settings"
        )


def test_pulumi_yaml_config_is_valid_for_the_pulumi_cli(repo):
    """Pulumi's project schema: `type` is string/integer/boolean/array (arrays need items), a default
    must match its type, and a key never has both default and value."""
    declared = yaml.safe_load((repo / "Pulumi.yaml").read_text())["config"]
    simple = {"string": str, "integer": int, "boolean": bool, "array": list}
    for key, decl in declared.items():
        assert not ("default" in decl and "value" in decl), key
        if "type" in decl:
            assert decl["type"] in simple, f"{key}: type {decl['type']} is not allowed by Pulumi"
            if decl["type"] == "array":
                assert "items" in decl, key
            if "default" in decl:
                assert isinstance(decl["default"], simple[decl["type"]]), key
