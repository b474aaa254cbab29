"""The server half of the Python env bridge: a small asyncio WebSocket server (standard library only) speaking the
env wire protocol of `ragen env serve` (src/env/remote/protocol.ts): one EnvAdapter per session, the same limits
and error codes.
"""

import asyncio
import base64
import hashlib
import hmac
import json
import re
import struct
import sys
import time
from urllib.parse import parse_qs, unquote, urlsplit

from ragen_env_adapter import ProtocolError

PROTOCOL_VERSION = 2  # 2: observation images (see src/env/remote/protocol.ts)
_WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
# The codes after which the server closes the session (see src/env/remote/protocol.ts).
_CLOSING = {
    "CAPACITY_REACHED",
    "FACTORY_ERROR",
    "STEP_TIMEOUT",
    "UNKNOWN_ENV",
    "CONFIG_ERROR",
    "IDLE_TIMEOUT",
    "SERVER_SHUTDOWN",
}


class Bridge:
    """The server: one EnvAdapter per WebSocket session, the same limits and error codes as `ragen env serve`."""

    def __init__(
        self,
        specs,
        max_sessions=256,
        idle_timeout=300.0,
        max_message_bytes=1 << 20,
        step_timeout=30.0,
        log=None,
        token=None,
    ):
        self.specs = dict(specs)
        self.token = token or None  # clients send "Authorization: Bearer <token>" (RAGEN_ENV_TOKEN)
        self.max_sessions = max_sessions
        self.idle_timeout = idle_timeout
        self.max_message_bytes = max_message_bytes
        self.step_timeout = step_timeout
        write = log or (lambda line: print(line, file=sys.stderr, flush=True))
        self.log = lambda line: write(escape_control(line))  # client bytes reach log lines: no terminal escapes
        self.sessions = 0
        self._next_id = 1

    def metadata(self):
        envs = []
        for env_id, spec in self.specs.items():
            adapter = spec.adapter(spec.config)
            envs.append(
                {
                    "id": env_id,
                    "description": spec.description,
                    "instruction": spec.instruction,
                    "legend": spec.legend,
                    "actionNames": adapter.action_names(),
                    "observationSpace": spec.space(spec.config),
                    "maxActionsPerEpisode": spec.max_actions_per_episode,
                    "hasSolver": False,
                    "config": spec.config,
                }
            )
            adapter.close()
        return {
            "name": "ragen-ts python bridge",
            "description": "Python environments: " + ", ".join(self.specs),
            "version": "0.1.0",
            "protocol": PROTOCOL_VERSION,
            "envs": envs,
        }

    def schema(self):
        return {
            "action": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            "observation": {
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "images": {"type": "array", "description": "base64 PNGs: {width, height, format: png, data}"},
                },
                "required": ["text"],
            },
            "state": {
                "type": "object",
                "properties": {"episode_id": {"type": ["string", "null"]}, "step_count": {"type": "integer"}},
            },
            "config": {
                k: {"type": "object", "properties": {key: {} for key in s.config}} for k, s in self.specs.items()
            },
        }

    async def handle(self, reader, writer):
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError, ConnectionError):
            writer.close()
            return
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                headers[k.strip().lower()] = v.strip()
        target = parts[1] if len(parts) >= 2 else "/"
        authorized = self.authorized(headers)
        if headers.get("upgrade", "").lower() != "websocket":
            return await self._http(writer, parts[0], target, authorized)
        if not authorized:
            self.log(f"[bridge] refused a session ({target[:200]}): missing or wrong token")
            writer.write(
                b"HTTP/1.1 401 Unauthorized\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"
                b"This env server needs its token: send `Authorization: Bearer <token>` (set RAGEN_ENV_TOKEN on the client).\n"
            )
            await writer.drain()
            writer.close()
            return
        key = headers.get("sec-websocket-key", "")
        accept = base64.b64encode(hashlib.sha1((key + _WS_GUID).encode()).digest()).decode()
        writer.write(
            (
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Accept: {accept}\r\n\r\n"
            ).encode()
        )
        await writer.drain()
        await Session(self, reader, writer, target).run()

    def authorized(self, headers):
        """Whether the request carries the token (always, without one); digests compared in constant time."""
        if self.token is None:
            return True
        got = headers.get("authorization", "")
        given = got[7:] if got.startswith("Bearer ") else ""
        return hmac.compare_digest(
            hashlib.sha256(given.encode()).digest(), hashlib.sha256(self.token.encode()).digest()
        )

    async def _http(self, writer, method, target, authorized=True):
        path = urlsplit(target).path
        routes = {
            "/health": lambda: {"status": "healthy", "sessions": self.sessions, "maxSessions": self.max_sessions},
            "/metadata": self.metadata,
            "/schema": self.schema,
        }
        if path != "/health" and not authorized:
            status, body = (
                "401 Unauthorized",
                {
                    "error": "This env server needs its token: send `Authorization: Bearer <token>` (set RAGEN_ENV_TOKEN on the client)."
                },
            )
        elif method != "GET" or path not in routes:
            status, body = (
                "404 Not Found",
                {"error": f"No route {method} {path}: use GET /health, /metadata, /schema or a WebSocket at /<EnvId>."},
            )
        else:
            try:
                status, body = "200 OK", routes[path]()
            except Exception as err:  # an env factory failing in /metadata is the server's problem, reported
                self.log(f"[bridge] {path} failed: {err!r}")
                status, body = "500 Internal Server Error", {"error": repr(err)}
        data = json.dumps(body).encode()
        writer.write(
            (
                "HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                % (status, len(data))
            ).encode()
            + data
        )
        await writer.drain()
        writer.close()


