# PostgreSQL 15 from Debian bookworm's packages: a stand-in for the postgres image that reads
# the same POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB and keeps its data in
# /var/lib/postgresql/data.
ARG DEBIAN_IMAGE
FROM ${DEBIAN_IMAGE}
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      postgresql \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /var/lib/postgresql/data /var/run/postgresql \
    && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql
ENV PATH=/usr/lib/postgresql/15/bin:$PATH PGDATA=/var/lib/postgresql/data
COPY postgres-entrypoint.sh /usr/local/bin/
USER postgres
EXPOSE 5432
ENTRYPOINT ["postgres-entrypoint.sh"]
