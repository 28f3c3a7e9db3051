"""Django's PostgreSQL backend, but a connection it takes from its pool is a live one: one
that lost its server while idle (a partition outlasting its keepalive probes, a server
restart) is discarded and the next taken at once (responses_app/pooled_connections.py),
instead of failing the first request after the database is back."""
from functools import partial

from django.db.backends.postgresql import base

from responses_app import pooled_connections


class DatabaseWrapper(base.DatabaseWrapper):
    def get_new_connection(self, conn_params):
        if self.pool is None:
            return super().get_new_connection(conn_params)
        return pooled_connections.taken(self.pool,
                                        partial(super().get_new_connection, conn_params))
