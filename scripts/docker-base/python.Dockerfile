# Python 3.11 from Debian bookworm's packages: what python:3.11-slim provides, for the
# gateway image's PYTHON_IMAGE build argument. ca/ holds the host's local CA certificates
# (maybe none); pip is told to use the system's bundle, which then includes them.
ARG DEBIAN_IMAGE
FROM ${DEBIAN_IMAGE}
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      python3 python3-venv ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && ln -s /usr/bin/python3 /usr/local/bin/python
COPY ca/ /usr/local/share/ca-certificates/
RUN update-ca-certificates >/dev/null
ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
