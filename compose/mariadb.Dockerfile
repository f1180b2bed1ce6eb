# MariaDB from Debian's package. The orchestrator makes the data directory at start, in a folder it
# mounts at the same path, with the same commands as the process runtime.
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends mariadb-server \
 && rm -rf /var/lib/apt/lists/*
USER 10001:10001
