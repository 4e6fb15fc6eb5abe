"""Settings of the model store, the FSx cache and the secrets, and the bad inputs of issue 4 §5: each
ends `inferctl plan` with exit 2, names its key, and stops the program before any resource exists."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from inference_platform.inferctl.cli import main as inferctl
from inference_platform.offline_plan.engine import ProgramError, run_program
from inference_platform.settings import SECRET_KEYS, SettingsError, decode_value, load_settings
from inference_platform.settings.project import load_project, load_stack_config
from tests.conftest import REPO

PLAIN_NGC_KEY = "nvapi-PLAINTEXT-do-not-echo"


def dev_values() -> dict:
    """The dev stack's config as the program sees it, minus this module's sections: a valid base that
    other areas' sections keep valid as they grow."""
    project = load_project(REPO)
    config = load_stack_config(project, "dev")
    prefix = f"{project.name}:"
    values = {
        k[len(prefix) :]: decode_value(k[len(prefix) :], v) for k, v in config.values.items() if k.startswith(prefix)
    }
    return {k: v for k, v in values.items() if k not in ("storage", "fsx", "secrets", "environment")}


def load(values, environment="development", **kw):
    return load_settings(
        {**dev_values(), "environment": environment, **values}, project="p", stack="s", region="us-west-2", **kw
    )


def problems(values, environment="development"):
    with pytest.raises(SettingsError) as err:
        load(values, environment)
    return {p.path: p.message for p in err.value.problems}


def test_defaults_match_the_documented_ones():
    settings = load({})
    storage, fsx, secrets = settings.storage, settings.fsx, settings.secrets
    assert storage.model_prefix == "models/" and storage.force_destroy is False
    assert storage.lifecycle.noncurrent_version_expiration_days == 90
    assert storage.lifecycle.cold_tag is not None and storage.lifecycle.cold_tag.key == "tier"
    assert fsx.enabled is False and fsx.per_unit_storage_throughput == 250 and fsx.storage_capacity_gib == 1200
    assert secrets.api_keys.length == 48 and secrets.recovery_window("development") == 7
    assert secrets.recovery_window("production") == 30
    assert SECRET_KEYS == ("ngcApiKey", "hfToken")


@pytest.mark.parametrize(
    ("values", "path", "words"),
    [
        (
            {"storage": {"lifecycle": {"noncurrentVersionExpirationDays": 0}}},
            "storage.lifecycle.noncurrentVersionExpirationDays",
            ["got 0", "greater than 0"],
        ),
        (
            {"storage": {"lifecycle": {"abortIncompleteMultipartUploadDays": -3}}},
            "storage.lifecycle.abortIncompleteMultipartUploadDays",
            ["got -3"],
        ),
        (
            {"storage": {"lifecycle": {"noncurrentVersionTransitionDays": 120}}},
            "storage.lifecycle.noncurrentVersionTransitionDays",
            ["got 120", "expire after 90 days"],
        ),
        (
            {"storage": {"lifecycle": {"noncurrentVersionTransitionDays": 10}}},
            "storage.lifecycle.noncurrentVersionTransitionDays",
            ["STANDARD_IA after 30 days"],
        ),
        ({"storage": {"lifecycle": {"coldTransitionDays": 7}}}, "storage.lifecycle.coldTransitionDays", ["got 7"]),
        (
            {"storage": {"lifecycle": {"coldStorageClass": "GLACIER"}}},
            "storage.lifecycle.coldStorageClass",
            ["GLACIER"],
        ),
        ({"storage": {"lifecycle": {"coldPrefix": "models/old/"}}}, "storage.lifecycle.coldPrefix", ["overlaps"]),
        ({"storage": {"modelPrefix": "/models"}}, "storage.modelPrefix", ["no leading '/'"]),
        ({"storage": {"modelPrefx": "m/"}}, "storage.modelPrefx", ["did you mean 'modelPrefix'"]),
        (
            {"fsx": {"enabled": True, "perUnitStorageThroughput": 200}},
            "fsx.perUnitStorageThroughput",
            ["got 200", "PERSISTENT_2 offers 125, 250, 500, 1000"],
        ),
        ({"fsx": {"storageCapacityGiB": 1000}}, "fsx.storageCapacityGiB", ["got 1000", "multiple of 2400"]),
        ({"fsx": {"availabilityZone": "us-west-2d"}}, "fsx.availabilityZone", ["us-west-2a, us-west-2b"]),
        ({"fsx": {"fileSystemPath": "models"}}, "fsx.fileSystemPath", ["absolute path"]),
        ({"fsx": {"autoImportEvents": ["NEW", "MOVED"]}}, "fsx.autoImportEvents[1]", ["MOVED"]),
        ({"secrets": {"apiKeys": {"length": 31}}}, "secrets.apiKeys.length", ["got 31", "greater than or equal to 32"]),
        ({"secrets": {"apiKeys": {"count": 0}}}, "secrets.apiKeys.count", ["got 0"]),
        ({"secrets": {"apiKeys": {"alphabet": "emoji"}}}, "secrets.apiKeys.alphabet", ["'alphanumeric' or 'urlsafe'"]),
        ({"secrets": {"recoveryWindowDays": 0}}, "secrets.recoveryWindowDays", ["got 0"]),
    ],
)
def test_each_bad_value_names_its_key(values, path, words):
    found = problems(values)
    assert path in found, found
    for word in words:
        assert word in found[path]


