"""Secrets never reach a written plan or manifest; a secret mapping in a manifest keeps its keys."""

from __future__ import annotations

from inference_platform.offline_plan.redact import SECRET_SIG, SECRET_SIG_KEY, SECRET_TEXT, redact


def _secret(value):
    return {SECRET_SIG_KEY: SECRET_SIG, "value": value}


def test_a_secret_is_one_placeholder_in_the_plan():
    assert redact({"stringData": _secret({"admin-password": "hunter2"})}) == {"stringData": SECRET_TEXT}


def test_a_secret_mapping_keeps_its_keys_in_a_manifest_and_no_value():
    """pulumi-kubernetes wraps a Secret's whole stringData as secret; the API server (and the schema check of
    tests/infra/test_cluster_manifests.py) sees an object of strings, so the manifest shows its keys only."""
    inputs = {"stringData": _secret({"admin-user": "admin", "admin-password": _secret("hunter2"), "n": {"a": "b"}})}
    redacted = redact(inputs, keep_keys=True)
    assert redacted == {
        "stringData": {"admin-user": SECRET_TEXT, "admin-password": SECRET_TEXT, "n": {"a": SECRET_TEXT}}
    }
    assert "hunter2" not in repr(redacted) and "admin'" not in repr(redacted).replace("'admin-", "")
    assert redact({"k": _secret("v")}, keep_keys=True) == {"k": SECRET_TEXT}
