# Redis from Debian's package. BASE_IMAGE: debian:bookworm-slim online; `bench images bootstrap`
# passes its locally made Debian base instead.
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends redis-server \
 && rm -rf /var/lib/apt/lists/*
USER 10001:10001
CMD ["redis-server", "--bind", "127.0.0.1", "--port", "16379", "--save", "", "--appendonly", "no"]
