# syntax=docker/dockerfile:1
# One image for every role; ROLE=api|ingest|workers picks what a container runs (default: all three).
# node:20 slim tracks the newest Node 20 release, which satisfies engines ">=20.19".
ARG NODE_IMAGE=node:20-bookworm-slim

# --- build: full dependencies, compile TypeScript into dist/ and the dashboard into dist/web/ ---
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# --- runtime: production dependencies and the compiled code only ---
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && npm cache clean --force
COPY --from=build /app/dist ./dist
# The process creates DATA_DIR (default .data) at start, so it must be writable by the non-root user.
RUN mkdir -p /app/.data && chown node:node /app/.data
USER node
EXPOSE 3000 8080 8081
CMD ["node", "dist/main.js"]
