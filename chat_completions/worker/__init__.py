"""The worker's side of a chat completion: its run (run.py), the accumulation of its
chunks (completion.py), the tenant's MCP tools (mcp.py), and its storage (store.py)."""
