FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app
# The project installs no package of its own: this layer is just the dependencies.
COPY pyproject.toml ./
RUN pip install .
COPY . .
EXPOSE 8000
