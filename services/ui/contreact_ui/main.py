"""Entry point: ``contreact-ui`` serves the dashboard (and keeps its projections up to
date) until SIGTERM; ``contreact-ui --rebuild`` rebuilds every projection from the run
logs and exits."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import socket
import sys
from collections.abc import Iterator

import uvicorn

from contreact_bus.connection import connect
from contreact_bus.exceptions import BusError
from contreact_bus.service import heartbeat, setup_logging, stop_on_signals
from contreact_ui.app import create_app
from contreact_ui.exceptions import UIError
from contreact_ui.projection.follower import LogFollower, Notifier
from contreact_ui.projection.rebuild import open_or_rebuild, rebuild
from contreact_ui.semantic import import_libraries
from contreact_ui.settings import UISettings

log = logging.getLogger("contreact_ui")


class Server(uvicorn.Server):
    """uvicorn without its own signal handling: the service stops on SIGTERM/SIGINT
    like every other one (``stop_on_signals``), then cleans up."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def check_address(settings: UISettings) -> None:
    """Fail at once, with the fix, when the address cannot be listened on."""
    try:
        with socket.socket(socket.AF_INET6 if ":" in settings.host else socket.AF_INET) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((settings.host, settings.port))
    except OSError as exc:
        raise UIError(
            f"cannot listen on {settings.host}:{settings.port} ({exc.strerror}): set "
            "CONTREACT_UI_PORT to a free port (or CONTREACT_UI_HOST to another address)"
        ) from None


async def serve(settings: UISettings) -> None:
    check_address(settings)
    redis = await connect(settings.redis, wait=True)
    store = await open_or_rebuild(settings.database, redis, settings.archive_dir)
    notifier = Notifier()
    app = create_app(settings, notifier)
    await asyncio.to_thread(import_libraries)  # before any page: see its docstring
    if settings.warm_search_model:  # in a thread of low priority, behind the pages
        app.state.embedder.warm()
    server = Server(
        uvicorn.Config(
            app,
            host=settings.host,
            port=settings.port,
            log_level="warning",
            timeout_graceful_shutdown=2,
        )
    )
    projector = LogFollower(store, redis, settings.archive_dir, notifier)
    name = f"ui:{settings.instance_name}"
    with stop_on_signals() as stop:
        tasks = [asyncio.create_task(heartbeat(redis, name, settings.heartbeat_s, stop))]
        if settings.project:
            tasks.append(
                asyncio.create_task(
                    projector.run(stop, poll_s=settings.poll_s, discover_s=settings.discover_s)
                )
            )
        tasks.append(asyncio.create_task(_exit_on(stop, server)))
        log.info(
            "dashboard at http://%s:%d/ (projections in %s)",
            settings.host,
            settings.port,
            settings.database,
        )
        try:
            await server.serve()
        finally:
            stop.set()
            await asyncio.gather(*tasks, return_exceptions=True)
            store.close()
            await redis.aclose()
            # Last, so that a kill while it waits finds the store closed: see TextEmbedder.warm
            await asyncio.to_thread(app.state.embedder.close)


async def _exit_on(stop: asyncio.Event, server: uvicorn.Server) -> None:
    await stop.wait()
    server.should_exit = True


async def rebuild_command(settings: UISettings) -> int:
    try:
        redis = await connect(settings.redis)
    except BusError as exc:
        print(f"contreact-ui: Redis is not reachable ({exc}); rebuilding from the archive alone")
        redis = None
    try:
        report = await rebuild(settings.database, redis, settings.archive_dir)
    finally:
        if redis is not None:
            await redis.aclose()
    print(
        f"rebuilt the projections of {report.runs} run(s) ({report.events} events) "
        f"into {settings.database}"
    )
    for run_id, problem in sorted(report.problems.items()):
        print(f"  not projected: {run_id}: {problem}")
    return 0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="contreact-ui", description=__doc__)
    parser.add_argument(
        "--rebuild", action="store_true", help="rebuild every projection from the logs and exit"
    )
    parser.add_argument("--host", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port (default 8765)")
    args = parser.parse_args(argv)
    overrides = {k: v for k, v in (("host", args.host), ("port", args.port)) if v is not None}
    try:
        settings = UISettings(**overrides)
        if args.rebuild:
            sys.exit(asyncio.run(rebuild_command(settings)))
        setup_logging()
        asyncio.run(serve(settings))
    except (UIError, BusError) as exc:
        print(f"contreact-ui: error: {exc}", file=sys.stderr)
        sys.exit(2)
