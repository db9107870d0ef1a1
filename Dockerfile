# Builds the mmr-service binary and runs it on a slim Debian image.
# Docker cannot run on the project's development machines: this file is checked by reading.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin mmr-service

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --home-dir /var/lib/mmr --create-home mmr
COPY --from=build /src/target/release/mmr-service /usr/local/bin/mmr-service
USER mmr
WORKDIR /var/lib/mmr
ENV MMR__SERVER__ADDR=0.0.0.0:8080
EXPOSE 8080
# `serve` is what the binary runs without arguments; SIGTERM drains requests and finishes the round in progress.
ENTRYPOINT ["mmr-service"]
CMD ["serve"]
