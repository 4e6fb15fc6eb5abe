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
    "eks": "Karpenter's DescribeCluster at start; the EKS API from inside the VPC",
    "secretsmanager": "Secrets Store CSI provider fetching API keys and tokens",
    "kms": "envelope encryption from pods and the SDKs (Decrypt, GenerateDataKey)",
    "elasticloadbalancing": "the AWS Load Balancer Controller",
    "autoscaling": "the cluster autoscaler (managed node groups)",
    "sqs": "Karpenter's interruption queue",
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
MANAGED_SERVICES: tuple[str, ...] = ("autoscaling",)
FSX_SERVICES: tuple[str, ...] = ("fsx",)


def required_services(*, karpenter: bool, fsx: bool) -> tuple[str, ...]:
    """Every service the cluster calls for its provisioning mode and storage, in a stable order."""
    extra = KARPENTER_SERVICES if karpenter else MANAGED_SERVICES
    return BASE_SERVICES + extra + (FSX_SERVICES if fsx else ())


def unknown(services: Iterable[str]) -> list[str]:
    return [s for s in services if s not in KNOWN_SERVICES]


def monthly_cost_usd(endpoints: int, zones: int) -> float:
    """Hourly charge alone, before data: endpoints x zones x $0.01 x 730 h."""
    return round(endpoints * zones * ENDPOINT_HOUR_USD * HOURS_PER_MONTH, 2)
