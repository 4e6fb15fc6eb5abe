"""The Pulumi program (``main: infra/``). All composition lives in :mod:`inference_platform.infra.program`."""

from inference_platform.infra.program import main

main()
