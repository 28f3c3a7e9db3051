"""Limits, quotas and usage accounting: who may run how much, and who ran how much."""
