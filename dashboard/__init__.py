"""The operator's dashboard: the admin's first page (traffic, tokens, latency, errors, now)."""
