"""Edge rules on the resource kinds other teams use directly (issue 18 §3): WAF rules that only count or
an allowing default with nothing blocking, imported ACM certificates with weak keys, and ElastiCache in
every form (cache clusters, serverless caches, users, user groups), each with a passing and a failing case."""

from __future__ import annotations

import datetime

import pulumi_aws as aws
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

VISIBILITY = {"cloudwatch_metrics_enabled": True, "metric_name": "m", "sampled_requests_enabled": True}
MANAGED = {"managed_rule_group_statement": {"vendor_name": "AWS", "name": "AWSManagedRulesCommonRuleSet"}}
RATE = {"rate_based_statement": {"limit": 100, "aggregate_key_type": "IP"}}
KEY = "arn:aws:kms:us-east-1:123456789012:key/x"


def _acl(*, default="allow", managed_override="none", rate_action="block"):
    def program():
        aws.wafv2.WebAcl("acl", scope="REGIONAL", default_action={default: {}}, visibility_config=VISIBILITY, rules=[
            {"name": "common", "priority": 0, "override_action": {managed_override: {}},
             "visibility_config": VISIBILITY, "statement": MANAGED},
            {"name": "ip", "priority": 1, "action": {rate_action: {}}, "visibility_config": VISIBILITY,
             "statement": RATE}])  # fmt: skip

    return program


def test_acting_web_acls_pass(violations):
    assert violations(_acl(), "edge-web-acl-guards") == []
    assert violations(_acl(default="block", rate_action="captcha"), "edge-web-acl-guards") == []

    def rule():
        aws.wafv2.WebAclRule("extra", web_acl_arn="arn:aws:wafv2:us-east-1:1:regional/webacl/a/b", name="extra",
                             priority=5, action={"block": {}}, visibility_config=VISIBILITY, statement=RATE)  # fmt: skip

    assert violations(rule, "edge-web-acl-guards") == []


def test_web_acls_that_only_count_fail(violations):
    found = [v.message for v in violations(_acl(managed_override="count", rate_action="count"), "edge-web-acl-guards")]
    assert any("rule common only counts" in m for m in found)
    assert any("rule ip only counts" in m for m in found)
    assert "the default action allows and no rule blocks: every request passes" in found
    # A counted group or rate rule does not stand in for the guards it looks like.
    assert "no AWS managed rule group" in found and "no rate-based rule per source IP" in found

    def rule():
        aws.wafv2.WebAclRule("extra", web_acl_arn="arn:aws:wafv2:us-east-1:1:regional/webacl/a/b", name="extra",
                             priority=5, action={"count": {}}, visibility_config=VISIBILITY, statement=RATE)  # fmt: skip

    (found,) = violations(rule, "edge-web-acl-guards")
    assert "rule extra only counts" in found.message


def _pem(key) -> tuple[str, str]:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "api.example.com")])
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=90))
            .sign(key, hashes.SHA256()))  # fmt: skip
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())  # fmt: skip
    return cert.public_bytes(serialization.Encoding.PEM).decode(), private.decode()


def _imported(key, *, body=True):
    certificate_body, private_key = _pem(key)

    def program():
        aws.acm.Certificate("imported", private_key=private_key, certificate_body=certificate_body if body else None)

    return program


@pytest.mark.parametrize(
    "key", [rsa.generate_private_key(65537, 2048), ec.generate_private_key(ec.SECP256R1()),
            ec.generate_private_key(ec.SECP384R1())], ids=["rsa2048", "p256", "p384"])  # fmt: skip
def test_imported_certificates_with_strong_keys_pass(violations, key):
    assert violations(_imported(key), "acm-certificate-dns-validated") == []


@pytest.mark.parametrize(
    ("key", "words"),
    [(rsa.generate_private_key(65537, 1024), "an RSA 1024 key"),
     (ec.generate_private_key(ec.SECP521R1()), "an EC secp521r1 key"),
     (ec.generate_private_key(ec.SECP256K1()), "an EC secp256k1 key")], ids=["rsa1024", "p521", "k256"])  # fmt: skip
def test_imported_certificates_with_weak_keys_fail(violations, key, words):
    (found,) = violations(_imported(key), "acm-certificate-dns-validated")
    assert words in found.message
    # Only the private key given: its public half is judged.
    (found,) = violations(_imported(key, body=False), "acm-certificate-dns-validated")
    assert words in found.message


def test_an_unreadable_imported_certificate_fails(violations):
    def program():
        aws.acm.Certificate("imported", private_key="not a key", certificate_body="not a certificate")

    (found,) = violations(program, "acm-certificate-dns-validated")
    assert "cannot be read as PEM" in found.message


def test_elasticache_in_every_form_secured_passes(violations):
    def program():
        aws.elasticache.ServerlessCache("serverless", engine="valkey", kms_key_id=KEY, user_group_id="app")
        aws.elasticache.User("app", user_id="app", user_name="default", engine="redis", access_string="on ~* +@all",
                             authentication_mode={"type": "password", "passwords": ["p" * 20]})  # fmt: skip
        aws.elasticache.User("iam", user_id="iam", user_name="iam", engine="redis", access_string="on ~* +@all",
                             authentication_mode={"type": "iam"})  # fmt: skip
        aws.elasticache.UserGroup("app", user_group_id="app", engine="redis", user_ids=["app", "iam"])
        # A member of a replication group is judged through its group.
        aws.elasticache.Cluster("member", replication_group_id="store")
        aws.elasticache.ReplicationGroup("store", description="s", at_rest_encryption_enabled=True, kms_key_id=KEY,
                                         transit_encryption_enabled=True, user_group_ids=["app"])  # fmt: skip

    assert violations(program, "rate-limit-store-encrypted") == []


def test_elasticache_in_every_form_insecure_fails(violations):
    def program():
        aws.elasticache.Cluster("standalone", engine="redis", node_type="cache.t4g.micro", num_cache_nodes=1)
        aws.elasticache.ServerlessCache("serverless", engine="redis")
        aws.elasticache.ServerlessCache("memcached", engine="memcached", kms_key_id=KEY)
        aws.elasticache.User("open", user_id="open", user_name="open", engine="redis", access_string="on ~* +@all",
                             authentication_mode={"type": "no-password-required"})  # fmt: skip
        aws.elasticache.User("legacy", user_id="legacy", user_name="legacy", engine="redis",
                             access_string="on ~* +@all nopass", no_password_required=True)  # fmt: skip
        aws.elasticache.UserGroup("group", user_group_id="group", engine="redis", user_ids=["default", "open"])

    found = violations(program, "rate-limit-store-encrypted")
    by_name: dict[str, list[str]] = {}
    for v in found:
        by_name.setdefault(v.urn.rsplit("::", 1)[-1], []).append(v.message)
    assert "a standalone redis cluster" in by_name["standalone"][0]
    assert any("customer-managed key" in m for m in by_name["serverless"])
    assert any("no userGroupId" in m for m in by_name["serverless"])
    assert any("memcached serverless cache has no authentication" in m for m in by_name["memcached"])
    assert any("no password required" in m for m in by_name["open"])
    assert any("no password required" in m for m in by_name["legacy"])
    assert any("accessString grants nopass" in m for m in by_name["legacy"])
    assert "built-in user 'default'" in by_name["group"][0]
