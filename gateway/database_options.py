"""The libpq options that make a silent database partition fail in seconds
(docs/configuration.md: DATABASE_CONNECT_TIMEOUT_SECONDS, DATABASE_TCP_TIMEOUT_SECONDS,
DATABASE_STATEMENT_TIMEOUT_SECONDS), added to the database's OPTIONS by gateway.settings.
An option the DATABASE_URL's query already names wins; none applies to a Unix socket.
"""


def harden(options: dict, connect_timeout: int, tcp_timeout: float,
           statement_timeout: float) -> None:
    """Add the timeouts, keepalives and `target_session_attrs` to `options` (in place)."""
    for name, value in {
            "connect_timeout": connect_timeout,
            # unacknowledged data (a statement sent, keepalive probes) this long: closed
            "tcp_user_timeout": int(tcp_timeout * 1000),
            # an idle pooled connection is probed after 10 s of silence, every 2 s
            "keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 2,
            "keepalives_count": 3,
            # a server that is read-only (a standby after a failover) is not connected to:
            # its sessions would take reads and fail every write, leaving runs unstored
            "target_session_attrs": "read-write"}.items():
        if value:
            options.setdefault(name, value)
    if statement_timeout:
        options["options"] = (f"{options.get('options', '')} "
                              f"-c statement_timeout={int(statement_timeout * 1000)}").strip()
