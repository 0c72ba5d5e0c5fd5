# syntax=docker/dockerfile:1

# Build stage: the C++ toolchain is only needed to compile better-sqlite3 when no prebuilt binary fits.
FROM node:20-bookworm-slim AS build
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build && npm prune --omit=dev

# Runtime stage: same base image, so the native module built above loads as is.
FROM node:20-bookworm-slim
WORKDIR /app
COPY --from=build --chown=node:node /app/package.json ./
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
RUN mkdir -p /app/data && chown node:node /app/data
USER node
ENV HOST=0.0.0.0
EXPOSE 3000
VOLUME ["/app/data"]
CMD ["node", "dist/src/main.js"]
