"""A burst of new streams on the production path: hundreds of responses created at the
same instant are all served, every event delivered (the bench's 500-stream check, small)."""
import asyncio

from bench.loadgen import Target, run_load

BURST = 300  # more than any of the web's connection pools holds


def test_a_burst_of_streams_is_served_whole(production, tenant_key):
    target = Target.make("gateway", production.base_url, "bench-20-5", 20, tenant_key)
    run = asyncio.run(run_load(target, BURST, BURST, max_seconds=60, request_timeout=60))
    summary = run.summary()
    assert (summary["ok"], summary["errors"], summary["lost"], summary["error_kinds"]) == \
        (BURST, 0, 0, {})
