#!/bin/sh
# meson-setup.sh DIR [-Dopt=value ...]: configure the meson build directory
# DIR for the project's user-space C (meson.build), with libvhost-user from
# the QEMU tree `make deps` fetched. Runs meson only when DIR is new or its
# options or the project's default options (top meson.build) changed, then
# from scratch, so no option lingers; otherwise ninja's own regeneration
# covers edits to the meson.build files.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=$1
shift
qemu=$("$here/unpack.sh" qemu)
opts="$* -Dqemu_src=$qemu"
defaults=$(sed -n '/^project(/,/^  \])/p' "$here/../meson.build" | cksum)
stamp="$dir/.pvo-meson-options"
if [ -f "$dir/build.ninja" ] &&
	[ "$(cat "$stamp" 2>/dev/null)" = "$opts $defaults" ]; then
	exit 0
fi
log="$dir.setup.log"
mkdir -p "$(dirname "$dir")"
echo "meson: configuring $dir ($*)"
wipe=""
[ -f "$dir/build.ninja" ] && wipe="--wipe"
# shellcheck disable=SC2086 # opts are separate words
if ! meson setup $wipe "$dir" "$here/.." $opts >"$log" 2>&1; then
	cat "$log" >&2
	echo "meson: configuring $dir failed (log: $log)" >&2
	exit 1
fi
echo "$opts $defaults" >"$stamp"
