# Redis 7 from Debian bookworm's packages: a stand-in for the redis:7 image (`redis-server`
# and `redis-cli` on PATH, data in /data, and, as that image does when started without a
# configuration file, protected mode off: the other containers reach it by its network name).
ARG DEBIAN_IMAGE
FROM ${DEBIAN_IMAGE}
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      redis-server \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /data && chown redis:redis /data
WORKDIR /data
USER redis
EXPOSE 6379
ENTRYPOINT ["sh", "-c", "exec \"$@\" --protected-mode no", "--"]
CMD ["redis-server"]
