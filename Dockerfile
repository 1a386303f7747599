# Image of scheduled-events-forwarder (and of its IMDS simulator, for docker-compose.yml), built from the single
# executable: no Node.js and no node_modules in the image, a small non-root Debian base.
# Build:  docker build -t scheduled-events-forwarder .        (multi-arch: docker buildx --platform linux/arm64)

# Stage 1: the executable for the image's architecture, built as `npm run package` builds it: esbuild bundle +
# the official Node.js binary of the pinned version (npm registry, checked against
# packaging/release/node-binaries.sha512) + postject. The SEA blob must be made by that same Node.js version,
# hence the exact tag.
FROM node:24.21.0-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
# --ignore-scripts: this image already has Node 24.21.0, so the `node` devDependency's binary is not needed.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY scripts ./scripts
COPY config ./config
COPY packaging ./packaging
ARG TARGETARCH=amd64
RUN target="linux-$(if [ "$TARGETARCH" = arm64 ]; then echo arm64; else echo x64; fi)" \
 && node scripts/package/build.ts --targets "$target" --no-archives \
 && cp "release/bin/$target/scheduled-events-forwarder" /scheduled-events-forwarder

# Stage 2: glibc and libstdc++ (the Node.js runtime inside the executable needs them) and bash (the compose
# healthchecks) come with debian:bookworm-slim; nothing else is added.
FROM debian:bookworm-slim
ENV NODE_ENV=production
# State lives on a volume owned by the unprivileged user `sef` (uid 10001); mode 0700.
RUN groupadd --system --gid 10001 sef \
 && useradd --system --uid 10001 --gid sef --no-create-home --home-dir /var/lib/scheduled-events-forwarder \
      --shell /usr/sbin/nologin sef \
 && mkdir -p /var/lib/scheduled-events-forwarder && chown sef:sef /var/lib/scheduled-events-forwarder \
 && chmod 0700 /var/lib/scheduled-events-forwarder
COPY --from=build /scheduled-events-forwarder /usr/local/bin/scheduled-events-forwarder
VOLUME ["/var/lib/scheduled-events-forwarder"]
WORKDIR /var/lib/scheduled-events-forwarder
USER sef
ENTRYPOINT ["/usr/local/bin/scheduled-events-forwarder"]
CMD ["run", "--config", "/etc/scheduled-events-forwarder/forwarder.yaml"]
