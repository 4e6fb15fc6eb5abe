"""Secrets: API keys from pulumi-random (count, length, alphabet), NGC/HF from secret inputs, one
Secrets Manager secret each under the CMK, every value secret on the wire, protect/retain."""

from __future__ import annotations

import json

import pulumi
import pytest

from inference_platform.components.common.errors import ComponentArgsError
from inference_platform.components.secrets.secrets_manager import HF_TOKEN, NGC_API_KEY, Secrets, SecretsArgs
from inference_platform.offline_plan.redact import SECRET_SIG, SECRET_SIG_KEY
from tests.conftest import by_type, one

KEY = "arn:aws:kms:us-west-2:123456789012:key/storage"


def secrets_args(**overrides) -> SecretsArgs:
    values = dict(name_prefix="demo-dev", kms_key_arn=KEY)
    values.update(overrides)
    return SecretsArgs(**values)


def _is_secret(wire) -> bool:
    return isinstance(wire, dict) and wire.get(SECRET_SIG_KEY) == SECRET_SIG


@pytest.mark.parametrize(("alphabet", "special"), [("alphanumeric", None), ("urlsafe", "-_")])
def test_api_keys_follow_count_length_and_alphabet(run_components, alphabet, special):
    run = run_components(
        lambda: Secrets("s", secrets_args(api_key_count=3, api_key_length=40, api_key_alphabet=alphabet))
    )
    passwords = sorted(by_type(run.resources, "random:index/randomPassword:RandomPassword"), key=lambda r: r.name)
    assert [p.name for p in passwords] == ["s-api-key-1-random", "s-api-key-2-random", "s-api-key-3-random"]
    for p in passwords:
        assert p.inputs["length"] == 40 and p.inputs["upper"] and p.inputs["lower"] and p.inputs["numeric"]
        assert p.inputs["special"] is (special is not None) and p.inputs.get("overrideSpecial") == special
        result = p.outputs["result"]
        allowed = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") | set(special or "")
        assert len(result) == 40 and set(result) <= allowed


def test_each_value_is_one_secret_under_the_cmk_and_reaches_aws_only_as_a_secret(run_components):
    def program():
        Secrets("s", secrets_args(ngc_api_key=pulumi.Output.secret("ngc-value"), hf_token=pulumi.Output.secret("hf")))

    resources = run_components(program).resources
    secrets = {r.name: r for r in by_type(resources, "aws:secretsmanager/secret:Secret")}
    assert set(secrets) == {"s-api-key-1", "s-api-key-2", f"s-{NGC_API_KEY}", f"s-{HF_TOKEN}"}
    for secret in secrets.values():
        assert secret.inputs["kmsKeyId"] == KEY and secret.inputs["recoveryWindowInDays"] == 30
        assert secret.inputs["namePrefix"].startswith("demo-dev/")
    versions = by_type(resources, "aws:secretsmanager/secretVersion:SecretVersion")
    assert len(versions) == 4
    for version in versions:
        assert _is_secret(version.inputs["secretString"]), version.urn
        owner = secrets[version.name.removesuffix("-value")]
        assert version.property_dependencies["secretId"] == [owner.urn]
    ngc = one(resources, f"s-{NGC_API_KEY}-value").inputs["secretString"]["value"]
    assert ngc == "ngc-value"


def test_a_generated_key_is_marked_secret_even_though_the_mock_leaves_result_plain(run_components):
    run = run_components(lambda: Secrets("s", secrets_args(api_key_count=1)))
    result = one(run.resources, "s-api-key-1-random").outputs["result"]
    assert isinstance(result, str)  # the mock engine does not apply additional_secret_outputs
    version = one(run.resources, "s-api-key-1-value").inputs["secretString"]
    assert _is_secret(version) and version["value"] == result
    assert result not in json.dumps([r.inputs for r in run.resources if r.name != "s-api-key-1-value"])


def test_without_ngc_and_hf_values_there_are_no_such_secrets(run_components):
    resources = run_components(lambda: Secrets("s", secrets_args())).resources
    assert sorted(r.name for r in by_type(resources, "aws:secretsmanager/secret:Secret")) == [
        "s-api-key-1",
        "s-api-key-2",
    ]


@pytest.mark.parametrize("protect", [True, False])
def test_protected_secrets_are_protected_and_retained_and_their_values_retained(run_components, protect):
    resources = run_components(lambda: Secrets("s", secrets_args(protect=protect))).resources
    for secret in by_type(resources, "aws:secretsmanager/secret:Secret"):
        assert secret.protect is protect and secret.retain_on_delete is protect
    for version in by_type(resources, "aws:secretsmanager/secretVersion:SecretVersion"):
        # Rotation replaces a version: protecting it would block rotation; retaining keeps the old value.
        assert not version.protect and version.retain_on_delete is protect


def test_bad_arguments_are_reported_together():
    with pytest.raises(ComponentArgsError) as err:
        Secrets("s", secrets_args(api_key_count=0, api_key_length=16, api_key_alphabet="emoji", recovery_window_days=3))
    text = str(err.value)
    for expected in ("api_key_count=0", "api_key_length=16", "'emoji'", "recovery_window_days=3"):
        assert expected in text
