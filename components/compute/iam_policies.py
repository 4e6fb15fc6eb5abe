"""IAM policy documents of the node autoscalers (Karpenter, Cluster Autoscaler), as plain dicts: pure.

Every write permission names its resources or is bounded by a condition on this cluster's tags; the
only ``"Resource": "*"`` statements are read-only discovery calls (Describe*, pricing), which AWS
does not let you scope by resource.
"""

from __future__ import annotations

from inference_platform.components.compute.autoscaler_tags import ownership_key
from inference_platform.components.identity.iam_documents import Document


def karpenter_controller_policy(
    *,
    cluster_name: str,
    partition: str,
    region: str,
    account_id: str,
    node_role_arn: str,
    queue_arn: str,
    volume_key_arn: str | None = None,
) -> Document:
    """The Karpenter v1 controller policy, statement for statement as Karpenter 1.14's getting-started
    CloudFormation (website/content/en/v1.14/.../cloudformation.yaml), merged into one document.

    Launch, tag and delete rights hold only for resources tagged ``kubernetes.io/cluster/<name>=owned``
    with a ``karpenter.sh/nodepool`` tag, so the controller can never touch another cluster's nodes."""
    ec2 = f"arn:{partition}:ec2:{region}"
    iam = f"arn:{partition}:iam::{account_id}"
    owned = {f"aws:ResourceTag/kubernetes.io/cluster/{cluster_name}": "owned"}
    request_owned = {
        f"aws:RequestTag/kubernetes.io/cluster/{cluster_name}": "owned",
        "aws:RequestTag/eks:eks-cluster-name": cluster_name,
    }
    created = [
        f"{ec2}:*:{kind}/*"
        for kind in ("fleet", "instance", "volume", "network-interface", "launch-template", "spot-instances-request")
    ]
    cluster_arn = f"arn:{partition}:eks:{region}:{account_id}:cluster/{cluster_name}"
    statements: list[Document] = [
        {
            "Sid": "AllowScopedEC2InstanceAccessActions",
            "Effect": "Allow",
            "Resource": [
                f"{ec2}::image/*",
                f"{ec2}::snapshot/*",
                f"{ec2}:*:security-group/*",
                f"{ec2}:*:subnet/*",
                f"{ec2}:*:capacity-reservation/*",
                f"{ec2}:*:placement-group/*",
            ],
            "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
        },
        {
            "Sid": "AllowScopedEC2LaunchTemplateAccessActions",
            "Effect": "Allow",
            "Resource": f"{ec2}:*:launch-template/*",
            "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
            "Condition": {"StringEquals": owned, "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"}},
        },
        {
            "Sid": "AllowScopedEC2InstanceActionsWithTags",
            "Effect": "Allow",
            "Resource": created,
            "Action": ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"],
            "Condition": {"StringEquals": request_owned, "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"}},
        },
        {
            "Sid": "AllowScopedResourceCreationTagging",
            "Effect": "Allow",
            "Resource": created,
            "Action": "ec2:CreateTags",
            "Condition": {
                "StringEquals": {
                    **request_owned,
                    "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"],
                },
                "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"},
            },
        },
        {
            "Sid": "AllowScopedResourceTagging",
            "Effect": "Allow",
            "Resource": f"{ec2}:*:instance/*",
            "Action": "ec2:CreateTags",
            "Condition": {
                "StringEquals": owned,
                "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
                "StringEqualsIfExists": {"aws:RequestTag/eks:eks-cluster-name": cluster_name},
                "ForAllValues:StringEquals": {
                    "aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"]
                },
            },
        },
        {
            "Sid": "AllowScopedDeletion",
            "Effect": "Allow",
            "Resource": [f"{ec2}:*:instance/*", f"{ec2}:*:launch-template/*"],
            "Action": ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
            "Condition": {"StringEquals": owned, "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"}},
        },
        {
            "Sid": "AllowPassingInstanceRole",
            "Effect": "Allow",
            "Resource": node_role_arn,
            "Action": "iam:PassRole",
            "Condition": {"StringEquals": {"iam:PassedToService": ["ec2.amazonaws.com", "ec2.amazonaws.com.cn"]}},
        },
        {
            "Sid": "AllowScopedInstanceProfileCreationActions",
            "Effect": "Allow",
            "Resource": f"{iam}:instance-profile/*",
            "Action": ["iam:CreateInstanceProfile"],
            "Condition": {
                "StringEquals": {**request_owned, "aws:RequestTag/topology.kubernetes.io/region": region},
                "StringLike": {"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"},
            },
        },
        {
            "Sid": "AllowScopedInstanceProfileTagActions",
            "Effect": "Allow",
            "Resource": f"{iam}:instance-profile/*",
            "Action": ["iam:TagInstanceProfile"],
            "Condition": {
                "StringEquals": {
                    **owned,
                    "aws:ResourceTag/topology.kubernetes.io/region": region,
                    **request_owned,
                    "aws:RequestTag/topology.kubernetes.io/region": region,
                },
                "StringLike": {
                    "aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*",
                    "aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*",
                },
            },
        },
        {
            "Sid": "AllowScopedInstanceProfileActions",
            "Effect": "Allow",
            "Resource": f"{iam}:instance-profile/*",
            "Action": [
                "iam:AddRoleToInstanceProfile",
                "iam:RemoveRoleFromInstanceProfile",
                "iam:DeleteInstanceProfile",
            ],
            "Condition": {
                "StringEquals": {**owned, "aws:ResourceTag/topology.kubernetes.io/region": region},
                "StringLike": {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*"},
            },
        },
        {
            "Sid": "AllowAPIServerEndpointDiscovery",
            "Effect": "Allow",
            "Resource": cluster_arn,
            "Action": "eks:DescribeCluster",
        },
        {
            "Sid": "AllowInterruptionQueueActions",
            "Effect": "Allow",
            "Resource": queue_arn,
            "Action": ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"],
        },
        {
            "Sid": "AllowZonalShiftStatusReadOnly",
            "Effect": "Allow",
            "Resource": "*",
            "Action": ["arc-zonal-shift:GetManagedResource"],
            "Condition": {"StringEquals": {"arc-zonal-shift:ResourceIdentifier": cluster_arn}},
        },
        {
            "Sid": "AllowRegionalReadActions",
            "Effect": "Allow",
            "Resource": "*",
            "Action": [
                "ec2:DescribeCapacityReservations",
                "ec2:DescribeImages",
                "ec2:DescribeInstances",
                "ec2:DescribeInstanceStatus",
                "ec2:DescribeInstanceTypeOfferings",
                "ec2:DescribeInstanceTypes",
                "ec2:DescribeLaunchTemplates",
                "ec2:DescribePlacementGroups",
                "ec2:DescribeSecurityGroups",
                "ec2:DescribeSpotPriceHistory",
                "ec2:DescribeSubnets",
            ],
            "Condition": {"StringEquals": {"aws:RequestedRegion": region}},
        },
        {
            "Sid": "AllowSSMReadActions",
            "Effect": "Allow",
            "Resource": f"arn:{partition}:ssm:{region}::parameter/aws/service/*",
            "Action": "ssm:GetParameter",
        },
        {"Sid": "AllowPricingReadActions", "Effect": "Allow", "Resource": "*", "Action": "pricing:GetProducts"},
        {
            "Sid": "AllowUnscopedInstanceProfileListAction",
            "Effect": "Allow",
            "Resource": "*",
            "Action": "iam:ListInstanceProfiles",
        },
        {
            "Sid": "AllowInstanceProfileReadActions",
            "Effect": "Allow",
            "Resource": f"{iam}:instance-profile/*",
            "Action": "iam:GetInstanceProfile",
        },
    ]
    if volume_key_arn is not None:
        statements += _volume_key_statements(volume_key_arn, region)
    return {"Version": "2012-10-17", "Statement": statements}


