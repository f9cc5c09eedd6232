#!/bin/bash
# build-qemu.sh: build QEMU with the pvrdma-overlay device (qemu-device/)
# and point build/qemu at the build directory.
#
# The build is cached in $PVO_CACHE/qemu-<key>, keyed by a hash of every
# input (versions, this script, qemu-device/ sources and patches, the
# device header, the configure flags): a rerun with no change only
# re-points the symlink. A build runs in qemu-<key>.partial and is renamed
# when it has finished, so an interrupted one never counts as done.
#
# Result: build/qemu/qemu-system-x86_64. Firmware comes from Debian's
# seabios and qemu-system-data: run it with -L /usr/share/seabios
# -L /usr/share/qemu (and romfile= on NICs).
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

# Sources copied into hw/virtio/ next to the in-tree vhost-user devices.
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

# Everything that changes the binary; docs (*.md) do not.
compute_key() {
	local f
	{
		for f in "$here/versions.sh" "$here/build-qemu.sh" \
			"$root/include/pvo-device.h" \
			$(find "$root/qemu-device" -type f ! -name '*.md' | LC_ALL=C sort); do
			printf '== %s\n' "${f#"$root"/}"
			cat "$f"
		done
		printf '%s\n' "${configure_flags[@]}"
	} | sha256sum | cut -c1-16
}

point_link() {
	mkdir -p "$root/build"
	ln -sfn "$1" "$root/build/qemu.tmp"
	mv -T "$root/build/qemu.tmp" "$root/build/qemu"
}

# Keep the current build and the newest other one; drop the rest.
prune_old_builds() {
	local keep=$1 d n=0
	for d in $(ls -dt "$PVO_CACHE"/qemu-* 2>/dev/null); do
		[ -d "$d/build" ] || continue
		[ "$d" = "$keep" ] && continue
		n=$((n + 1))
		if [ $n -ge 2 ]; then
			log "removing old build $d"
			rm -rf "$d"
		fi
	done
}

# ninja in the background, one progress line every 30 s.
run_ninja() {
	local builddir=$1 logfile=$2 pid status last
	nice -n 10 ninja -C "$builddir" -j2 >"$logfile" 2>&1 &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		sleep 30 &
		wait $! || true
		last=$(grep -ao '^\[[0-9]*/[0-9]*\]' "$logfile" | tail -n1 || true)
		[ -n "$last" ] && log "building $last"
	done
	status=0
	wait "$pid" || status=$?
	return $status
}

key=$(compute_key)
final="$PVO_CACHE/qemu-$key"

if [ -x "$final/build/qemu-system-x86_64" ]; then
	point_link "$final/build"
	log "up to date: build/qemu -> $final/build"
	exit 0
fi

for f in "${device_sources[@]}" "${patches[@]}"; do
	[ -f "$f" ] || die "$f is missing"
done
for tool in meson ninja patch; do
	command -v $tool >/dev/null || die "$tool not found: run 'make deps'"
done
[ -x /usr/bin/python3 ] || die "/usr/bin/python3 not found: run 'make deps'"

mkdir -p "$PVO_CACHE"
# One build at a time: a .partial dir seen under the lock is a leftover.
exec 9>"$PVO_CACHE/qemu-build.lock"
flock 9
if [ -x "$final/build/qemu-system-x86_64" ]; then
	point_link "$final/build"
	log "built meanwhile by another run: build/qemu -> $final/build"
	exit 0
fi
rm -rf "$PVO_CACHE"/qemu-*.partial "$final"

pristine=$("$here/unpack.sh" qemu)
work="$final.partial"
mkdir -p "$work"

log "copying QEMU $QEMU_VER source to $work/src"
cp -a "$pristine" "$work/src"
rm -f "$work/src/.unpacked"
cp "${device_sources[@]}" "$work/src/hw/virtio/"
for p in "${patches[@]}"; do
	log "applying $(basename "$p")"
	patch -d "$work/src" -p1 --batch --forward --no-backup-if-mismatch \
		--quiet <"$p" || die "$(basename "$p") does not apply to QEMU $QEMU_VER"
done

log "configuring (log: $work/configure.log)"
mkdir -p "$work/build"
if ! (cd "$work/build" && nice -n 10 ../src/configure "${configure_flags[@]}") \
	>"$work/configure.log" 2>&1; then
	tail -n 30 "$work/configure.log" >&2
	die "configure failed; full log in $work/configure.log"
fi

log "building (about 5 min on 2 cores; log: $work/build.log)"
start=$(date +%s)
if ! run_ninja "$work/build" "$work/build.log"; then
	grep -a -B2 -A12 -m3 'error' "$work/build.log" >&2 || tail -n 40 "$work/build.log" >&2
	die "build failed; full log in $work/build.log"
fi
[ -x "$work/build/qemu-system-x86_64" ] || die "ninja finished but qemu-system-x86_64 is missing"
log "built in $(($(date +%s) - start)) s"

mv -T "$work" "$final"
# The build tree's own symlinks (qemu-bundle/) named the .partial path.
find "$final" -type l -lname "$work/*" | while read -r l; do
	t=$(readlink "$l")
	ln -sfn "$final${t#"$work"}" "$l"
done

point_link "$final/build"
prune_old_builds "$final"
log "done: build/qemu -> $final/build"
