"""Tenants, API keys and limit overrides for a test deployment, made in one `manage.py
shell` call (a process per tenant would cost seconds each)."""
import json

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
