"""Chat Completions, the second front door: `/v1/chat/completions` on the same pipeline as
`/v1/responses` (keys, limits, routes, run queue, worker, bus), with the tenant's MCP tools
and stored completions."""
