"""The Pulumi program (``main: infra/``). All composition lives in :mod:`infra.program`."""

from infra.program import main

main()
