"""Benchmark harness for the gateway: a CPU-cheap SSE load generator and a runner."""
