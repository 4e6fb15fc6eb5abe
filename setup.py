"""Maps the repository's top-level folders into the one ``inference_platform`` namespace.

pyproject.toml holds the metadata; only the folder-to-package mapping, which needs a loop, lives here.
"""

from setuptools import find_packages, setup

# Each folder is one area of the house (docs/architecture.md); installed, it is inference_platform.<folder>.
FOLDERS = (
    "catalog",
    "settings",
    "components",
    "infra",
    "policies",
    "inference_image",
    "inferctl",
    "artifacts",
    "offline_plan",
    "planners",
    "loadgen",
    "batch",
)

packages = ["inference_platform"]
for folder in FOLDERS:
    packages += [f"inference_platform.{name}" for name in find_packages(include=[folder, f"{folder}.*"])]

setup(
    packages=packages,
    package_dir={"inference_platform": "inference_platform", **{f"inference_platform.{f}": f for f in FOLDERS}},
)
