# Multi-stage image for scheduled-events-forwarder (and its IMDS simulator, for docker-compose.yml).
# Build:  docker build -t scheduled-events-forwarder .
# The image needs no compilers: node:sqlite is built into Node 24.

FROM node:24-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
# --ignore-scripts: the image already has Node 24, so the `node` devDependency's binary download is not needed.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN node node_modules/typescript/bin/tsc -p tsconfig.build.json \
 && npm prune --omit=dev --ignore-scripts --no-audit --no-fund

FROM node:24-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /src/package.json ./package.json
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY config ./config
COPY schemas ./schemas
# State lives on a volume owned by the unprivileged `node` user (uid 1000); mode 0700.
RUN mkdir -p /var/lib/scheduled-events-forwarder && chown node:node /var/lib/scheduled-events-forwarder \
 && chmod 0700 /var/lib/scheduled-events-forwarder
VOLUME ["/var/lib/scheduled-events-forwarder"]
USER node
ENTRYPOINT ["node", "/app/dist/cli/main.js"]
CMD ["run", "--config", "/etc/scheduled-events-forwarder/forwarder.yaml"]
