"""The newest upstream releases: PyPI's JSON API, a Helm repository's index.yaml, an OCI registry's tag list
(anonymous token where the registry asks for one), a URL answering a version as text.

Every lookup goes through a ``Fetch`` (URL, headers -> bytes), so the tests replay recorded answers. A source that
cannot be reached raises ``Unreachable`` with the reason, which the report prints as "not checked", never as current.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping

import yaml
from packaging.version import InvalidVersion, Version

TIMEOUT = 20
Fetch = Callable[[str, Mapping[str, str]], bytes]


class Unreachable(Exception):
    """The source did not answer (network, HTTP error, unexpected content): the reason is the message."""

    def __init__(self, message: str, challenge: str = "") -> None:
        super().__init__(message)
        self.challenge = challenge
        """A 401's ``WWW-Authenticate`` header: how an OCI registry hands out an anonymous token."""


def fetch(url: str, headers: Mapping[str, str] | None = None) -> bytes:
    request = urllib.request.Request(url, headers={"User-Agent": "inference-platform deps-check", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return response.read()
    except urllib.error.HTTPError as err:
        raise Unreachable(f"{url}: HTTP {err.code}", err.headers.get("WWW-Authenticate", "")) from None
    except (urllib.error.URLError, OSError, ValueError) as err:
        reason = getattr(err, "reason", err)
        raise Unreachable(f"{url}: {reason}") from None


def _stable(versions: Iterable[str]) -> list[Version]:
    found = []
    for text in versions:
        try:
            version = Version(text)
        except InvalidVersion:
            continue
        if not version.is_prerelease and not version.is_devrelease:
            found.append(version)
    return sorted(found)


def pypi_latest(name: str, get: Fetch = fetch) -> str:
    """The newest final release of ``name`` on PyPI that has files not all yanked."""
    try:
        data = json.loads(get(f"https://pypi.org/pypi/{name}/json", {"Accept": "application/json"}))
    except json.JSONDecodeError as err:
        raise Unreachable(f"PyPI answered no JSON for {name}: {err}") from None
    releases = {
        v: files for v, files in data.get("releases", {}).items() if files and not all(f.get("yanked") for f in files)
    }
    stable = _stable(releases)
    if stable:
        return str(stable[-1])
    # Only pre-releases (opentelemetry's instrumentation betas): the newest of those.
    every = sorted(Version(v) for v in releases if _valid(v))
    if not every:
        raise Unreachable(f"PyPI lists no release of {name} with files")
    return str(every[-1])


def _valid(text: str) -> bool:
    try:
        Version(text)
    except InvalidVersion:
        return False
    return True


def _chart_version(text: str) -> Version | None:
    try:
        version = Version(text.removeprefix("v"))
    except InvalidVersion:
        return None
    return None if version.is_prerelease else version


def helm_latest(repository: str, chart: str, get: Fetch = fetch) -> str:
    """The newest final version of ``chart`` in a Helm repository's index.yaml (its own spelling, ``v`` kept)."""
    url = repository.rstrip("/") + "/index.yaml"
    try:
        index = yaml.safe_load(get(url, {}))
    except yaml.YAMLError as err:
        raise Unreachable(f"{url}: not a Helm index ({err})") from None
    entries = (index or {}).get("entries", {}).get(chart)
    if not entries:
        raise Unreachable(f"{url} lists no chart {chart}")
    versions = [(v, e["version"]) for e in entries if (v := _chart_version(str(e["version"]))) is not None]
    return max(versions)[1]


def _registry(image: str) -> tuple[str, str]:
    """(registry host, repository) of an image or ``oci://`` reference; Docker Hub's API host for docker.io."""
    reference = image.removeprefix("oci://")
    host, _, repository = reference.partition("/")
    return ("registry-1.docker.io" if host == "docker.io" else host), repository


def _token(challenge: str, get: Fetch) -> str:
    """An anonymous pull token from the realm a registry's ``WWW-Authenticate: Bearer`` challenge names."""
    params = dict(re.findall(r'(\w+)="([^"]*)"', challenge))
    if not challenge.startswith("Bearer") or "realm" not in params:
        raise Unreachable(f"the registry asks for credentials ({challenge or 'no challenge'})")
    query = urllib.parse.urlencode({k: v for k, v in params.items() if k in ("service", "scope")})
    answer = json.loads(get(f"{params['realm']}?{query}", {}))
    return answer.get("token") or answer["access_token"]


def oci_tags(image: str, get: Fetch = fetch) -> list[str]:
    """Every tag of an OCI repository (``/v2/<repository>/tags/list``), following ``Link`` pagination only as far
    as the first page: registries list hundreds per page, enough for the newest of a line here."""
    host, repository = _registry(image)
    url = f"https://{host}/v2/{repository}/tags/list?n=1000"
    try:
        body = get(url, {})
    except Unreachable as err:
        if "HTTP 401" not in str(err):
            raise
        token = _token(err.challenge, get)
        body = get(url, {"Authorization": f"Bearer {token}"})
    return list(json.loads(body).get("tags") or [])


TAG = re.compile(r"^(?P<prefix>v?)(?P<numbers>\d+(?:\.\d+)*)(?P<suffix>.*)$")


def newer_tags(pinned: str, tags: Iterable[str], *, same_line: bool = False) -> list[str]:
    """The tags of the same shape as ``pinned`` (prefix, as many numbers, same suffix: ``26.07-trtllm-python-py3``,
    ``7.4.5-alpine``) and newer, newest last; ``same_line`` keeps only those of the same first two numbers."""
    match = TAG.match(pinned)
    if not match:
        return []
    numbers = tuple(int(n) for n in match["numbers"].split("."))
    found = []
    for tag in tags:
        other = TAG.match(tag)
        if not other or (other["prefix"], other["suffix"]) != (match["prefix"], match["suffix"]):
            continue
        theirs = tuple(int(n) for n in other["numbers"].split("."))
        if len(theirs) == len(numbers) and theirs > numbers and (not same_line or theirs[:2] == numbers[:2]):
            found.append((theirs, tag))
    return [tag for _, tag in sorted(found)]


def text_version(url: str, get: Fetch = fetch) -> str:
    return get(url, {}).decode().strip().removeprefix("v")
