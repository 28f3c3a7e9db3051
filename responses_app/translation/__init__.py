"""Pure translation between the Responses API and Chat Completions (no Django in here)."""
