"""MCP tools run by the gateway (server-side `mcp` tool): not built yet, see the issues."""
