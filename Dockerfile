# Sessionary: the API server. It needs DATABASE_URL pointing at PostgreSQL, and the schema
# migrated by `sessionary migrate` (same image, a separate step, once per release) before
# `sessionary serve` starts: serve refuses a schema that is behind.
# A venv with the service installed as a wheel (its migrations inside the package), its
# dependencies pinned by requirements.lock: the service and its `embeddings` extra, so that
# the image recalls memories by meaning with nothing configured (WordLlama's model ships in
# its wheel; nothing is downloaded at run time), and no other extra, no client; pip here,
# where the build cache makes uv's speed moot.
FROM python:3.12-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /venv && /venv/bin/python -m pip install --quiet --upgrade pip
WORKDIR /srv
# Dependencies first, as pyproject.toml lists them: this layer is rebuilt only when they change.
COPY pyproject.toml requirements.lock ./
RUN /venv/bin/python -c "import tomllib; project = tomllib.load(open('pyproject.toml', 'rb')); \
print('\n'.join(project['project']['dependencies'] \
    + project['project']['optional-dependencies']['embeddings']))" > dependencies.txt \
    && /venv/bin/python -m pip install --quiet -c requirements.lock -r dependencies.txt
COPY README.md ./
COPY migrations ./migrations
COPY app ./app
RUN /venv/bin/python -m pip install --quiet --no-deps -c requirements.lock .

FROM python:3.12-slim
RUN useradd --system --uid 10001 --no-create-home sessionary
COPY --from=build /venv /venv
USER sessionary
ENV PATH=/venv/bin:$PATH PYTHONUNBUFFERED=1
EXPOSE 8000
STOPSIGNAL SIGTERM
# Liveness only (the process answers); the slim image has no curl, so Python asks.
HEALTHCHECK --interval=10s --timeout=3s --start-period=15s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2)"]
CMD ["sessionary", "serve", "--host", "0.0.0.0", "--port", "8000"]
