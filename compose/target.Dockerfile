# The image of every JVM target: the artifact `bench build` made, on a JRE 25. One file for all
# framework folders: the build context is the folder, cut down by its .dockerignore to the artifact,
# so COPY takes exactly what the manifest's build produced.
#
# BASE_IMAGE: the orchestrator passes its jlink JRE where no registry answers.
# START: the command the image runs by default. `bench` passes the default variant's [start] command
# from framework.toml and always runs each variant's own command anyway, so START only matters when
# the image is run by hand (compose/target.yml). Its words are split on spaces.
ARG BASE_IMAGE=eclipse-temurin:25-jre
FROM ${BASE_IMAGE}
ARG START
WORKDIR /app
# A named user: the JVM publishes its counters (hsperfdata: GC, threads) only for a user with a name.
RUN id -u 10001 >/dev/null 2>&1 || useradd --uid 10001 --no-create-home --shell /usr/sbin/nologin bench
COPY . ./
USER 10001:10001
ENV START=${START}
CMD exec ${START:?this image was built without START}
