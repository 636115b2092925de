# driftwatch's container image: a release build, then a small Debian with Chromium for rendered
# watches, running as an unprivileged user. Used by compose.yaml (with PostgreSQL):
#   docker build -t driftwatch .
#   docker run --init -p 127.0.0.1:8080:8080 -v driftwatch-data:/var/lib/driftwatch driftwatch
# (--init: Chromium's helper processes are reparented to PID 1 when they exit late, and
# driftwatch does not reap processes it did not start; the init process does.)
# Its build step is the release build packaging/build-deb makes (cargo build --release --locked,
# from the same Cargo.lock CI tests). CI does not build this image: no container registry is
# reachable there, so neither base image can be pulled.

FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
# pkg-config and the OpenSSL headers (bundled libpq links OpenSSL) come with this image.
RUN cargo build --release --locked --bin driftwatch

# Bookworm, like the machines the Debian package is built and tested on.
FROM debian:bookworm-slim
# chromium: rendered watches; fonts-liberation: text in renders and screenshots; libssl3: the
# binary links OpenSSL; ca-certificates: TLS to watched pages and endpoints.
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        ca-certificates chromium fonts-liberation libssl3 \
    && rm -rf /var/lib/apt/lists/*
RUN useradd --system --uid 10001 --user-group --home-dir /var/lib/driftwatch \
        --shell /usr/sbin/nologin driftwatch \
    && install -d -o driftwatch -g driftwatch -m 0700 /var/lib/driftwatch
COPY --from=build /src/target/release/driftwatch /usr/bin/driftwatch
COPY packaging/docker/chromium-no-sandbox /usr/local/bin/chromium-no-sandbox

# Listen on every interface of the container (publish the port to choose who reaches it); an
# SQLite file on the volume unless DRIFTWATCH_DATABASE_URL names PostgreSQL (compose.yaml).
# Chromium through a wrapper that turns its own sandbox off: see that file for why.
ENV DRIFTWATCH_LISTEN=0.0.0.0:8080 \
    DRIFTWATCH_DATABASE_URL=sqlite:///var/lib/driftwatch/driftwatch.db \
    DRIFTWATCH_CHROMIUM=/usr/local/bin/chromium-no-sandbox \
    HOME=/var/lib/driftwatch
USER 10001:10001
WORKDIR /var/lib/driftwatch
VOLUME /var/lib/driftwatch
EXPOSE 8080
# The image has no curl: bash asks /healthz itself (on 8080: change it with DRIFTWATCH_LISTEN).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/8080 && printf 'GET /healthz HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n' >&3 && head -n 1 <&3 | grep -q ' 200 '"]
# SIGTERM drains work in flight for DRIFTWATCH_SHUTDOWN_GRACE (30s): give `docker stop` longer
# (compose.yaml sets stop_grace_period: 60s).
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/bin/driftwatch"]
CMD ["serve"]
