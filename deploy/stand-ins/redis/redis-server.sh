#!/bin/sh
# Debian's redis-server with protected mode off unless the arguments say otherwise: the default
# upstream's image is built with. A configuration file, if given, stays the first argument.
if [ "${1%.conf}" != "$1" ]; then
  conf="$1"
  shift
  exec /usr/bin/redis-server "$conf" --protected-mode no "$@"
fi
exec /usr/bin/redis-server --protected-mode no "$@"
