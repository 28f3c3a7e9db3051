"""Delivering a run: the job a message carries, the dispatcher that sends it, the run
queue's consumer and its at-least-once bookkeeping, heartbeats, the watchdog, cancel
requests."""
