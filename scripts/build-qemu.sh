#!/bin/bash
# build-qemu.sh: build QEMU with the pvrdma-overlay device (qemu-device/)
# and point build/qemu at the result: build/qemu/qemu-system-x86_64.
#
# Two cache levels under $PVO_CACHE:
#   qemu-base-<basekey>/  the patched QEMU tree (src/) and its configured
#                         build directory (build/). basekey hashes what a
#                         device change does not touch: versions.sh, this
#                         script, the patches, the configure flags.
#   qemu-<key>/build/     the finished qemu-system-x86_64 for one state of
#                         the device sources (key = basekey + the sources +
#                         include/pvo-device.h). Never changed once there.
# A rerun with no change only re-points build/qemu (a second). A change of
# the device sources or the header rebuilds incrementally in the base tree
# (about a minute); anything else builds the base from scratch (5-10 min).
# A finished build is copied into qemu-<key>.partial and renamed, so an
# interrupted build never counts as done; ninja resumes it next time.
#
# Firmware comes from Debian's seabios and qemu-system-data: run QEMU with
# -L /usr/share/seabios -L /usr/share/qemu (and romfile= on NICs).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
. "$here/versions.sh"

configure_flags=(
	--python=/usr/bin/python3
	--target-list=x86_64-softmmu
	--without-default-features
	--enable-kvm --enable-tcg
	--enable-vhost-user
	--enable-slirp
	--enable-virtfs --enable-attr --enable-cap-ng
	--disable-docs --disable-install-blobs
	--disable-download	# offline: libfdt is not installed, so no fdt
)

# Copied into hw/virtio/ next to the in-tree vhost-user devices.
device_sources=(
	"$root/qemu-device/vhost-user-rdma.c"
	"$root/qemu-device/vhost-user-rdma-pci.c"
	"$root/qemu-device/vhost-user-rdma.h"
	"$root/include/pvo-device.h"
)
# Applied in this order with patch -p1.
patches=(
	"$root/qemu-device/integration.patch"	# adds our files to the build
	"$root/qemu-device/ds-tarball.patch"	# Debian +ds: no edk2 images
)

log() { echo "qemu: $*"; }
die() { echo "qemu: error: $*" >&2; exit 1; }

hash_files() {
	local f
	for f in "$@"; do
		printf '== %s\n' "${f#"$root"/}"
		cat "$f"
	done
}

point_link() {
	mkdir -p "$root/build"
	ln -sfn "$1" "$root/build/qemu.tmp"
	mv -T "$root/build/qemu.tmp" "$root/build/qemu"
}

# Keep $1 and the newest other directory matching $2 (but not $3); drop
# the rest.
prune() {
	local keep=$1 pattern=$2 exclude=${3:-} d n=0
	# shellcheck disable=SC2045,SC2086 # newest first; no spaces in paths
	for d in $(ls -dt $pattern 2>/dev/null); do
		[ -d "$d" ] || continue
		case "$d" in *.partial) continue ;; esac
		# shellcheck disable=SC2254 # $exclude is a pattern
		case "$d" in $exclude) continue ;; esac
		[ "$d" = "$keep" ] && continue
		n=$((n + 1))
		if [ $n -ge 2 ]; then
			log "removing old $d"
			rm -rf "$d"
		fi
	done
}

# Copy the device sources into the tree, leaving unchanged files alone so
# that ninja rebuilds only what changed.
sync_sources() {
	local f dst
	for f in "${device_sources[@]}"; do
		dst="$1/hw/virtio/$(basename "$f")"
		cmp -s "$f" "$dst" || cp "$f" "$dst"
	done
}

# ninja in the background, one progress line every 30 s. Only the
# emulator: the rest of the default target (tests, keymaps, the data
# bundle) is not used, firmware comes from Debian with -L.
run_ninja() {
	local builddir=$1 logfile=$2 pid status last
	nice -n 10 ninja -C "$builddir" -j2 qemu-system-x86_64 >"$logfile" 2>&1 &
	pid=$!
	# Do not leave ninja running when this script is stopped.
	trap 'kill "$pid" 2>/dev/null; exit 143' TERM
	trap 'kill "$pid" 2>/dev/null; exit 130' INT
	while kill -0 "$pid" 2>/dev/null; do
		sleep 30 &
		wait $! || true
		last=$(grep -ao '^\[[0-9]*/[0-9]*\]' "$logfile" | tail -n1 || true)
		[ -n "$last" ] && log "building $last"
	done
	status=0
	wait "$pid" || status=$?
	trap - INT TERM
	return $status
}

