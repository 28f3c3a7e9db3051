# PostgreSQL with pgvector where no image registry answers: a stand-in for the
# pgvector/pgvector:pgN image (the official postgres image plus pgvector) that reads the same
# POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB, keeps its data in /var/lib/postgresql/data,
# runs as uid 999 like it, sets PG_MAJOR and has a docker-entrypoint.sh. Debian bookworm
# packages neither PostgreSQL 16 nor pgvector, so the binaries are the `pgserver` wheel's
# (PostgreSQL 16 built with pgvector; the wheel the gateway already uses for its embedded
# database), pip-installed with the hashes requirements.lock pins (pgserver.txt, which
# scripts/docker_base_images.sh writes into the build context). PG_MAJOR is the major
# docker-compose.yml pins; the build fails if the wheel's is another.
ARG PYTHON_IMAGE
ARG DEBIAN_IMAGE
FROM ${PYTHON_IMAGE} AS wheel
COPY pgserver.txt /tmp/
RUN python3 -m venv /tmp/venv \
    && /tmp/venv/bin/pip install -q --no-deps --only-binary=:all: --require-hashes \
      --target /opt/pgserver -r /tmp/pgserver.txt

FROM ${DEBIAN_IMAGE}
ARG PG_MAJOR
# the binaries find libpq at $ORIGIN/../../../pgserver.libs: the wheel's layout is kept
COPY --from=wheel /opt/pgserver/pgserver/pginstall /opt/pgserver/pgserver/pginstall
COPY --from=wheel /opt/pgserver/pgserver.libs /opt/pgserver/pgserver.libs
ENV PG_MAJOR=${PG_MAJOR} PATH=/opt/pgserver/pgserver/pginstall/bin:$PATH \
    PGDATA=/var/lib/postgresql/data
RUN postgres --version | grep -q "^postgres (PostgreSQL) ${PG_MAJOR}\." \
    || { echo "the pgserver wheel's PostgreSQL is $(postgres --version), not ${PG_MAJOR}" >&2; exit 1; } \
    && test -f /opt/pgserver/pgserver/pginstall/share/postgresql/extension/vector.control \
    && groupadd --system --gid 999 postgres \
    && useradd --system --uid 999 --gid postgres --home-dir /var/lib/postgresql postgres \
    && mkdir -p /var/lib/postgresql/data /var/run/postgresql \
    && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql
COPY docker-entrypoint.sh /usr/local/bin/
USER postgres
EXPOSE 5432
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["postgres"]
