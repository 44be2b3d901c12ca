# mrecd: the HTTP service (`mrecd serve`, the default command) and the command line.
#
# Build: docker build -t mrecd .
# Run:   docker run -p 8000:8000 -v mrecd-data:/data \
#          -e MRECD_TOKENS='[{"token": "<secret>", "scope": "admin"}]' mrecd
#
# Inside a container the server must bind 0.0.0.0 (its loopback is unreachable from outside),
# and `mrecd serve` refuses to bind beyond loopback without tokens. We keep that refusal: the
# image does not pass --insecure, so a container started without MRECD_TOKENS exits with a
# message saying so, rather than serving an open store. On a trusted network, opt out
# explicitly: docker run ... mrecd serve --host 0.0.0.0 --insecure
#
# With tokens set, /metrics answers anonymous scrapes from loopback only; a Prometheus in
# another container needs a read token, or MRECD_METRICS_ANONYMOUS=always.
# Other commands: docker run -v $PWD:/data mrecd validate /data/run.mrec
FROM python:3.12-slim AS build
# a C compiler for the native commit encoder (hatch_build.py); the slim runtime below has the
# libzstd.so.1 it links to (dpkg depends on it)
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml README.md hatch_build.py ./
COPY server ./server
COPY client ./client
# the service and the command line need the storage bindings: the `server` extra
RUN pip wheel --no-cache-dir --wheel-dir /wheels '.[server]'

FROM python:3.12-slim
RUN useradd --create-home --uid 10001 mrecd && mkdir /data && chown mrecd:mrecd /data
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index --find-links /wheels 'mrecd[server]' && rm -rf /wheels
USER mrecd
ENV MRECD_STORE=/data \
    PYTHONUNBUFFERED=1
WORKDIR /data
VOLUME /data
EXPOSE 8000
# slim images have no curl: ask /healthz with the standard library
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request as u; sys.exit(u.urlopen('http://127.0.0.1:8000/healthz', timeout=4).status != 200)"]
ENTRYPOINT ["mrecd"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8000"]
