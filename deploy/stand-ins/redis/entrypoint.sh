#!/bin/sh
# The official redis image's entrypoint behaviour, written for the stand-in: options alone run
# redis-server; as root, the working directory (the /data volume) is handed to redis and root is
# dropped; the server runs as PID 1 with a private umask.
set -e

case "$1" in
  -* | *.conf) set -- redis-server "$@" ;;
esac

if [ "$1" = "redis-server" ] && [ "$(id -u)" = "0" ]; then
  find . \! -user redis -exec chown redis '{}' +
  exec setpriv --reuid=redis --regid=redis --init-groups "$0" "$@"
fi

[ "$(umask)" != "0022" ] || umask 0077
exec "$@"
