"""A generated value kept in Secrets Manager: the random value, the secret under a customer-managed key and
its version, as the edge's client API keys and the rate-limit Redis AUTH token both need.

The value is letters and digits only (``special=False``): the API keys travel in a header and the AUTH token
in a Redis URL. Its ``result`` is an additional secret output, so the engine keeps it encrypted in state.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_random as random


@dataclass(frozen=True)
class GeneratedSecret:
    """The generated value (a secret Output) and the Secrets Manager secret holding it."""

    value: pulumi.Output[str]
    secret: aws.secretsmanager.Secret


def generated_secret(
    parent: pulumi.Resource,
    *,
    value_name: str,
    secret_name: str,
    name: str,
    description: str,
    length: int,
    kms_key_arn: pulumi.Input[str] | None,
    recovery_window_days: int,
    protect: bool,
) -> GeneratedSecret:
    """Resources ``value_name`` (the random value), ``secret_name`` and ``<secret_name>-value`` under
    ``parent``; the secret is called ``name`` in Secrets Manager and, with ``protect``, is protected and
    retained together with its version."""
    keep = pulumi.ResourceOptions(parent=parent, protect=protect, retain_on_delete=protect)
    password = random.RandomPassword(
        value_name,
        length=length,
        special=False,
        opts=pulumi.ResourceOptions(parent=parent, additional_secret_outputs=["result"]),
    )
    value: pulumi.Output[str] = pulumi.Output.secret(password.result)
    secret = aws.secretsmanager.Secret(
        secret_name,
        name=name,
        description=description,
        kms_key_id=kms_key_arn,
        recovery_window_in_days=recovery_window_days,
        opts=keep,
    )
    aws.secretsmanager.SecretVersion(f"{secret_name}-value", secret_id=secret.id, secret_string=value, opts=keep)
    return GeneratedSecret(value, secret)
