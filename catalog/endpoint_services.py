"""Which AWS services an EKS inference cluster calls from its private subnets, and what an interface
endpoint to each costs. Pure data: the settings validate against it, the network builds from it.

An interface endpoint is billed per hour in every zone it has a network interface in (about $0.01 per
endpoint-hour per zone in us-east-1, ~$7.30 a month per zone) plus $0.01 per GB processed (first PB a
month per region; AWS PrivateLink pricing). Without one, the same calls leave through the NAT gateways
($0.045 per GB processed there), so the endpoints pay off on traffic and, above all, keep credentials,
secrets and key operations off the internet path.
"""

from __future__ import annotations

from collections.abc import Iterable

ENDPOINT_HOUR_USD = 0.01
"""Per endpoint, per zone, per hour (us-east-1; other regions differ by a few percent)."""
ENDPOINT_GB_USD = 0.01
"""Per GB processed, the first PB a month in a region."""
HOURS_PER_MONTH = 730

# Why each service is called, by whom (the EKS private-cluster guide, "VPC endpoints" table, plus the
# controllers this project installs).
KNOWN_SERVICES: dict[str, str] = {
    "ec2": "nodes and controllers (VPC CNI, EBS CSI, Karpenter, the load balancer controller)",
    "ecr.api": "image pull authorisation",
    "ecr.dkr": "image layers (the layers themselves come through the S3 gateway endpoint)",
    "sts": "IAM roles for service accounts and the AWS SDKs' credential chain",
    "logs": "CloudWatch Logs agents and flow logs delivery from nodes",
    "eks-auth": "EKS Pod Identity: every pod credential (AssumeRoleForPodIdentity)",
    "eks": "Karpenter's DescribeCluster at start; the cluster autoscaler's DescribeNodegroup; the EKS API from "
    "inside the VPC",
    "secretsmanager": "Secrets Store CSI provider fetching API keys and tokens",
    "kms": "envelope encryption from pods and the SDKs (Decrypt, GenerateDataKey)",
    "elasticloadbalancing": "the AWS Load Balancer Controller",
    "autoscaling": "the cluster autoscaler (managed node groups)",
    "sqs": "Karpenter's interruption queue; the batch lane's API and workers, and KEDA's aws-sqs-queue scaler",
    "ssm": "Karpenter resolving AMI aliases through public SSM parameters",
    "fsx": "the FSx for Lustre CSI driver",
    "monitoring": "CloudWatch metrics from agents",
    "ssmmessages": "Session Manager shells on nodes",
    "ec2messages": "Session Manager on older agents",
}
BASE_SERVICES: tuple[str, ...] = (
    "ec2", "ecr.api", "ecr.dkr", "sts", "logs", "eks-auth", "secretsmanager", "kms", "elasticloadbalancing",
)  # fmt: skip
KARPENTER_SERVICES: tuple[str, ...] = ("sqs", "ssm", "eks")
# The cluster autoscaler describes managed node groups (eks:DescribeNodegroup, granted in
# components/compute/iam_policies.py) to scale them from zero.
MANAGED_SERVICES: tuple[str, ...] = ("autoscaling", "eks")
FSX_SERVICES: tuple[str, ...] = ("fsx",)
BATCH_SERVICES: tuple[str, ...] = ("sqs",)
"""The batch lane: its API sends each line to the work queue, its workers receive and delete them, and KEDA's
aws-sqs-queue scaler reads the queues' depth (docs/batch.md): all from pods in the private subnets."""

IAM_PREFIX_ENDPOINTS: dict[str, tuple[str, ...]] = {
    "ec2": ("ec2",),
    "ecr": ("ecr.api", "ecr.dkr"),
    "sts": ("sts",),
    "logs": ("logs",),
    "secretsmanager": ("secretsmanager",),
    "kms": ("kms",),
    "elasticloadbalancing": ("elasticloadbalancing",),
    "autoscaling": ("autoscaling",),
    "sqs": ("sqs",),
    "ssm": ("ssm",),
    "eks": ("eks",),
    "fsx": ("fsx",),
    "cloudwatch": ("monitoring",),
    "ssmmessages": ("ssmmessages",),
    "ec2messages": ("ec2messages",),
    # Through the S3 gateway endpoint every VPC of the network has (components/network/vpc.py).
    "s3": (),
}
"""IAM action prefix -> the interface endpoints a pod granted such an action calls from the private subnets."""
THROUGH_NAT: dict[str, str] = {
    "route53": "ExternalDNS writing the API's record: Route 53 is a global API with no interface endpoint here",
    "wafv2": "the AWS Load Balancer Controller attaching the web ACL",
    "waf-regional": "the AWS Load Balancer Controller (WAF Classic look-ups)",
    "shield": "the AWS Load Balancer Controller (Shield Advanced look-ups)",
    "acm": "the AWS Load Balancer Controller discovering certificates",
    "cognito-idp": "the AWS Load Balancer Controller (Cognito authentication actions)",
    "iam": "the AWS Load Balancer Controller's service-linked role and server certificates (IAM is global)",
    "tag": "resource tagging look-ups",
    "pricing": "Karpenter's on-demand price list (the Price List API answers from a few regions only)",
    "arc-zonal-shift": "Karpenter reading the cluster's zonal shifts (Application Recovery Controller)",
}
"""IAM action prefixes granted to pods that this catalog has no interface endpoint for: those calls leave through
the NAT gateways (a stack without NAT cannot make them). Each is listed with who makes it; a prefix in neither
table is refused by the pack until it is classified."""


def required_services(*, karpenter: bool, fsx: bool, batch: bool = False) -> tuple[str, ...]:
    """Every service the cluster calls for its provisioning mode, storage and batch lane, in a stable order."""
    extra = KARPENTER_SERVICES if karpenter else MANAGED_SERVICES
    more = (FSX_SERVICES if fsx else ()) + (BATCH_SERVICES if batch else ())
    return tuple(dict.fromkeys(BASE_SERVICES + extra + more))


def endpoints_for_action(action: str) -> tuple[str, ...] | None:
    """The interface endpoints an IAM action is called through; None when its prefix is in neither table."""
    prefix = action.split(":", 1)[0].lower()
    if prefix in IAM_PREFIX_ENDPOINTS:
        return IAM_PREFIX_ENDPOINTS[prefix]
    return () if prefix in THROUGH_NAT else None


def unknown(services: Iterable[str]) -> list[str]:
    return [s for s in services if s not in KNOWN_SERVICES]


def monthly_cost_usd(endpoints: int, zones: int) -> float:
    """Hourly charge alone, before data: endpoints x zones x $0.01 x 730 h."""
    return round(endpoints * zones * ENDPOINT_HOUR_USD * HOURS_PER_MONTH, 2)
