"""deletion-windows: passing and failing fixtures."""

from __future__ import annotations

import pulumi_aws as aws

PRODUCTION = {"minimumDays": 30}


def test_production_windows_pass_at_30_days_or_aws_default(violations):
    def good():
        aws.kms.Key("k", deletion_window_in_days=30, enable_key_rotation=True)
        aws.kms.Key("default", enable_key_rotation=True)
        aws.secretsmanager.Secret("s", recovery_window_in_days=30)

    assert violations(good, "deletion-windows", PRODUCTION) == []


def test_short_windows_fail_in_production_and_immediate_deletion_everywhere(violations):
    def bad():
        aws.kms.Key("k", deletion_window_in_days=7, enable_key_rotation=True)
        aws.secretsmanager.Secret("s", recovery_window_in_days=7)
        aws.secretsmanager.Secret("gone", recovery_window_in_days=0)

    assert sorted(v.urn.rsplit("::", 1)[1] for v in violations(bad, "deletion-windows", PRODUCTION)) == [
        "gone", "k", "s"]  # fmt: skip
    (development,) = violations(bad, "deletion-windows")
    assert development.urn.endswith("::gone") and "final at once" in development.message
