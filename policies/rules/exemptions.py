"""Exemptions tied to what a workload is, never to its name (issue 28).

An exemption that trusts ``DaemonSet/kube-system/neuron-monitor`` because of its name lets anything that
takes that name (any program that may create a DaemonSet there) run privileged or on the host. So an
exemption names the workload *and* what must be running for it to apply:

    "<Kind>/<namespace>/<name>[/<container>] image=<ref> [image=<ref> ...] [release=<Helm release>]"

- ``image=``: every container the exemption covers (the one container, or every container of the pod for a
  pod-level exemption such as host access) runs exactly one of these images. A ref with a digest
  (``repo:tag@sha256:...``) matches only that digest; a ref with a tag matches that tag, with or without a
  digest added. ``latest`` or an untagged ref never matches. At least one ``image=`` is required: an entry
  naming only the workload trusts its name and matches nothing.
- ``release=``: the object must be a child of the Helm chart release of that name (its parent's URN is a
  ``kubernetes:helm.sh/v4:Chart`` of that name), i.e. installed by the chart, not declared beside it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

HELM_CHART = "kubernetes:helm.sh/v4:Chart"


@dataclass(frozen=True)
class Exemption:
    workload: str
    images: tuple[str, ...]
    release: str | None

    @classmethod
    def parse(cls, entry: str) -> Exemption:
        workload, *parts = str(entry).split()
        images = tuple(p.removeprefix("image=") for p in parts if p.startswith("image="))
        release = next((p.removeprefix("release=") for p in parts if p.startswith("release=")), None)
        return cls(workload, images, release)


def entry(workload: str, *images: str, release: str | None = None) -> str:
    """The config string of an exemption (the format in the module docstring)."""
    return " ".join([workload, *(f"image={i}" for i in images), *([f"release={release}"] if release else [])])


def _pinned(ref: str) -> bool:
    name = ref.split("@", 1)[0]
    tag = name.rsplit(":", 1)[1] if ":" in name.rsplit("/", 1)[-1] else None
    return "@sha256:" in ref or (tag is not None and tag != "latest")


def image_matches(image: str, ref: str) -> bool:
    if not _pinned(ref):
        return False
    if "@" in ref:
        return image == ref
    return image == ref or (image.split("@", 1)[0] == ref and "@sha256:" in image)


def _parent_release(parent: str | None) -> str | None:
    """The release name when ``parent`` (a URN) is a Helm v4 Chart, else None."""
    if not parent or "::" not in parent:
        return None
    *_, types, name = parent.split("::")
    return name if types.rsplit("$", 1)[-1] == HELM_CHART else None


def exempt(entries: Iterable[str], workload: str, images: Iterable[str], parent: str | None = None) -> bool:
    """Whether an entry of ``entries`` covers ``workload`` running ``images`` (under ``parent``)."""
    running = [str(i) for i in images]
    for raw in entries:
        found = Exemption.parse(raw)
        if found.workload != workload or not found.images or not running:
            continue
        if found.release is not None and _parent_release(parent) != found.release:
            continue
        if all(any(image_matches(image, ref) for ref in found.images) for image in running):
            return True
    return False


SENSITIVE_HOST_PATHS = frozenset(
    {"/", "/etc", "/root", "/home", "/proc", "/sys", "/boot", "/var/lib/kubelet", "/var/run", "/run",
     "/var/run/docker.sock", "/run/containerd", "/run/containerd/containerd.sock",
     "/var/run/containerd/containerd.sock", "/var/lib/containerd", "/dev"}
)  # fmt: skip
"""hostPath mounts no exemption covers: the node's root, its configuration and credentials, the kubelet's
state (its client certificates, every pod's secrets) and the container runtime's socket (a container
there starts any container on the node). The device plugins need ``/var/lib/kubelet/device-plugins``,
below these, which stays exemptable."""


def normalised(path: str) -> str:
    """``//``, ``/./``, ``/etc/`` and ``/etc/../`` spelled as the kubelet resolves them."""
    import posixpath

    text = posixpath.normpath("/" + str(path).lstrip("/"))
    return "/" if text in ("/", "//") else text


def sensitive_host_path(path: str) -> bool:
    return normalised(path) in SENSITIVE_HOST_PATHS
