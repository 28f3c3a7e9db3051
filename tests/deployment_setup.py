"""Setting a test deployment up: tenants, API keys and limit overrides made in one
`manage.py shell` call (a process per tenant would cost seconds each), and waiting until
its /readyz says a worker is there (a cold worker can take seconds on a busy machine), and
what a tenant was charged (its monthly quota counter in Redis)."""
import json
import time
from datetime import datetime, timezone

import httpx
import redis

READY_WAIT_SECONDS = 60

PROVISION = """
import json
from accounting.models import TenantLimits
from responses_app.auth import mint_api_key
from responses_app.models import Tenant
keys = {}
for name, wanted in json.loads(%r).items():
    tenant = Tenant.objects.create(name=name)
    keys[name] = [mint_api_key(tenant) for _ in range(wanted["keys"])]
    if wanted["limits"]:
        TenantLimits.objects.create(tenant=tenant, **wanted["limits"])
print(json.dumps(keys))
"""


def provision(deployment, tenants: dict[str, dict]) -> dict[str, list[str]]:
    """`{name: {"keys": n, "limits": {field: value}}}` → `{name: [api keys]}`."""
    output = deployment.manage("shell", "-c", PROVISION % json.dumps(tenants))
    return json.loads(output.strip().splitlines()[-1])


def readyz(deployment) -> httpx.Response:
    return httpx.get(deployment.base_url.removesuffix("/v1") + "/readyz", timeout=10)


def wait_for_readiness(deployment, status: int = 200) -> httpx.Response:
    """Poll /readyz (bounded) until it answers `status`; the last answer."""
    deadline = time.monotonic() + READY_WAIT_SECONDS
    while True:
        response = readyz(deployment)
        if response.status_code == status or time.monotonic() > deadline:
            return response
        time.sleep(0.2)


def quota_counter(deployment, tenant: str) -> int:
    """The tenant's monthly quota counter in Redis: the tokens it was charged this month."""
    tenant_id = int(deployment.manage("shell", "-c", (
        "from responses_app.models import Tenant; "
        f"print(Tenant.objects.get(name='{tenant}').id)")).split()[-1])
    month = datetime.now(timezone.utc).strftime("%Y%m")
    return int(redis.Redis.from_url(deployment.env["REDIS_URL"]).get(
        f"gw:quota:{tenant_id}:{month}"))
