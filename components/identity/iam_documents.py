"""IAM policy documents the cluster and its add-ons share, as plain dicts: pure, so tests and policies read them.

Every write permission names its resources or is bounded by a condition on this cluster's tags; the
only ``"Resource": "*"`` statements are read-only discovery calls (Describe*, pricing), which AWS
does not let you scope by resource.
"""

from __future__ import annotations

from typing import Any, Final

Document = dict[str, Any]

# AWS managed policies, by name. The node role gets only what a kubelet needs; the CNI's
# permissions go to the aws-node service account through Pod Identity instead (EKS best practices:
# "Use IRSA/Pod Identity for the VPC CNI" - the node role then cannot reassign ENIs for any pod).
EKS_CLUSTER_POLICY: Final = "AmazonEKSClusterPolicy"
NODE_POLICIES: Final[tuple[str, ...]] = (
    "AmazonEKSWorkerNodePolicy",
    # Pull-only (ecr:GetAuthorizationToken, BatchGetImage, GetDownloadUrlForLayer): narrower than
    # ReadOnly, which also lists and describes every repository; what EKS now documents for nodes.
    "AmazonEC2ContainerRegistryPullOnly",
    "AmazonSSMManagedInstanceCore",
)
CNI_POLICY: Final = "AmazonEKS_CNI_Policy"
EBS_CSI_POLICY: Final = "AmazonEBSCSIDriverPolicy"


def managed_policy_arn(partition: str, name: str) -> str:
    return f"arn:{partition}:iam::aws:policy/{name}"


def service_trust_policy(service: str, *, account_id: str | None = None, tag_session: bool = False) -> Document:
    """Trust for an AWS service principal; ``account_id`` adds the confused-deputy guard."""
    statement: Document = {
        "Effect": "Allow",
        "Principal": {"Service": service},
        "Action": ["sts:AssumeRole", "sts:TagSession"] if tag_session else "sts:AssumeRole",
    }
    if account_id:
        statement["Condition"] = {"StringEquals": {"aws:SourceAccount": account_id}}
    return {"Version": "2012-10-17", "Statement": [statement]}


def ebs_kms_policy(key_arn: str) -> Document:
    """What the EBS CSI controller needs to create and attach volumes encrypted with a CMK (AWS EBS
    CSI driver docs, "KMS key policy"): grants only for AWS resources, data keys for this key only."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "CreateGrantsForEbs",
                "Effect": "Allow",
                "Action": ["kms:CreateGrant", "kms:ListGrants", "kms:RevokeGrant"],
                "Resource": key_arn,
                "Condition": {"Bool": {"kms:GrantIsForAWSResource": "true"}},
            },
            {
                "Sid": "UseKeyForVolumes",
                "Effect": "Allow",
                "Action": ["kms:Encrypt", "kms:Decrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:DescribeKey"],
                "Resource": key_arn,
            },
        ],
    }
