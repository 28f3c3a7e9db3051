# The gateway's image: web (the default CMD), worker and beat differ only in their command.
# PYTHON_IMAGE picks the base: python:3.11-slim where a registry answers, or a local image
# (scripts/docker_base_images.sh builds one from Debian's packages).
ARG PYTHON_IMAGE=python:3.11-slim
FROM ${PYTHON_IMAGE}
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/venv PATH=/opt/venv/bin:$PATH
RUN python3 -m venv /opt/venv \
    && useradd --system --create-home --uid 10001 gateway \
    && mkdir -p /var/lib/gateway-metrics /var/lib/beat /var/lib/gateway-files \
    && chown gateway:gateway /var/lib/gateway-metrics /var/lib/beat /var/lib/gateway-files
WORKDIR /app
# The project installs no package of its own: this layer is the locked dependencies.
COPY requirements.lock ./
RUN pip install --require-hashes -r requirements.lock
COPY . .
USER gateway
EXPOSE 8000
CMD ["python", "-m", "gateway.serve", "-b", "0.0.0.0", "-p", "8000", "gateway.asgi:application"]