def _volume_key_statements(key_arn: str, region: str) -> list[Document]:
    """EC2 Fleet launches with the caller's credentials, so the controller itself must be allowed to have
    EC2 encrypt new volumes with the customer-managed key (EBS user guide, "Permissions for IAM users"
    for encrypted volumes): only through EC2 in this region, grants only for AWS resources."""
    via_ec2 = {"kms:ViaService": f"ec2.{region}.amazonaws.com"}
    return [
        {
            "Sid": "AllowVolumeKeyUseThroughEC2",
            "Effect": "Allow",
            "Resource": key_arn,
            "Action": ["kms:Decrypt", "kms:DescribeKey", "kms:GenerateDataKeyWithoutPlaintext", "kms:ReEncrypt*"],
            "Condition": {"StringEquals": via_ec2},
        },
        {
            "Sid": "AllowVolumeKeyGrantsThroughEC2",
            "Effect": "Allow",
            "Resource": key_arn,
            "Action": "kms:CreateGrant",
            "Condition": {"StringEquals": via_ec2, "Bool": {"kms:GrantIsForAWSResource": "true"}},
        },
    ]


def cluster_autoscaler_policy(*, cluster_name: str, partition: str, region: str, account_id: str) -> Document:
    """The Cluster Autoscaler's policy (its AWS README, "Full Cluster Autoscaler Features Policy"), with
    the write half scoped as that README recommends: scaling and terminating only Auto Scaling groups
    tagged ``k8s.io/cluster-autoscaler/<cluster>=owned`` (inference_platform.components.compute.autoscaler_tags), so it can never
    resize another cluster's nodes. Only Describe calls, which AWS cannot scope, run on ``*``;
    ``eks:DescribeNodegroup`` (labels and taints of a managed group at zero) names this cluster's groups.
    ``ec2:GetInstanceTypesFromInstanceRequirements`` is left out: the groups list explicit instance types."""
    asg = f"arn:{partition}:autoscaling:{region}:{account_id}:autoScalingGroup:*:autoScalingGroupName/*"
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "DescribeScalingTargets",
                "Effect": "Allow",
                "Resource": "*",
                "Action": [
                    "autoscaling:DescribeAutoScalingGroups",
                    "autoscaling:DescribeAutoScalingInstances",
                    "autoscaling:DescribeLaunchConfigurations",
                    "autoscaling:DescribeScalingActivities",
                    "ec2:DescribeImages",
                    "ec2:DescribeInstanceTypes",
                    "ec2:DescribeLaunchTemplateVersions",
                ],
                "Condition": {"StringEquals": {"aws:RequestedRegion": region}},
            },
            {
                "Sid": "DescribeThisClustersNodeGroups",
                "Effect": "Allow",
                "Resource": f"arn:{partition}:eks:{region}:{account_id}:nodegroup/{cluster_name}/*/*",
                "Action": "eks:DescribeNodegroup",
            },
            {
                "Sid": "ScaleThisClustersGroups",
                "Effect": "Allow",
                "Resource": asg,
                "Action": ["autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"],
                "Condition": {"StringEquals": {f"aws:ResourceTag/{ownership_key(cluster_name)}": "owned"}},
            },
        ],
    }


def interruption_queue_policy(queue_arn: str) -> Document:
    """EventBridge (and SQS itself) may send; nobody may use the queue without TLS (Karpenter CFN)."""
    return {
        "Version": "2012-10-17",
        "Id": "EC2InterruptionPolicy",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]},
                "Action": "sqs:SendMessage",
                "Resource": queue_arn,
            },
            {
                "Sid": "DenyHTTP",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "sqs:*",
                "Resource": queue_arn,
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            },
        ],
    }