class Session:
    """One WebSocket connection: frames in, typed replies out, one env instance."""

    def __init__(self, bridge, reader, writer, target):
        self.bridge, self.reader, self.writer, self.target = bridge, reader, writer, target
        self.adapter = None
        self.space = None  # the observation space under this session's config
        self.env_id = None
        self.step_count = 0
        self.episode_id = None
        self.episodes = 0
        self.last_active = time.monotonic()
        self.id = bridge._next_id
        bridge._next_id += 1

    async def run(self):
        b = self.bridge
        if b.sessions >= b.max_sessions:
            await self.refuse(
                "CAPACITY_REACHED",
                "The bridge holds its maximum of %d sessions; retry later." % b.max_sessions,
                1013,
                active_sessions=b.sessions,
                max_sessions=b.max_sessions,
            )
            return
        url = urlsplit(self.target)
        query = parse_qs(url.query)
        parts = [unquote(p) for p in url.path.split("/") if p]
        name = (query.get("env") or [None])[0] if parts in ([], ["ws"]) else parts[-1]
        if name is None and len(b.specs) == 1:
            name = next(iter(b.specs))
        match = [k for k in b.specs if name is not None and k.lower() == name.lower()]
        if not match:
            await self.refuse(
                "UNKNOWN_ENV", "No served env {!r}; this bridge serves {}.".format(name, ", ".join(b.specs)), 1008
            )
            return
        self.env_id = match[0]
        spec = b.specs[self.env_id]
        try:
            overrides = json.loads((query.get("config") or ["{}"])[0])
            if not isinstance(overrides, dict):
                raise ValueError("the config query parameter must be a JSON object")
            unknown = [k for k in overrides if k not in spec.config]
            if unknown:
                raise ValueError(
                    "unknown config key {!r}; valid keys: {}".format(unknown[0], ", ".join(spec.config) or "none")
                )
            config = dict(spec.config, **overrides)
        except ValueError as err:
            await self.refuse("CONFIG_ERROR", f"Bad config for {self.env_id}: {err}", 1008)
            return
        try:
            self.adapter = spec.adapter(config)
            self.space = spec.space(config)
        except Exception as err:
            await self.refuse("FACTORY_ERROR", f"Creating {self.env_id} failed: {err!r}", 1008)
            return
        b.sessions += 1
        reaper = asyncio.ensure_future(self.reap())
        try:
            await self.loop()
        finally:
            reaper.cancel()
            b.sessions -= 1
            if self.adapter.running:
                b.log(
                    "[bridge] session %d (%s) ended mid-episode (after step %d); env closed"
                    % (self.id, self.env_id, self.step_count)
                )
            try:
                self.adapter.close()
            except Exception as err:
                b.log("[bridge] session %d: close() raised %r" % (self.id, err))
            self.writer.close()

    async def loop(self):
        while True:
            try:
                message = await self.read_message()
            except (asyncio.IncompleteReadError, ConnectionError):
                return  # the client vanished
            if message is None:
                return  # close frame
            self.last_active = time.monotonic()
            if isinstance(message, ProtocolError):
                await self.error(message.code, str(message))
                continue
            try:
                reply, close = await self.answer(message)
                data = None if close else json.dumps(reply)
            except ProtocolError as err:
                await self.error(err.code, str(err))
                if err.code in _CLOSING:
                    await self.close_frame(1011)
                    return
                continue
            except Exception as err:  # render() raising, an unserialisable observation: answered, logged, session kept
                self.bridge.log("[bridge] session %d (%s): internal error %r" % (self.id, self.env_id, err))
                await self.error("EXECUTION_ERROR", f"The bridge failed to answer: {err!r}")
                continue
            if close:
                await self.close_frame(1000)
                return
            await self.frame(0x1, data.encode())

    async def answer(self, text):
        try:
            msg = json.loads(text)
        except ValueError as err:
            raise ProtocolError("INVALID_JSON", f"Invalid JSON ({err}).") from err
        if not isinstance(msg, dict):
            raise ProtocolError("VALIDATION_ERROR", "A message must be a JSON object.")
        data = msg.get("data") or {}
        if not isinstance(data, dict):
            raise ProtocolError("VALIDATION_ERROR", "`data` must be an object.")
        kind = msg.get("type")
        if kind == "close":
            return None, True
        if kind == "state":
            return {
                "type": "state",
                "data": {
                    "episode_id": self.episode_id,
                    "step_count": self.step_count,
                    "env": self.env_id,
                    "status": "running" if self.adapter.running else ("new" if self.episodes == 0 else "ended"),
                    "render": self.adapter.render() if self.episodes else None,
                },
            }, False
        if kind == "reset":
            seed, mode = data.get("seed", 0), data.get("mode", "train")
            if seed is None:
                seed = 0
            if not isinstance(seed, int) or isinstance(seed, bool):
                raise ProtocolError("VALIDATION_ERROR", f"`data.seed` must be an integer, got {seed!r}.")
            if mode not in ("train", "val"):
                raise ProtocolError("VALIDATION_ERROR", f'`data.mode` must be "train" or "val", got {mode!r}.')
            obs, info = await self.call(self.adapter.reset, seed, mode, data.get("options"))
            self.step_count = 0
            self.episodes += 1
            self.episode_id = data.get("episode_id") or "%d-%d" % (self.id, self.episodes)
            reply = self.observation(obs, None, False, False, info)
            reply["data"]["instruction"] = self.bridge.specs[self.env_id].instruction
            reply["data"]["legend"] = self.bridge.specs[self.env_id].legend
            reply["data"]["observationSpace"] = self.space
            return reply, False
        if kind == "step":
            if not isinstance(data.get("text"), str):
                raise ProtocolError("VALIDATION_ERROR", "A step needs `data.text`, the action as a string.")
            obs, reward, terminated, truncated, info = await self.call(self.adapter.step, data["text"])
            self.step_count += 1
            return self.observation(obs, reward, terminated, truncated, info), False
        raise ProtocolError("UNKNOWN_TYPE", f"Unknown message type {kind!r}; use reset, step, state or close.")

    async def call(self, fn, *args):
        """Runs an env call in a worker thread under the step limit; env exceptions become EXECUTION_ERROR."""
        loop = asyncio.get_running_loop()
        try:
            return await asyncio.wait_for(loop.run_in_executor(None, fn, *args), self.bridge.step_timeout)
        except ProtocolError:
            raise
        except asyncio.TimeoutError:
            self.adapter.running = False
            raise ProtocolError(
                "STEP_TIMEOUT", f"The env call took longer than {self.bridge.step_timeout:g} s; the session is closed."
            ) from None
        except Exception as err:
            self.adapter.running = False
            self.bridge.log("[bridge] session %d (%s): the env raised %r" % (self.id, self.env_id, err))
            raise ProtocolError(
                "EXECUTION_ERROR", f"The env raised {err!r}. The episode is over; reset to start a new one."
            ) from err

    def observation(self, text, reward, terminated, truncated, info):
        observation = {"text": text}
        if self.adapter.last_images:
            observation["images"] = self.adapter.last_images
        return {
            "type": "observation",
            "data": {
                "observation": observation,
                "reward": reward,
                "done": terminated or truncated,
                "terminated": terminated,
                "truncated": truncated,
                "info": info,
                "render": self.adapter.render(),
                "actionNames": self.adapter.action_names(),
                "episode_id": self.episode_id,
                "step_count": self.step_count,
            },
        }

    async def reap(self):
        b = self.bridge
        while True:
            await asyncio.sleep(min(5.0, max(0.05, b.idle_timeout / 4)))
            if time.monotonic() - self.last_active > b.idle_timeout:
                b.log("[bridge] session %d (%s) reaped after %g s idle" % (self.id, self.env_id, b.idle_timeout))
                await self.error("IDLE_TIMEOUT", f"No message for {b.idle_timeout:g} s; the session is closed.")
                await self.close_frame(1011)
                self.writer.close()
                return

    async def refuse(self, code, message, close_code, **extra):
        self.bridge.log(f"[bridge] refused {self.target}: {code}: {message}")
        await self.error(code, message, **extra)
        await self.close_frame(close_code)
        self.writer.close()

    async def error(self, code, message, **extra):
        if code not in ("CAPACITY_REACHED", "UNKNOWN_ENV", "CONFIG_ERROR", "IDLE_TIMEOUT"):
            self.bridge.log("[bridge] session %d (%s): %s: %s" % (self.id, self.env_id, code, message[:200]))
        data = {"code": code, "message": message}
        data.update(extra)
        await self.send({"type": "error", "data": data})

    async def send(self, obj):
        await self.frame(0x1, json.dumps(obj).encode())

    async def close_frame(self, code):
        try:
            await self.frame(0x8, struct.pack("!H", code))
        except ConnectionError:
            pass

    async def frame(self, opcode, payload):
        n = len(payload)
        head = bytes([0x80 | opcode])
        head += (
            bytes([n])
            if n < 126
            else (bytes([126]) + struct.pack("!H", n) if n < 65536 else bytes([127]) + struct.pack("!Q", n))
        )
        self.writer.write(head + payload)
        await self.writer.drain()

    async def read_message(self):
        """The next text message; None on a close frame; a ProtocolError value for an oversized one."""
        chunks, size, too_big = [], 0, False
        while True:
            b0, b1 = await self.reader.readexactly(2)
            opcode, n = b0 & 0x0F, b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", await self.reader.readexactly(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", await self.reader.readexactly(8))[0]
            mask = await self.reader.readexactly(4) if b1 & 0x80 else None
            if n > 4 * self.bridge.max_message_bytes + (16 << 20):
                return None  # past the hard cap: drop the connection, as ws does (1009)
            payload = await self.reader.readexactly(n)
            if mask:
                payload = bytes(c ^ mask[i % 4] for i, c in enumerate(payload)) if n < 4096 else _unmask(payload, mask)
            if opcode == 0x8:
                await self.close_frame(1000)
                return None
            if opcode == 0x9:
                await self.frame(0xA, payload)
                continue
            if opcode == 0xA:
                continue
            size += n
            if size > self.bridge.max_message_bytes:
                too_big = True
            else:
                chunks.append(payload)
            if b0 & 0x80:
                if too_big:
                    return ProtocolError(
                        "MESSAGE_TOO_LARGE",
                        "The message has %d bytes; this bridge takes at most %d."
                        % (size, self.bridge.max_message_bytes),
                    )
                return b"".join(chunks).decode("utf-8", errors="replace")


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def escape_control(text):
    """``text`` with control characters (ESC sequences, CR, BEL...) written as \\xNN / \\uNNNN: safe in a terminal."""
    return _CONTROL.sub(
        lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) <= 0xFF else f"\\u{ord(m.group()):04x}", text
    )


def _unmask(payload, mask):
    """XOR-unmask a large payload fast (int arithmetic on the whole buffer)."""
    n = len(payload)
    key = int.from_bytes((mask * (n // 4 + 1))[:n], "big")
    return (int.from_bytes(payload, "big") ^ key).to_bytes(n, "big")
