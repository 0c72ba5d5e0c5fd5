# syntax=docker/dockerfile:1

# The service's image: the compiled JavaScript on Node.js 24 LTS, production dependencies only, run by the
# unprivileged `node` user with NODE_ENV=production, so that a missing secret stops it instead of being
# generated. `obs`, the operator's command line, is on PATH. Checked by test/e2e/image.test.ts.
#   docker build -t observation-service .

# Build stage: the C++ toolchain compiles better-sqlite3 when no prebuilt binary fits this Node.js.
FROM node:24-bookworm-slim AS build
# hadolint ignore=DL3008
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
# Compiles src/ and projections/ into dist/, copies Redoc's bundle into dist/assets and bundles the console
# (console/, with esbuild) into dist/console, which the compiled service serves at /console; proves that the
# better-sqlite3 binary survives the garbage collection of its statements on this Node.js (one compiled
# here against Node 24.19+ headers would not: scripts/check-sqlite-finalizers.js); then removes the
# development dependencies (tsx, typescript, redoc, the type packages) from node_modules.
RUN npm run build \
  && node scripts/check-sqlite-finalizers.js \
  && npm prune --omit=dev --no-audit --no-fund

# Runtime stage: the same base image, so the native modules built above load as they are.
FROM node:24-bookworm-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000
WORKDIR /app
# The code stays root's: the service can write its data, never its own code.
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
# /app/keys is where docker-compose.yml keeps the signing keyring; a volume mounted there starts owned by node.
RUN ln -s /app/bin/obs.js /usr/local/bin/obs \
  && mkdir -p /app/data /app/keys \
  && chown node:node /app/data /app/keys
USER node
# 9464: GET /metrics on its own listener, when METRICS=port.
EXPOSE 3000 9464
VOLUME ["/app/data"]
# Readiness, not liveness: a container whose stores are unreachable reports unhealthy. No curl in a slim
# image: node's own fetch asks.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.PORT + '/health/ready').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/src/main.js"]
