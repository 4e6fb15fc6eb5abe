"""Keys, a VPC, a GPU pool, a model store, an image repository and an inference service from inference_platform's
public components, wired as the pack requires: every volume, log and bucket under the program's own keys, the
image from the program's own repository, the ServiceMonitor after the release that installs its CRD."""

from typing import Any

import pulumi_kubernetes as k8s
from components.naming import NamePrefix

from inference_platform.components.compute import NodePool, NodePoolArgs, PoolSpec, profile
from inference_platform.components.keys import Keys, KeysArgs
from inference_platform.components.network import FlowLogsArgs, Network, NetworkArgs
from inference_platform.components.serving import (
    Exposure,
    ImageRepository,
    ImageRepositoryArgs,
    InferenceService,
    InferenceServiceArgs,
    ModelSource,
    Placement,
    Resources,
    ServingControllers,
    ServingControllersArgs,
)
from inference_platform.components.storage import ModelStore, ModelStoreArgs
from inference_platform.settings.serving import ServingSettings
from policies import GPU_INSTANCE_TYPES

ACCOUNT = "123456789012"
REGION = "us-west-2"
ZONES = ("us-west-2a", "us-west-2b")
# EC2 Auto Scaling's service-linked role launches the managed node group's instances: the storage key's policy
# admits it, or an instance with an encrypted root volume fails to launch.
AUTOSCALING_ROLE = (
    f"arn:aws:iam::{ACCOUNT}:role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling"
)
IMAGE_DIGEST = "sha256:" + "0" * 64


def build(prefix: NamePrefix) -> dict[str, Any]:
    name = str(prefix)
    keys = Keys("keys", KeysArgs(alias_prefix=name, account_id=ACCOUNT, region=REGION,
                                 volume_service_role_arns=[AUTOSCALING_ROLE]))  # fmt: skip
    network = Network(
        "network",
        NetworkArgs(cidr="10.20.0.0/16", availability_zones=list(ZONES), region=REGION, cluster_name=name,
                    account_id=ACCOUNT, flow_logs=FlowLogsArgs(kms_key_arn=keys.logs_key_arn)),
    )  # fmt: skip
    pool = profile(PoolSpec(name="gpu", instance_types=GPU_INSTANCE_TYPES, max_size=2), ZONES)
    NodePool(
        "gpu",
        NodePoolArgs(cluster_name=name, name_prefix=name, kubernetes_version="1.36",
                     node_role_arn=f"arn:aws:iam::{ACCOUNT}:role/{name}-nodes", pool=pool,
                     subnet_ids_by_zone=network.private_subnet_ids_by_zone, security_group_ids=["sg-nodes"],
                     instance_tags={"team": prefix.team}, volume_kms_key_arn=keys.storage_key_arn),
    )  # fmt: skip
    store = ModelStore("models", ModelStoreArgs(name_prefix=name, account_id=ACCOUNT, kms_key_arn=keys.storage_key_arn))
    images = ImageRepository("images", ImageRepositoryArgs(name=f"{name}/inference", kms_key_arn=keys.storage_key_arn))
    cluster = k8s.Provider("cluster", kubeconfig="{}")
    controllers = ServingControllers("controllers", ServingControllersArgs(k8s_provider=cluster, prometheus_crds=True))
    InferenceService(
        "llm",
        InferenceServiceArgs(
            k8s_provider=cluster,
            namespace="inference",
            service_account="triton",
            image=images.repository_url.apply(lambda url: f"{url}@{IMAGE_DIGEST}"),
            image_version="1.0.0",
            serving_config=ServingSettings.model_validate({"model": "Llama-3.1-8B", "precision": "fp8"}),
            model=ModelSource(kind="download", engine_uri="s3://models/engine/v1/", tokenizer_uri="s3://models/tok/v1/",
                              volume_gib=20),
            placement=Placement(pool="gpu", accelerators=1),
            resources=Resources(cpu=3, memory_gib=12),
            region=REGION,
            exposure=Exposure(load_balancer_cidrs=["10.20.192.0/24"]),
            depends_on=[controllers.releases["prometheus_crds"]],
        ),
    )  # fmt: skip
    return {"bucket": store.bucket_name}
