# citizen-staking: the compiled binary on a slim Debian, as a non-root user (the default target),
# and the source-tree image the compose file's devnet profile runs (target `devnet`).
# Base images are pinned by version; pin them by digest too (`docker buildx imagetools inspect
# oven/bun:1.4.5`) where the registry can be reached. No image was built from this file on the
# machine that wrote it (no Docker engine there): see docs/operators.md, "Deploying".

# The Bun of scripts/bootstrap.sh, with the locked dependencies.
FROM oven/bun:1.4.5 AS build
WORKDIR /src
COPY package.json bun.lock ./
COPY patches ./patches
RUN bun install --frozen-lockfile
COPY . .
RUN ./scripts/build-binary.sh dist/citizen-staking

# The devnet: deploys our contracts on the compose file's anvil and runs the seeded scenario.
# Source-only (it needs the contracts' build and the scenario generator): never a production image.
FROM build AS devnet
# A named volume mounted here starts with this owner, so the non-root user can write the
# devnet's description file into it.
RUN mkdir /devnet && chown bun:bun /devnet
USER bun
ENTRYPOINT ["bun", "scripts/devnet.ts"]

# The binary alone: no Bun, no node_modules, no source tree.
FROM debian:bookworm-slim AS runtime
RUN useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin citizen-staking
COPY --from=build /src/dist/citizen-staking /usr/local/bin/citizen-staking
USER 10001
# In a container the API listens on every interface; HOST and PORT still override.
ENV HOST=0.0.0.0 PORT=3000
EXPOSE 3000
# The image has no curl: the binary asks the API on this host itself (exit 0 on 200).
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["citizen-staking", "healthcheck"]
ENTRYPOINT ["citizen-staking"]
CMD ["api"]
