"""Compare what the repository pins with the newest upstream releases, and say it.

Each row is one pin: ``current``, ``update`` (with the newer release) or ``not checked`` (with why). Then the pinned
facts (tools/deps_check/facts.py) whose upstream moved, with the files to re-read. The exit status is the answer:
0 every source answered and every pin is current, 1 updates are available, 2 some source could not be checked
(the updates found are still listed; an unchecked pin is never reported as current).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Literal

from packaging.version import InvalidVersion, Version

from tools.deps_check import upstream
from tools.deps_check.facts import FACTS, PinnedFact
from tools.deps_check.pins import Pins

ALL_CURRENT, UPDATES, NOT_CHECKED = 0, 1, 2
Status = Literal["current", "update", "not checked"]
WORKERS = 8


@dataclasses.dataclass(frozen=True)
class Row:
    kind: str
    """``pypi``, ``chart``, ``image``, ``tool`` or ``table``."""
    name: str
    pinned: str
    status: Status
    newest: str = ""
    why: str = ""
    where: str = ""


@dataclasses.dataclass(frozen=True)
class Report:
    rows: tuple[Row, ...]
    facts: tuple[tuple[PinnedFact, str], ...]
    """Pinned facts whose upstream has a newer release than they were read at, with that release."""

    @property
    def exit_code(self) -> int:
        if any(r.status == "not checked" for r in self.rows):
            return NOT_CHECKED
        return UPDATES if any(r.status == "update" for r in self.rows) else ALL_CURRENT


def _newer(pinned: str, newest: str) -> bool:
    try:
        return Version(newest.removeprefix("v")) > Version(pinned.removeprefix("v"))
    except InvalidVersion:
        return newest != pinned


def _lookup(get: upstream.Fetch) -> Callable[[str], tuple[str, str]]:
    """name -> (newest PyPI release or "", why not), each name asked once."""
    cache: dict[str, tuple[str, str]] = {}

    def latest(name: str) -> tuple[str, str]:
        if name not in cache:
            try:
                cache[name] = (upstream.pypi_latest(name, get), "")
            except upstream.Unreachable as err:
                cache[name] = ("", str(err))
        return cache[name]

    return latest


def _row(kind: str, name: str, pinned: str, newest: str, why: str, where: str) -> Row:
    if why:
        return Row(kind, name, pinned, "not checked", why=why, where=where)
    status: Status = "update" if _newer(pinned, newest) else "current"
    return Row(kind, name, pinned, status, newest=newest, where=where)


def build(pins: Pins, get: upstream.Fetch | None = None) -> Report:
    get = get or upstream.fetch  # looked up at call time: the tests replace it with recorded answers
    latest = _lookup(get)
    names = sorted({d.name for d in pins.distributions} | {t.distribution for t in pins.tables})
    with ThreadPoolExecutor(WORKERS) as pool:
        list(pool.map(latest, names))
    rows: list[Row] = []
    for dist in pins.distributions:
        newest, why = latest(dist.name)
        oldest = min(dist.versions, key=lambda v: Version(v))
        rows.append(_row("pypi", dist.name, " | ".join(dist.versions), newest, why, ", ".join(dist.locks)))
        if not why and rows[-1].status == "current" and _newer(oldest, newest):
            rows[-1] = dataclasses.replace(rows[-1], status="update")
    for chart in pins.charts:
        try:
            if chart.repository:
                newest, why = upstream.helm_latest(chart.repository, chart.chart, get), ""
            else:
                tags = upstream.oci_tags(chart.chart, get)
                newer = upstream.newer_tags(chart.version, tags)
                newest, why = (newer[-1] if newer else chart.version), ""
        except upstream.Unreachable as err:
            newest, why = "", str(err)
        where = f"{chart.path} {chart.constant}"
        rows.append(_row("chart", chart.chart, chart.version, newest, why, where))
    for image in pins.images:
        try:
            newer = upstream.newer_tags(image.tag, upstream.oci_tags(image.image, get), same_line=image.same_line)
            newest, why = (newer[-1] if newer else image.tag), ""
        except upstream.Unreachable as err:
            newest, why = "", str(err)
        row = _row("image", image.image, image.tag, newest, why, f"{image.path} {image.what}")
        rows.append(dataclasses.replace(row, status="update") if newest and newest != image.tag else row)
    for tool in pins.tools:
        if not tool.source:
            rows.append(Row("tool", tool.what, tool.version, "not checked", why=tool.why_unchecked, where=tool.path))
            continue
        try:
            newest, why = upstream.text_version(tool.source, get), ""
        except upstream.Unreachable as err:
            newest, why = "", str(err)
        rows.append(_row("tool", tool.what, tool.version, newest, why, tool.path))
    for table in pins.tables:
        newest, why = latest(table.distribution)
        rows.append(
            _row(
                "table",
                table.what,
                f"{table.distribution} {table.read_at}",
                newest and f"{table.distribution} {newest}",
                why,
                table.path,
            )
        )
    return Report(tuple(rows), tuple(_moved_facts(pins, rows, latest)))


def _moved_facts(pins: Pins, rows: list[Row], latest: Callable[[str], tuple[str, str]]) -> list[tuple[PinnedFact, str]]:
    moved = []
    charts = {r.name.rsplit("/", 1)[-1]: r for r in rows if r.kind == "chart"}
    for fact in FACTS:
        if fact.kind == "pypi":
            newest, why = latest(fact.name)
        else:
            row = charts.get(fact.name)
            newest, why = (row.newest, row.why) if row else ("", "not pinned by the catalog")
        if not why and _newer(fact.read_at, newest):
            moved.append((fact, newest))
    return moved


def render(report: Report, *, verbose: bool = False) -> str:
    lines = []
    for status, title in (("update", "Newer upstream releases"), ("not checked", "Not checked")):
        chosen = [r for r in report.rows if r.status == status]
        if not chosen:
            continue
        lines.append(f"{title} ({len(chosen)}):")
        for r in chosen:
            detail = f"{r.pinned} -> {r.newest}" if status == "update" else f"{r.pinned}: not checked: {r.why}"
            lines.append(f"  {r.kind:<5} {r.name} {detail}  [{r.where}]")
    if verbose:
        current = [r for r in report.rows if r.status == "current"]
        lines.append(f"Current ({len(current)}):")
        lines += [f"  {r.kind:<5} {r.name} {r.pinned}  [{r.where}]" for r in current]
    if report.facts:
        lines.append("Pinned facts to re-read (their upstream moved past the version they were read at):")
        for fact, newest in report.facts:
            lines.append(f"  {fact.kind}:{fact.name} read at {fact.read_at}, newest {newest}: {fact.reread}")
            lines.append(f"    files: {', '.join(fact.files)}")
    counts = {s: sum(r.status == s for r in report.rows) for s in ("current", "update", "not checked")}
    verdict = {ALL_CURRENT: "all current", UPDATES: "updates available", NOT_CHECKED: "could not check everything"}
    lines.append(
        f"{len(report.rows)} pins: {counts['current']} current, {counts['update']} with a newer release, "
        f"{counts['not checked']} not checked: {verdict[report.exit_code]} (exit {report.exit_code})"
    )
    return "\n".join(lines)
