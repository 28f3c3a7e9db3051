# PostgreSQL from Debian bookworm's packages: a stand-in for the postgres image that reads
# the same POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB, keeps its data in
# /var/lib/postgresql/data, sets PG_MAJOR and has a docker-entrypoint.sh. PG_MAJOR is the
# major docker-compose.yml pins (scripts/docker_base_images.sh reads it there); bookworm
# ships 15.
ARG DEBIAN_IMAGE
FROM ${DEBIAN_IMAGE}
ARG PG_MAJOR
RUN test -n "$PG_MAJOR" \
    && apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      postgresql-${PG_MAJOR} \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /var/lib/postgresql/data /var/run/postgresql \
    && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql
ENV PG_MAJOR=${PG_MAJOR} PATH=/usr/lib/postgresql/${PG_MAJOR}/bin:$PATH \
    PGDATA=/var/lib/postgresql/data
COPY docker-entrypoint.sh /usr/local/bin/
USER postgres
EXPOSE 5432
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["postgres"]