# A source or patch dropped into qemu-device/ must not be silently ignored.
for f in "$root"/qemu-device/*.[ch] "$root"/qemu-device/*.patch; do
	case " ${device_sources[*]} ${patches[*]} " in
	*" $f "*) ;;
	*) die "$f is not listed in device_sources or patches in $0" ;;
	esac
done
for f in "${device_sources[@]}" "${patches[@]}"; do
	[ -f "$f" ] || die "$f is missing"
done

basekey=$({
	hash_files "$here/versions.sh" "$here/build-qemu.sh" "${patches[@]}"
	printf '%s\n' "${configure_flags[@]}"
} | sha256sum | cut -c1-16)
key=$({
	echo "$basekey"
	hash_files "${device_sources[@]}"
} | sha256sum | cut -c1-16)
base="$PVO_CACHE/qemu-base-$basekey"
final="$PVO_CACHE/qemu-$key"

# tests/vm/t-libvirt's QEMU runs as an unprivileged user and opens this
# build through build/qemu: the cache must be searchable by all, also
# where it is a private directory (PVO_CACHE=$(mktemp -d))
mkdir -p "$PVO_CACHE"
chmod a+x "$PVO_CACHE"
if [ -x "$final/build/qemu-system-x86_64" ]; then
	point_link "$final/build"
	log "up to date: build/qemu -> $final/build"
	exit 0
fi

for tool in meson ninja patch; do
	command -v $tool >/dev/null || die "$tool not found: run 'make deps'"
done
[ -x /usr/bin/python3 ] || die "/usr/bin/python3 not found: run 'make deps'"

# One build at a time; under the lock, a .partial dir is a leftover.
exec 9>"$PVO_CACHE/qemu-build.lock"
flock 9
if [ -x "$final/build/qemu-system-x86_64" ]; then
	point_link "$final/build"
	log "built meanwhile by another run: build/qemu -> $final/build"
	exit 0
fi
rm -rf "$PVO_CACHE"/qemu-*.partial

# The base tree: patched, configured once ('configured' stamp).
if [ ! -f "$base/configured" ]; then
	rm -rf "$base"
	pristine=$("$here/unpack.sh" qemu)
	log "copying QEMU $QEMU_VER source to $base/src"
	mkdir -p "$base"
	cp -a "$pristine" "$base/src"
	rm -f "$base/src/.unpacked"
	sync_sources "$base/src"
	for p in "${patches[@]}"; do
		log "applying $(basename "$p")"
		patch -d "$base/src" -p1 --batch --forward --no-backup-if-mismatch \
			--quiet <"$p" ||
			die "$(basename "$p") does not apply to QEMU $QEMU_VER"
	done
	log "configuring (log: $base/configure.log)"
	mkdir -p "$base/build"
	if ! (cd "$base/build" &&
		nice -n 10 ../src/configure "${configure_flags[@]}") \
		>"$base/configure.log" 2>&1; then
		tail -n 30 "$base/configure.log" >&2
		die "configure failed; full log in $base/configure.log"
	fi
	touch "$base/configured"
	log "building (5-10 min on 2 cores; log: $base/build.log)"
else
	sync_sources "$base/src"
	log "building incrementally in $base (log: $base/build.log)"
fi

start=$(date +%s)
if ! run_ninja "$base/build" "$base/build.log"; then
	grep -a -B2 -A12 -m3 'error' "$base/build.log" >&2 ||
		tail -n 40 "$base/build.log" >&2
	die "build failed; full log in $base/build.log (remove $base to start over)"
fi
log "built in $(($(date +%s) - start)) s"

mkdir -p "$final.partial/build"
cp "$base/build/qemu-system-x86_64" "$final.partial/build/"
mv -T "$final.partial" "$final"

point_link "$final/build"
prune "$final" "$PVO_CACHE/qemu-*" "$PVO_CACHE/qemu-base-*"
prune "$base" "$PVO_CACHE/qemu-base-*"
log "done: build/qemu -> $final/build"
