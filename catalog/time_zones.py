"""IANA time zones from the ``tzdata`` package, never from the machine the plan runs on.

``zoneinfo.ZoneInfo`` and ``zoneinfo.available_timezones()`` read the host's ``/usr/share/zoneinfo`` first,
where ``localtime``, ``posixrules`` or ``Factory`` exist as files and a planning laptop may carry a zone the
cluster's KEDA (Go's time package with its embedded tzdata) does not. The ``tzdata`` wheel's ``zones`` file is
the IANA list of one release (``tzdata.IANA_VERSION``), the same on every machine.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Final
from zoneinfo import ZoneInfo

import tzdata

IANA_VERSION: Final = tzdata.IANA_VERSION


@functools.cache
def names() -> frozenset[str]:
    """Every zone name of the pinned tzdata release (``Europe/Paris``, ``UTC``; no ``localtime``), but
    ``Factory``, IANA's placeholder for "time zone not set" (abbreviation ``-00``), which schedules nothing."""
    listed = resources.files("tzdata").joinpath("zones").read_text(encoding="utf-8").split()
    return frozenset(listed) - {"Factory"}


def is_zone(name: str) -> bool:
    return name in names()


@functools.cache
def zone(name: str) -> ZoneInfo:
    """The zone ``name`` read from the tzdata package (KeyError when it is not an IANA zone)."""
    if name not in names():
        raise KeyError(name)
    path = resources.files("tzdata.zoneinfo").joinpath(*name.split("/"))
    with path.open("rb") as f:
        return ZoneInfo.from_file(f, key=name)
