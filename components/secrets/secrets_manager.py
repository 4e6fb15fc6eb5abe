"""Secrets Manager secrets under a customer-managed key: generated inference API keys, the NGC API key
and the Hugging Face token.

API keys come from pulumi-random; the NGC key and the HF token come in as secret Outputs (from
`pulumi config set --secret`). Every value is wrapped in ``Output.secret`` before it reaches a
resource: the engine then encrypts it in state and shows ``[secret]`` in previews, even where a
provider's own secret marking is not applied (RandomPassword.result under the mock engine). One secret
per value, so each consumer is granted exactly the secrets it mounts.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_random as random

from inference_platform.components.common.errors import raise_if

MIN_API_KEY_LENGTH = 32
DEFAULT_API_KEY_COUNT = 2
DEFAULT_API_KEY_LENGTH = 48
DEFAULT_RECOVERY_WINDOW_DAYS = 30
# Character classes per alphabet: (upper, lower, numeric, special characters or None).
ALPHABETS: dict[str, tuple[bool, bool, bool, str | None]] = {
    "alphanumeric": (True, True, True, None),
    "urlsafe": (True, True, True, "-_"),
}
NGC_API_KEY = "ngc-api-key"
HF_TOKEN = "hf-token"


def api_key_name(index: int) -> str:
    """Logical name of the ``index``-th API key (1-based): ``api-key-1``, ``api-key-2``, ..."""
    return f"api-key-{index}"


@dataclass(frozen=True, kw_only=True)
class SecretsArgs:
    """What the stack's secrets need: the name prefix, the key, the API keys to generate and the tokens a stack
    passes."""

    name_prefix: str
    """Required. Secret names start ``<name_prefix>/``."""
    kms_key_arn: pulumi.Input[str]
    """Required. The customer-managed key encrypting every secret."""
    api_key_count: int = DEFAULT_API_KEY_COUNT
    """Default 2. Inference API keys to generate, 1-20."""
    api_key_length: int = DEFAULT_API_KEY_LENGTH
    """Default 48. Characters per API key, at least 32."""
    api_key_alphabet: str = "alphanumeric"
    """Default ``alphanumeric``; ``urlsafe`` adds ``-`` and ``_``."""
    ngc_api_key: pulumi.Input[str] | None = None
    """Default none (no NGC secret). The NGC API key, as a secret Output."""
    hf_token: pulumi.Input[str] | None = None
    """Default none (no Hugging Face secret). The Hugging Face token, as a secret Output."""
    recovery_window_days: int = DEFAULT_RECOVERY_WINDOW_DAYS
    """Default 30. Days a deleted secret stays restorable, 7-30."""
    protect: bool = False
    """Default ``False``. Protect and retain the secrets and retain their values (production)."""


class Secrets(pulumi.ComponentResource):
    """Secrets Manager secrets under a customer-managed key: generated inference API keys and the tokens a stack
    passes."""

    secret_arns: dict[str, pulumi.Output[str]]
    """Secret ARN by logical name: ``api-key-<i>``, and ``ngc-api-key``/``hf-token`` when given."""
    api_key_names: list[str]

    def __init__(self, name: str, args: SecretsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        _validate(args)
        super().__init__("inference:secrets:Secrets", name, None, opts)
        upper, lower, numeric, special = ALPHABETS[args.api_key_alphabet]
        values: dict[str, tuple[str, str, pulumi.Input[str]]] = {}
        self.api_key_names = [api_key_name(i) for i in range(1, args.api_key_count + 1)]
        for key_name in self.api_key_names:
            password = random.RandomPassword(
                f"{name}-{key_name}-random",
                length=args.api_key_length,
                upper=upper,
                lower=lower,
                numeric=numeric,
                special=special is not None,
                override_special=special,
                opts=pulumi.ResourceOptions(parent=self),
            )
            values[key_name] = (f"inference/{key_name}", f"Inference API key {key_name}", password.result)
        if args.ngc_api_key is not None:
            values[NGC_API_KEY] = ("ngc/api-key", "NVIDIA NGC API key", args.ngc_api_key)
        if args.hf_token is not None:
            values[HF_TOKEN] = ("huggingface/token", "Hugging Face access token", args.hf_token)

        stateful = pulumi.ResourceOptions(parent=self, protect=args.protect, retain_on_delete=args.protect)
        # A replaced value becomes a new version; the old one is kept (retained) when production says so.
        version_opts = pulumi.ResourceOptions(parent=self, retain_on_delete=args.protect)
        self.secret_arns = {}
        for logical, (path, description, value) in values.items():
            secret = aws.secretsmanager.Secret(
                f"{name}-{logical}",
                # A prefix, not a fixed name: a deleted secret's name stays taken for its recovery window.
                name_prefix=f"{args.name_prefix}/{path}-",
                description=description,
                kms_key_id=args.kms_key_arn,
                recovery_window_in_days=args.recovery_window_days,
                opts=stateful,
            )
            aws.secretsmanager.SecretVersion(
                f"{name}-{logical}-value",
                secret_id=secret.id,
                secret_string=pulumi.Output.secret(value),
                opts=version_opts,
            )
            self.secret_arns[logical] = secret.arn
        self.register_outputs({"secret_arns": self.secret_arns, "api_key_names": self.api_key_names})


def _validate(args: SecretsArgs) -> None:
    problems = []
    if not 1 <= args.api_key_count <= 20:
        problems.append(f"api_key_count={args.api_key_count} must be 1-20")
    if args.api_key_length < MIN_API_KEY_LENGTH:
        problems.append(f"api_key_length={args.api_key_length} must be at least {MIN_API_KEY_LENGTH}")
    if args.api_key_alphabet not in ALPHABETS:
        problems.append(f"api_key_alphabet={args.api_key_alphabet!r}: one of {', '.join(ALPHABETS)}")
    if not 7 <= args.recovery_window_days <= 30:
        problems.append(f"recovery_window_days={args.recovery_window_days} must be 7-30")
    raise_if("Secrets", problems)
