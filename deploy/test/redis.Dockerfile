# The tests' Redis: Debian's redis-server on the local base image, for machines that
# reach no container registry (where users get the official redis image). The build
# context is a folder of the Debian packages (deploy/test/images.py downloads them).
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}
COPY *.deb /tmp/debs/
RUN dpkg -i /tmp/debs/*.deb && rm -rf /tmp/debs \
 && mkdir -p /data && chown redis:redis /data
USER redis
WORKDIR /data
EXPOSE 6379
# As the official image does: no protected mode (the container is reached from the
# compose network), whatever command the compose file gives.
ENTRYPOINT ["/bin/sh", "-c", "exec \"$0\" \"$@\" --protected-mode no"]
CMD ["redis-server"]
