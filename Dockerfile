# sszgate as a container, laid out as rpc-snooper's image is: /app/snooper and /app/json_rpc_snoop
# run the rpc-snooper-compatible front (the binary reads its own name), /app/sszgate everything
# else. ethereum-package's `snooper_params: {image: <this image>}` starts
# `./json_rpc_snoop -b=0.0.0.0 -p=8561 http://<EL>:<port>` in /app unchanged.
#
#   docker build -t sszgate .
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p sszgate && cp target/release/sszgate /sszgate

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=build /sszgate /app/sszgate
RUN ln -s /app/sszgate /app/snooper && ln -s /app/sszgate /app/json_rpc_snoop
ENV PATH="$PATH:/app"
CMD ["./snooper", "--help"]
