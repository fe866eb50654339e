# report-etl: one image for every part (scheduler, worker, admin, start, simulate, run ...).
# The image runs the one build (npm run build: tsc compiles src/ to dist/) through bin/, as `npx report-etl` does: Node
# could run the TypeScript sources directly, but its type stripper costs about 30 MB of memory per process.

FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# npm ci runs package.json's `prepare`; without src/ here it builds nothing (the build is the RUN below).
COPY scripts/prepare-build.js ./scripts/
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

FROM node:24-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts/prepare-build.js ./scripts/
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

FROM node:24-slim
ENV NODE_ENV=production \
    REPORT_ETL_CONFIG=/app/jobs.yaml \
    ADMIN_PORT=3000
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY bin ./bin
COPY package.json ./
COPY migrations ./migrations
COPY jobs.yaml ./jobs.yaml
# The image's unprivileged user (uid 1000).
USER node
EXPOSE 3000 8080
# /healthz answers on the admin server (start, admin); scheduler and worker containers set their own check.
# /healthz and /readyz are open; /metrics needs METRICS_TOKEN or the admin credentials (ADMIN_TOKEN, or
# ADMIN_USER + ADMIN_PASSWORD), the admin pages the latter; with none of them set, loopback callers only.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.ADMIN_PORT || 3000) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Node flags: see src/runtime-flags.ts; bin/report-etl.js restarts worker and start with the long-running ones.
ENTRYPOINT ["node", "--max-semi-space-size=1", "bin/report-etl.js"]
CMD ["start", "--host", "0.0.0.0"]
