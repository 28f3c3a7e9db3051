"""A worker process for tests/test_upstream_pool.py: opens `calls` upstream calls at once on
a route of replicas, through the worker's own call (open_chat_stream) and the
deployment's Redis; prints one JSON line per call (the replica holding it, or the error
code refusing it); holds them until a line arrives on stdin, then ends them and exits.

    python -m tests.pool_worker '{"urls": [...], "limit": 4, "calls": 3, "wait": 1.0,
                                   "model": "bench-5-10-held1-x"}'
"""
import asyncio
import contextlib
import json
import os
import sys

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway.settings")
django.setup()

from responses_app.worker.upstream import UpstreamRejected, open_chat_stream  # noqa: E402
from upstreams.replicas import Placement  # noqa: E402
from upstreams.routing import Route  # noqa: E402


async def main(spec: dict) -> None:
    route = Route(name="shared", base_url=spec["urls"][0], more_urls=tuple(spec["urls"][1:]),
                  api_key="", connect_timeout=spec["wait"], idle_timeout=60,
                  max_concurrency=spec["limit"])
    body = {"model": spec["model"], "stream": True,
            "messages": [{"role": "user", "content": "hi"}]}
    async with contextlib.AsyncExitStack() as calls:
        async def one():
            placement = Placement()
            try:
                await calls.enter_async_context(open_chat_stream(route, body,
                                                                 placement=placement))
                print(json.dumps({"held": placement.replica}), flush=True)
            except UpstreamRejected as rejected:
                print(json.dumps({"refused": rejected.body["error"]["code"]}), flush=True)

        await asyncio.gather(*(one() for _ in range(spec["calls"])))
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
