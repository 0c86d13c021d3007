# citizen-staking: the compiled binary on a slim Debian, as a non-root user (the default target),
# and the source-tree image the compose file's devnet profile runs (target `devnet`).
# Base images are pinned by version; pin them by digest too (`docker buildx imagetools inspect
# oven/bun:1.4.5`) where the registry can be reached. scripts/container-test.sh builds both
# targets with podman (on locally built stand-ins for the base images) and runs the compose file.
#
# tini is PID 1 in both images. The kernel ignores a signal sent to a namespace's PID 1 unless it
# has a handler; ours install theirs only once started, so a process still waiting for Postgres,
# Redis or the node would ignore `docker stop` until the engine's SIGKILL (measured: 137 after
# the full 10 s). Under tini it ends at once (143), and after start-up it still stops cleanly
# (0). `init: true` would do the same under compose only; Kubernetes and `docker run` add no init.

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
# It writes the devnet's description into the `devnet` volume that the runtime containers mount
# read-only. Whichever container mounts a new volume first decides its owner (Docker copies the
# owner of the image's directory, podman hands the volume to that container's user), so this
# image and the runtime image run as the same user and both own /devnet.
RUN apt-get update \
  && apt-get install -y --no-install-recommends tini \
  && rm -rf /var/lib/apt/lists/* \
  && groupadd --system --gid 10001 citizen-staking \
  && useradd --system --uid 10001 --gid citizen-staking --no-create-home \
    --shell /usr/sbin/nologin citizen-staking \
  && install -d -o citizen-staking -g citizen-staking /devnet
USER 10001
ENTRYPOINT ["tini", "--", "bun", "scripts/devnet.ts"]

# The binary alone: no Bun, no node_modules, no source tree.
FROM debian:bookworm-slim AS runtime
# tini (see the top), the devnet target's user, and its /devnet (see there).
RUN apt-get update \
  && apt-get install -y --no-install-recommends tini \
  && rm -rf /var/lib/apt/lists/* \
  && groupadd --system --gid 10001 citizen-staking \
  && useradd --system --uid 10001 --gid citizen-staking --no-create-home \
    --shell /usr/sbin/nologin citizen-staking \
  && install -d -o citizen-staking -g citizen-staking /devnet
COPY --from=build /src/dist/citizen-staking /usr/local/bin/citizen-staking
USER 10001
# In a container the API listens on every interface; HOST and PORT still override.
ENV HOST=0.0.0.0 PORT=3000
EXPOSE 3000
# The image has no curl: the binary asks the API on this host itself (exit 0 on 200).
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["citizen-staking", "healthcheck"]
ENTRYPOINT ["tini", "--", "citizen-staking"]
CMD ["api"]
