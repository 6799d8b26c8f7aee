# Sessionary: the API server. Run `sessionary migrate` once per release (same image) before
# starting it; it needs DATABASE_URL pointing at PostgreSQL. Mirrors the Makefile's install:
# a venv, dependencies pinned by requirements.lock, the project installed editable.
FROM python:3.12-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /venv
WORKDIR /srv
# Dependencies first: this layer is rebuilt only when the pins change.
COPY pyproject.toml requirements.lock README.md ./
RUN mkdir app && /venv/bin/pip install -c requirements.lock . && /venv/bin/pip uninstall -y sessionary
COPY alembic.ini ./
COPY migrations ./migrations
COPY app ./app
RUN /venv/bin/pip install --no-deps -e .

FROM python:3.12-slim
RUN useradd --system --uid 10001 --no-create-home sessionary
COPY --from=build /venv /venv
COPY --from=build /srv /srv
WORKDIR /srv
USER sessionary
ENV PATH=/venv/bin:$PATH PYTHONUNBUFFERED=1
EXPOSE 8000
STOPSIGNAL SIGTERM
CMD ["sessionary", "serve", "--host", "0.0.0.0", "--port", "8000"]
