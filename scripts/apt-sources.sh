#!/bin/sh
# Add the apt source entries the build needs: deb-src for bookworm and trixie
# (QEMU 10.0 and rdma-core 56.1 sources), and bookworm-backports (meson >= 1.5).
# Trixie is pinned low so that it only ever serves sources.
set -eu
f=/etc/apt/sources.list.d/pvrdma-overlay.sources
want='Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg'
if [ ! -f "$f" ] || [ "$(cat "$f")" != "$want" ]; then
	echo "deps: adding apt sources ($f)"
	printf '%s\n' "$want" >"$f"
	rm -f /var/lib/apt/periodic/pvrdma-overlay-updated
fi
stamp=/var/lib/apt/periodic/pvrdma-overlay-updated
mkdir -p /var/lib/apt/periodic
if [ ! -f "$stamp" ] || [ -n "$(find "$stamp" -mmin +720)" ]; then
	echo "deps: apt-get update"
	apt-get update -q >/dev/null
	touch "$stamp"
fi
