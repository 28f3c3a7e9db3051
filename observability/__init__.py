"""Observability: request ids and JSON logs, Prometheus metrics, health and readiness."""
