"""Offline outputs of the storage and secrets resources: what S3, FSx, Secrets Manager, KMS, EKS and
pulumi-random compute, deterministically, in AWS's formats.

``RandomPassword.result`` is generated here with the requested length and alphabet, but it is NOT
marked secret: under the mock engine a provider's declared secret outputs are not applied, so the
program must mark the value secret itself wherever it passes it on (the secret-leak test relies on
this). Secret *inputs* echoed as outputs (a SecretVersion's value) stay wrapped as secrets, as the
engine keeps a secret input secret in the resource's state.
"""

from __future__ import annotations

import hashlib
import string
from typing import Any

from inference_platform.offline_plan.mock_context import MockContext, Outputs

SECRET_SIG_KEY = "4dabf18193072939515e22adb298388d"
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
# pulumi-random's special characters when override_special is unset (random_password docs).
DEFAULT_SPECIAL = "!@#$%&*()-_=+[]{}<>:?"
# The unique suffix the AWS provider appends to a *_prefix name (26 characters).
_PREFIX_SUFFIX_LENGTH = 26


def digest(*parts: str, length: int = 17) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:length]


def _secret(value: Any) -> dict[str, Any]:
    return {SECRET_SIG_KEY: SECRET_SIG, "value": value}


def _prefixed(name: str, inputs: dict[str, Any], attr: str, prefix_attr: str, kind: str) -> str:
    if inputs.get(attr):
        return str(inputs[attr])
    prefix = inputs.get(prefix_attr)
    if prefix:
        return f"{prefix}{digest('prefix', kind, name, length=_PREFIX_SUFFIX_LENGTH)}"
    return f"{name}-{digest('autoname', kind, name, length=7)}".lower()


def _bucket(name: str, inputs: dict[str, Any], ctx: MockContext, _: str) -> dict[str, Any]:
    bucket = _prefixed(name, inputs, "bucket", "bucketPrefix", "s3-bucket")
    suffix = ctx.region.dns_suffix
    return {
        "id": bucket,
        "bucket": bucket,
        "arn": f"arn:{ctx.partition}:s3:::{bucket}",
        "bucketDomainName": f"{bucket}.s3.{suffix}",
        "bucketRegionalDomainName": f"{bucket}.s3.{ctx.region.name}.{suffix}",
        "region": ctx.region.name,
    }


def _lustre(name: str, inputs: dict[str, Any], ctx: MockContext, _: str) -> dict[str, Any]:
    fs_id = f"fs-{digest('fsx', name)}"
    # PERSISTENT_2 mount names are eight random lower-case letters and digits.
    mount = digest("mount", name, length=8)
    return {
        "id": fs_id,
        "arn": f"arn:{ctx.partition}:fsx:{ctx.region.name}:{ctx.account_id}:file-system/{fs_id}",
        "dnsName": f"{fs_id}.fsx.{ctx.region.name}.{ctx.region.dns_suffix}",
        "mountName": mount,
        "ownerId": ctx.account_id,
        "networkInterfaceIds": [f"eni-{digest('eni', name)}"],
    }


def _association(name: str, inputs: dict[str, Any], ctx: MockContext, _: str) -> dict[str, Any]:
    dra = f"dra-{digest('dra', name)}"
    fs_id = inputs.get("fileSystemId", "fs-unknown")
    return {
        "id": dra,
        "associationId": dra,
        "arn": f"arn:{ctx.partition}:fsx:{ctx.region.name}:{ctx.account_id}:association/{fs_id}/{dra}",
    }


def _grant(name: str, inputs: dict[str, Any], ctx: MockContext, _: str) -> dict[str, Any]:
    grant_id = digest("grant", name, length=64)
    key = str(inputs.get("keyId", "")).rsplit("/", 1)[-1]
    return {"id": f"{key}:{grant_id}", "grantId": grant_id, "grantToken": _secret(digest("token", name, length=64))}


def _secret_resource(name: str, inputs: dict[str, Any], ctx: MockContext, _: str) -> dict[str, Any]:
    secret = _prefixed(name, inputs, "name", "namePrefix", "secret")
    # Secrets Manager appends a hyphen and six random characters to every secret ARN.
    arn = f"arn:{ctx.partition}:secretsmanager:{ctx.region.name}:{ctx.account_id}:secret:{secret}-{digest('arn', name, length=6)}"
    return {"id": arn, "arn": arn, "name": secret}


def _secret_version(name: str, inputs: dict[str, Any], ctx: MockContext, _: str) -> dict[str, Any]:
    version = digest("version", name, length=32)
    return {"id": f"{inputs.get('secretId')}|{version}", "versionId": version, "arn": inputs.get("secretId")}


def _pod_identity(name: str, inputs: dict[str, Any], ctx: MockContext, _: str) -> dict[str, Any]:
    association = f"a-{digest('pod-identity', name)}"
    cluster = inputs.get("clusterName", "cluster")
    arn = f"arn:{ctx.partition}:eks:{ctx.region.name}:{ctx.account_id}:podidentityassociation/{cluster}/{association}"
    return {"id": f"{cluster},{association}", "associationId": association, "associationArn": arn}


def random_password(name: str, inputs: dict[str, Any]) -> str:
    """A deterministic password honouring length, enabled classes, override_special and min_* counts."""
    length = int(inputs.get("length", 16))
    special = inputs.get("overrideSpecial")
    special = DEFAULT_SPECIAL if special is None else str(special)
    classes = [
        (inputs.get("upper", True), string.ascii_uppercase, int(inputs.get("minUpper", 0))),
        (inputs.get("lower", True), string.ascii_lowercase, int(inputs.get("minLower", 0))),
        (inputs.get("numeric", inputs.get("number", True)), string.digits, int(inputs.get("minNumeric", 0))),
        (inputs.get("special", True), special, int(inputs.get("minSpecial", 0))),
    ]
    enabled = [(chars, minimum) for on, chars, minimum in classes if on and chars]
    alphabet = "".join(chars for chars, _ in enabled)
    stream = _bytes(name, length)
    required: list[str] = []
    for chars, minimum in enabled:
        required += [chars[stream[len(required) + i] % len(chars)] for i in range(minimum)]
    rest = [alphabet[b % len(alphabet)] for b in stream[len(required) :]]
    return "".join(required + rest)


def _random_password(name: str, inputs: dict[str, Any], ctx: MockContext, _: str) -> dict[str, Any]:
    result = random_password(name, inputs)
    return {"id": "none", "result": result, "bcryptHash": f"$2a$10${digest('bcrypt', name, length=53)}"}


def _bytes(seed: str, count: int) -> bytes:
    out = b""
    counter = 0
    while len(out) < count:
        out += hashlib.sha256(f"{seed}/{counter}".encode()).digest()
        counter += 1
    return out[:count]


OUTPUTS: dict[str, Outputs] = {
    "aws:s3/bucket:Bucket": _bucket,
    "aws:fsx/lustreFileSystem:LustreFileSystem": _lustre,
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation": _association,
    "aws:kms/grant:Grant": _grant,
    "aws:secretsmanager/secret:Secret": _secret_resource,
    "aws:secretsmanager/secretVersion:SecretVersion": _secret_version,
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": _pod_identity,
    "random:index/randomPassword:RandomPassword": _random_password,
}
