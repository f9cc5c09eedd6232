#!/bin/sh
# unpack.sh qemu|rdma-core|kernel: unpack a fetched third-party source (or the
# guest kernel image) once into $PVO_CACHE/tree/, pristine, and print its path.
# Consumers copy or build out of tree; they never modify it.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.sh"
src="$PVO_CACHE/src"
tree="$PVO_CACHE/tree"
mkdir -p "$tree"
case "$1" in
qemu) name="qemu-$QEMU_VER" tarball="$src/qemu_${QEMU_DEBVER}.orig.tar.xz" ;;
rdma-core) name="rdma-core-$RDMA_CORE_VER" tarball="$src/rdma-core_${RDMA_CORE_VER}.orig.tar.gz" ;;
kernel) name="linux-image-$GUEST_KVER" tarball=$(ls "$src"/linux-image-"$GUEST_KVER"_*.deb) ;;
*) echo "usage: $0 qemu|rdma-core|kernel" >&2; exit 2 ;;
esac
if [ ! -e "$tarball" ]; then
	echo "unpack: $tarball is missing; run 'make deps' first" >&2
	exit 1
fi
if [ ! -f "$tree/$name/.unpacked" ]; then
	echo "unpack: $(basename "$tarball") -> $tree/$name" >&2
	rm -rf "$tree/$name.tmp" "$tree/$name"
	mkdir -p "$tree/$name.tmp"
	case "$tarball" in
	*.deb) dpkg-deb -x "$tarball" "$tree/$name.tmp" ;;
	*) tar -xf "$tarball" -C "$tree/$name.tmp" --strip-components=1 ;;
	esac
	touch "$tree/$name.tmp/.unpacked"
	mv "$tree/$name.tmp" "$tree/$name"
fi
echo "$tree/$name"
