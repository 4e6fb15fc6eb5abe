"""``python -m inference_platform.batch api|worker``: the batch image's two roles.

Settings come from the environment (:mod:`.config`); a bad setting, or a queue that would break the lane's
promises, ends the process with one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from concurrent.futures import ThreadPoolExecutor

from aiohttp import web

from .config import ConfigError, api_config, worker_config

EXIT_CONFIG = 2
RECEIVE_WAIT_SECONDS = 20
"""SQS long polling at its maximum (ReceiveMessage WaitTimeSeconds 0..20): fewest empty receives."""


async def _serve(app: web.Application, address: str, port: int) -> web.AppRunner:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, address, port).start()
    return runner


async def run_api() -> None:
    from . import aws, queue
    from .api import BatchApi
    from .health import Health, metrics_app
    from .monitor import Monitor

    config = api_config(os.environ)
    common = config.common
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(max_workers=32))
    s3, sqs = aws.clients(common, pool=32)
    await asyncio.to_thread(queue.limits, sqs, common)
    store = aws.store(s3, common)
    health = Health(lambda: aws.api_ready(s3, sqs, common))
    api = BatchApi(config, store, sqs)
    runners = [
        await _serve(api.app(health.routes()), config.address, config.port),
        await _serve(metrics_app(health), common.metrics_address, common.metrics_port),
    ]
    logging.getLogger(__name__).info(
        "batch api on %s:%d, metrics on %d", config.address, config.port, common.metrics_port
    )
    monitor = Monitor(store, sqs, common.queue_url, common.dlq_url)
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    try:
        while not stopping.is_set():
            health.beat()
            try:
                await asyncio.to_thread(monitor.step)
            except Exception:
                logging.getLogger(__name__).warning("monitor step failed", exc_info=True)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), config.monitor_interval_seconds)
    finally:
        for runner in runners:
            await runner.cleanup()


async def run_worker() -> None:
    from . import aws, queue
    from .health import Health, metrics_app
    from .worker import Worker

    config = worker_config(os.environ)
    common = config.common
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(max_workers=config.concurrency * 2 + 4))
    s3, sqs = aws.clients(common, pool=config.concurrency * 2 + 4)
    limits = await asyncio.to_thread(queue.limits, sqs, common)
    wait = int(os.environ.get("BATCH_RECEIVE_WAIT_SECONDS", RECEIVE_WAIT_SECONDS))
    worker = Worker(config, aws.store(s3, common), sqs, limits, receive_wait=max(0, min(RECEIVE_WAIT_SECONDS, wait)))
    health = Health(lambda: aws.worker_ready(sqs, common))
    worker.heartbeat = health.beat
    runner = await _serve(metrics_app(health), common.metrics_address, common.metrics_port)
    logging.getLogger(__name__).info(
        "batch worker: concurrency %d, visibility %d s, max receives %d",
        config.concurrency,
        limits.visibility_timeout,
        limits.max_receives,
    )
    try:
        await worker.run()
    finally:
        await runner.cleanup()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m inference_platform.batch", description=__doc__.splitlines()[0])
    parser.add_argument("role", choices=("api", "worker"))
    args = parser.parse_args(argv)
    level = os.environ.get("BATCH_LOG_LEVEL", "INFO").upper()
    logging.basicConfig(
        level=getattr(logging, level, logging.INFO), format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    logging.getLogger("botocore").setLevel(logging.WARNING)
    try:
        asyncio.run(run_api() if args.role == "api" else run_worker())
    except ConfigError as err:
        print(f"batch {args.role}: {err}", file=sys.stderr)
        return EXIT_CONFIG
    return 0


if __name__ == "__main__":
    sys.exit(main())
