"""A loopback TCP proxy that can delay, drop, reset and black-hole the connections it carries."""

import asyncio
import socket
import struct
import threading

PASS, DELAY, DROP, RESET, BLACKHOLE = "pass", "delay", "drop", "reset", "blackhole"


class FaultProxy:
    """Forwards 127.0.0.1:listen_port to 127.0.0.1:target_port on the loop it is given.

    Modes (set with `set_mode`, thread-safe through the loop):
      pass       forward as is;
      delay      hold every chunk `delay_ms` before forwarding it;
      drop       close every open connection (FIN) and new ones at once, unanswered;
      reset      send RST on every open connection and on new ones;
      blackhole  accept, then forward nothing either way until the mode changes (what was held
                 is then delivered, as TCP does after a partition heals).
    """

    def __init__(self, loop, name, target_port):
        self.loop = loop
        self.name = name
        self.target_port = target_port
        self.mode = PASS
        self.delay_ms = 0
        self._links = set()
        self._resume = asyncio.Event()
        self._resume.set()
        self.connections = 0
        self._server = None
        self.port = 0

    async def start(self):
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    def set_mode(self, mode, delay_ms=0):
        done = threading.Event()

        def apply():
            self.mode = mode
            self.delay_ms = delay_ms
            if mode == BLACKHOLE:
                self._resume.clear()
            else:
                self._resume.set()
            if mode in (RESET, DROP):
                for w in list(self._links):
                    _reset(w) if mode == RESET else w.close()
            done.set()

        self.loop.call_soon_threadsafe(apply)
        done.wait(5)

    async def _serve(self, reader, writer):
        self.connections += 1
        if self.mode == DROP:
            writer.close()
            return
        if self.mode == RESET:
            _reset(writer)
            return
        try:
            up_r, up_w = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            _reset(writer)
            return
        self._links.update((writer, up_w))
        await asyncio.gather(self._pipe(reader, up_w), self._pipe(up_r, writer), return_exceptions=True)
        self._links.discard(writer)
        self._links.discard(up_w)
        for w in (writer, up_w):
            w.close()

    async def _pipe(self, reader, writer):
        try:
            while True:
                await self._resume.wait()
                data = await reader.read(65536)
                if not data:
                    break
                await self._resume.wait()
                if self.mode == DELAY and self.delay_ms:
                    await asyncio.sleep(self.delay_ms / 1000.0)
                writer.write(data)
                await writer.drain()
        except (OSError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            try:
                if writer.can_write_eof():
                    writer.write_eof()
            except (OSError, RuntimeError):
                pass


def _reset(writer):
    sock = writer.get_extra_info("socket")
    try:
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()
    except OSError:
        pass


class ProxyHost:
    """Runs proxies on an asyncio loop in a thread of its own."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def add(self, name, target_port):
        proxy = FaultProxy(self.loop, name, target_port)
        asyncio.run_coroutine_threadsafe(proxy.start(), self.loop).result(10)
        return proxy

    def stop(self):
        self.loop.call_soon_threadsafe(self.loop.stop)
