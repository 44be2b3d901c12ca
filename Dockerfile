# mrecd: the library and its command line (`mrecd validate`, `mrecd pack`).
# The HTTP service and `mrecd serve` arrive with the service; this image grows
# with it. Build: docker build -t mrecd .   Run: docker run -v $PWD:/data mrecd validate /data/run.mrec
FROM python:3.12-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY server ./server
COPY client ./client
# the command line drives the storage bindings: the `server` extra, not the client-only base
RUN pip wheel --no-cache-dir --wheel-dir /wheels '.[server]'

FROM python:3.12-slim
RUN useradd --create-home --uid 10001 mrecd
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index --find-links /wheels 'mrecd[server]' && rm -rf /wheels
USER mrecd
WORKDIR /data
ENTRYPOINT ["mrecd"]
CMD ["--help"]