def test_production_never_force_destroys_model_data():
    assert (
        "production" in problems({"storage": {"forceDestroy": True}}, environment="production")["storage.forceDestroy"]
    )
    assert load({"storage": {"forceDestroy": True}}).storage.force_destroy is True


def test_a_secret_key_in_plain_text_is_named_without_its_value():
    with pytest.raises(SettingsError) as err:
        load({"hfToken": "hf_PLAIN"})
    assert "hfToken: is set in plain text" in str(err.value) and "hf_PLAIN" not in str(err.value)
    settings = load({"hfToken": "hf_SECRET"}, secret_keys=["hfToken"])
    assert "hf_SECRET" not in repr(settings)


# --- issue 4 §5 through the command: exit 2, the key named, nothing registered ------------------------


def _stack_file(tmp_path: Path, repo: Path, config: dict) -> Path:
    doc = yaml.safe_load((repo / "stacks" / "Pulumi.dev.yaml").read_text())
    merged = copy.deepcopy(doc)
    for key, value in config.items():
        qualified = f"inference-platform:{key}"
        base = merged["config"].get(qualified)
        merged["config"][qualified] = {**base, **value} if isinstance(base, dict) and isinstance(value, dict) else value
    path = tmp_path / "Pulumi.bad.yaml"
    path.write_text(yaml.safe_dump(merged))
    return path


BAD_INPUTS = {
    "lifecycle-days": (
        {"storage": {"lifecycle": {"noncurrentVersionExpirationDays": 0}}},
        "storage.lifecycle.noncurrentVersionExpirationDays",
    ),
    "transition-after-expiry": (
        {"storage": {"lifecycle": {"noncurrentVersionTransitionDays": 60, "noncurrentVersionExpirationDays": 45}}},
        "storage.lifecycle.noncurrentVersionTransitionDays",
    ),
    "fsx-throughput": ({"fsx": {"enabled": True, "perUnitStorageThroughput": 100}}, "fsx.perUnitStorageThroughput"),
    "api-key-length": ({"secrets": {"apiKeys": {"length": 24}}}, "secrets.apiKeys.length"),
    "plain-secret": ({"ngcApiKey": PLAIN_NGC_KEY}, "ngcApiKey"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_exits_2_naming_the_key_with_nothing_registered(tmp_path, repo, capsys, case):
    config, key = BAD_INPUTS[case]
    stack_file = _stack_file(tmp_path, repo, config)
    code = inferctl(
        [
            "plan",
            "--stack",
            "dev",
            "--stack-file",
            str(stack_file),
            "--program",
            str(repo),
            "--out",
            str(tmp_path / "out"),
            "--quiet",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and f"{key}:" in err, err
    assert PLAIN_NGC_KEY not in err
    with pytest.raises(ProgramError) as stopped:
        run_program(repo, "dev", stack_file=stack_file)
    assert stopped.value.registered == 0 and key in str(stopped.value)
    assert not (tmp_path / "out" / "dev.json").exists()


def test_secret_keys_given_with_secure_pass(tmp_path, repo):
    stack_file = _stack_file(tmp_path, repo, {"ngcApiKey": {"secure": "v1:AAAA"}, "hfToken": {"secure": "v1:BBBB"}})
    run = run_program(repo, "dev", stack_file=stack_file, secret_values={"ngcApiKey": "n", "hfToken": "h"})
    names = {r.name for r in run.resources if r.type == "aws:secretsmanager/secret:Secret"}
    assert {"secrets-ngc-api-key", "secrets-hf-token"} <= names


def test_the_empty_default_of_an_optional_secret_means_unset():
    """Pulumi.yaml gives ngcApiKey and hfToken the default "" so the CLI accepts stacks without them."""
    assert load({"ngcApiKey": "", "hfToken": ""}).secrets is not None
    assert "ngcApiKey" in problems({"ngcApiKey": "x"})
