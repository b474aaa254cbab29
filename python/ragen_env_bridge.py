"""Serve any gym-like Python environment to ragen-ts over the env wire protocol (docs/environments.md).

Standard library only (tested with Python 3.11): a small asyncio WebSocket server speaking the same messages as
`ragen env serve` (OpenEnv's {type, data} shape with ragen-ts's extensions), for RAGEN's BaseEnv
(reset(seed, mode) -> obs; step(action) -> (obs, reward, done, info)) and Gymnasium's API
(reset(seed=, options=) -> (obs, info); step(action) -> (obs, reward, terminated, truncated, info)).

    python3 python/ragen_env_bridge.py --env my_envs.py:make_env --id MyEnv --port 8766
    ragen play remote:ws://127.0.0.1:8766/MyEnv --seed 0
"""

import argparse
import asyncio
import importlib
import importlib.util
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ragen_env_adapter import EnvAdapter, EnvSpec, ProtocolError  # noqa: E402,F401  (the public names)
from ragen_env_server import Bridge  # noqa: E402

_LOOPBACK = ("127.", "::1", "localhost")


async def serve_async(specs, host="127.0.0.1", port=8766, ready=None, token=None, insecure=False, **limits):
    """Serve ``specs`` ({id: EnvSpec}) until cancelled; ``ready(port)`` is called once listening. Beyond loopback a
    ``token`` (clients send it as RAGEN_ENV_TOKEN) is required unless ``insecure``."""
    token = token or os.environ.get("RAGEN_ENV_TOKEN") or None
    if not host.startswith(_LOOPBACK) and token is None and not insecure:
        raise SystemExit(
            f"ragen env bridge: listening on {host}, beyond loopback, needs a token: set RAGEN_ENV_TOKEN (or --token) "
            "on the bridge and its clients, or pass --insecure on a trusted network."
        )
    bridge = Bridge(specs, token=token, **limits)
    server = await asyncio.start_server(bridge.handle, host, port, limit=1 << 16)
    bound = server.sockets[0].getsockname()[1]
    if ready:
        ready(bound)
    async with server:
        await server.serve_forever()


def serve(specs, host="127.0.0.1", port=8766, **limits):  # limits also take token= and insecure=
    """Blocking: serve ``specs`` ({id: EnvSpec}) and print the ``remote:`` ids to use until Ctrl-C."""

    def ready(bound):
        print("ragen env bridge: %s at ws://%s:%d/<EnvId>; Ctrl-C stops" % (", ".join(specs), host, bound), flush=True)
        for env_id in specs:
            print("  remote:ws://%s:%d/%s" % (host, bound, env_id), flush=True)

    try:
        asyncio.run(serve_async(specs, host, port, ready, **limits))
    except KeyboardInterrupt:
        pass


def _load(target):
    """``module:attr`` or ``path/to/file.py:attr`` -> the object."""
    module_name, _, attr = target.partition(":")
    if module_name.endswith(".py"):
        spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(module_name))[0], module_name)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(module_name)
    return getattr(module, attr or "ENVS")


def main(argv=None):
    p = argparse.ArgumentParser(description="Serve gym-like Python envs to ragen-ts over the env wire protocol.")
    p.add_argument(
        "--env",
        required=True,
        help="module:attr or file.py:attr: a dict {id: EnvSpec}, an EnvSpec, or a factory make(**config)",
    )
    p.add_argument("--id", help="the env id (when --env is a single EnvSpec or factory)")
    p.add_argument("--port", type=int, default=8766, help="TCP port (0 picks a free one)")
    p.add_argument(
        "--host", default="127.0.0.1", help="address to listen on; beyond loopback needs --token (or --insecure)"
    )
    p.add_argument(
        "--token", help="shared token clients must send (they read RAGEN_ENV_TOKEN) [default: $RAGEN_ENV_TOKEN]"
    )
    p.add_argument(
        "--insecure", action="store_true", help="listen beyond loopback without a token (a trusted network only)"
    )
    p.add_argument(
        "--max-actions", type=int, default=20, help="per-episode action cap reported in /metadata (factories only)"
    )
    p.add_argument("--max-sessions", type=int, default=256)
    p.add_argument("--idle-timeout", type=float, default=300.0)
    p.add_argument("--max-message-bytes", type=int, default=1 << 20)
    p.add_argument("--step-timeout", type=float, default=30.0)
    args = p.parse_args(argv)
    target = _load(args.env)
    if isinstance(target, dict):
        specs = target
    else:
        spec = (
            target
            if isinstance(target, EnvSpec)
            else EnvSpec(target, description=args.env, max_actions_per_episode=args.max_actions)
        )
        specs = {args.id or args.env.rpartition(":")[2]: spec}
    serve(
        specs,
        args.host,
        args.port,
        max_sessions=args.max_sessions,
        idle_timeout=args.idle_timeout,
        max_message_bytes=args.max_message_bytes,
        step_timeout=args.step_timeout,
        token=args.token,
        insecure=args.insecure,
    )


if __name__ == "__main__":
    main()
