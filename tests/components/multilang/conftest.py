"""One plugin process and one engine stand-in for the module that asks for them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.components.multilang.engine_stand_in import EngineStandIn, engine_stand_in
from tests.components.multilang.plugin_process import running_plugin


@pytest.fixture(scope="module")
def engine() -> Iterator[EngineStandIn]:
    with engine_stand_in() as stand_in:
        yield stand_in


@pytest.fixture(scope="module")
def plugin(engine: EngineStandIn, tmp_path_factory: pytest.TempPathFactory):
    with running_plugin(engine.address, tmp_path_factory.mktemp("plugin-cwd")) as stub:
        yield stub
