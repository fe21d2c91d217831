"""A TCP proxy in front of Redis that can lose an answer: it forwards a request to
Redis, lets Redis run it, then cuts the client's connection instead of passing the
reply on. The client sees a reset; Redis did the work. That is the write "whose
outcome is unknown" which the orchestrator must survive without appending twice."""

from __future__ import annotations

import asyncio
import contextlib


class CuttingProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._server: asyncio.Server | None = None
        self._marker: bytes | None = None
        self._cut: set[int] = set()
        self.cuts = 0

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return int(self._server.sockets[0].getsockname()[1])

    def cut_reply_after(self, marker: bytes) -> None:
        """Cut the connection carrying the next request that contains ``marker``, once
        Redis has answered it."""
        self._marker = marker

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self._target)
        link = id(writer)
        ends = (writer, up_writer)

        async def requests() -> None:
            tail = b""
            while data := await reader.read(65536):
                seen = tail + data
                if self._marker is not None and self._marker in seen:
                    self._marker = None
                    self._cut.add(link)
                tail = seen[-256:]
                up_writer.write(data)
                await up_writer.drain()

        async def replies() -> None:
            while data := await up_reader.read(65536):
                if link in self._cut:
                    self._cut.discard(link)
                    self.cuts += 1
                    break  # Redis answered; the client never hears it
                writer.write(data)
                await writer.drain()

        pumps = [asyncio.create_task(requests()), asyncio.create_task(replies())]
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pump in pumps:
                pump.cancel()
            for pump in pumps:
                with contextlib.suppress(asyncio.CancelledError, ConnectionError, OSError):
                    await pump
            for end in ends:
                end.close()
                with contextlib.suppress(ConnectionError, OSError):
                    await end.wait_closed()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
