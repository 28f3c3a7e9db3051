"""The worker side: claim a response, call the upstream, publish events, store the result."""
