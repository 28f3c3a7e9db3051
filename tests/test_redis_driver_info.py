"""Every Redis client of the gateway is built with the one DriverInfo made at import
(responses_app.redis_client.DRIVER_INFO: redis-py would make one, and look its version up
in the installed packages' metadata, for every connection), and its connections still
tell Redis who they are (CLIENT SETINFO), on a real Redis."""
import asyncio

import redis

from accounting.limiter_redis import RedisLimiter
from responses_app.bus.redis_codec import async_client, one_connection_client
from responses_app.redis_client import DRIVER_INFO
from tests.servers import REDIS_BASE_URL, SPARE_REDIS_DB
from upstreams.pool_redis import _client_for

URL = f"{REDIS_BASE_URL}/{SPARE_REDIS_DB}"
NAMED = {"lib-name": "redis-py", "lib-ver": redis.__version__}


def named(info: dict) -> dict:
    return {key: info[key] for key in NAMED}


def test_the_sync_clients_share_the_driver_info_and_send_it():
    client = RedisLimiter(URL).client
    assert client.connection_pool.connection_kwargs["driver_info"] is DRIVER_INFO
    assert named(client.client_info()) == NAMED


def test_the_async_clients_share_the_driver_info_and_send_it():
    async def infos():
        clients = [async_client(URL), one_connection_client(URL),
                   _client_for(asyncio.get_running_loop(), URL)[0]]
        try:
            return ([c.connection_pool.connection_kwargs["driver_info"] for c in clients],
                    [named(await c.client_info()) for c in clients])
        finally:
            for client in clients:
                await client.aclose()

    shared, sent = asyncio.run(infos())
    assert [info is DRIVER_INFO for info in shared] == [True, True, True]
    assert sent == [NAMED] * 3
