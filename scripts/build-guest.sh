#!/bin/sh
# build-guest.sh: build what a TCG test guest boots, into build/guest/:
#   vmlinuz            the Debian guest kernel (scripts/unpack.sh kernel)
#   vmlinux            the same kernel uncompressed (an ELF with a PVH entry)
#   initramfs.cpio.gz  busybox, the modules needed to mount the host root over
#                      virtio-9p, and guest-image/init + guest-image/agent
#   layer/             an overlayfs layer the guest stacks over the host root:
#                      the guest kernel's modules (plus our pvrdma_overlay.ko in
#                      updates/) and the rdma-core 56.1 stage with our provider
#   ramroot.cpio.zst   the ram root (pvo.root=ram, migratable: no 9p): a whole
#                      root file system in the initramfs, staged by
#                      guest-image/ramroot.py from guest-image/ramroot.list
#                      (host packages and their libraries, the layer, selected
#                      modules); ramroot.manifest lists its paths
# Each output is keyed by a hash of its inputs; a no-change rerun only hashes.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
# shellcheck source=scripts/versions.sh
. "$here/versions.sh"

out="$top/build/guest"
image_src="$top/guest-image"
driver_ko="$top/guest-driver/pvrdma_overlay.ko"
rdma_stage="$top/build/rdma-core-stage"
# Modules the initramfs loads (with their dependencies) to reach the root.
initramfs_modules="virtio_pci virtio_net 9pnet_virtio 9p overlay"

log() { echo "guest: $*"; }
die() {
	echo "guest: error: $*" >&2
	exit 1
}

for tool in busybox depmod modprobe cpio gzip sha256sum xz readelf zstd objcopy ldd python3 dpkg-query; do
	command -v "$tool" >/dev/null 2>&1 ||
		die "'$tool' is missing; run 'make deps' (it installs busybox-static, kmod, cpio, binutils, python3)"
done
busybox_bin=$(command -v busybox)
# A dynamically linked busybox would not run in the initramfs.
if LC_ALL=C readelf -l "$busybox_bin" 2>/dev/null | grep -q 'Requesting program interpreter'; then
	die "$busybox_bin is dynamically linked; install busybox-static ('make deps')"
fi

kernel_tree=$("$here/unpack.sh" kernel)
kmod_src="$kernel_tree/lib/modules/$GUEST_KVER"
[ -d "$kmod_src/kernel" ] || die "$kmod_src has no modules; remove $kernel_tree and rerun"
# The unpacked tree is immutable once .unpacked exists; its identity is enough.
kernel_id="$GUEST_KVER $(stat -c '%s %Y' "$kernel_tree/boot/vmlinuz-$GUEST_KVER" "$kernel_tree/.unpacked" | tr '\n' ' ')"

# hash_files FILE...: one line per file (content hash), or "absent" for none.
hash_files() {
	for f in "$@"; do
		if [ -e "$f" ]; then
			sha256sum "$f"
		else
			echo "absent $f"
		fi
	done
}

# tree_manifest DIR: paths, sizes, mtimes and link targets of a tree (cheap).
tree_manifest() {
	if [ -d "$1" ]; then
		(cd "$1" && find . -printf '%p %y %s %T@ %l\n' | LC_ALL=C sort)
	else
		echo "absent $1"
	fi
}

key_of() { sha256sum | cut -d' ' -f1; }

# up_to_date NAME KEY: true if output NAME was built from KEY.
up_to_date() {
	[ -f "$out/.$1.key" ] && [ "$(cat "$out/.$1.key")" = "$2" ]
}

mkdir -p "$out"
script_hash=$(sha256sum "$0" | cut -d' ' -f1)

# kmod_base BASE TREE: make BASE/lib/modules/$GUEST_KVER point at TREE, so
# depmod -b / modprobe -d (which want a /lib/modules layout) work on a
# /usr/lib/modules tree.
kmod_base() {
	base="$1"
	tree="$2"
	rm -rf "$base"
	mkdir -p "$base/lib/modules"
	ln -s "$tree" "$base/lib/modules/$GUEST_KVER"
}

# --- kernel ---------------------------------------------------------------
# vmlinuz is Debian's xz-compressed bzImage. The harness boots vmlinux, the
# ELF inside it, through its PVH entry point: under TCG that skips about 5 s of
# decompression and real-mode set-up.
if ! cmp -s "$kernel_tree/boot/vmlinuz-$GUEST_KVER" "$out/vmlinuz" 2>/dev/null ||
	[ ! -f "$out/vmlinux" ]; then
	log "kernel $GUEST_KVER -> build/guest/vmlinuz, vmlinux"
	vmlinuz="$kernel_tree/boot/vmlinuz-$GUEST_KVER"
	xz_at=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$vmlinuz" | head -1 | cut -d: -f1)
	[ -n "$xz_at" ] || die "no xz stream in $vmlinuz; has Debian changed the kernel compression? (see CONFIG_KERNEL_* in its config)"
	tail -c +"$((xz_at + 1))" "$vmlinuz" | xz -dc --single-stream >"$out/vmlinux.tmp" ||
		die "cannot decompress the kernel image in $vmlinuz"
	# Xen ELF note 0x12 (PHYS32_ENTRY) is the PVH entry QEMU boots through.
	LC_ALL=C readelf -n "$out/vmlinux.tmp" 2>/dev/null | grep -q 'Xen.*(0x00000012)' ||
		die "the kernel in $vmlinuz has no PVH entry note (CONFIG_PVH); it cannot boot as an ELF"
	mv "$out/vmlinux.tmp" "$out/vmlinux"
	cp "$vmlinuz" "$out/vmlinuz.tmp"
	mv "$out/vmlinuz.tmp" "$out/vmlinuz"
fi

# --- layer ----------------------------------------------------------------
# The layer mirrors the guest's root: files here hide the host's files at the
# same path. Everything goes under usr/ because the host's /lib, /bin, /sbin
# are merged-/usr symlinks; a real lib/ directory here would hide them.
layer_key=$({
	echo "script $script_hash"
	echo "kernel $kernel_id"
	hash_files "$driver_ko"
	echo "stage $(readlink -f "$rdma_stage" || true)"
	tree_manifest "$rdma_stage"
} | key_of)

if up_to_date layer "$layer_key" && [ -d "$out/layer" ]; then
	log "layer up to date"
else
	log "layer: assembling build/guest/layer"
	new="$out/layer.new"
	rm -rf "$new" "$out/layer.kmod"
	mkdir -p "$new/usr/lib/modules"
	kmods="$new/usr/lib/modules/$GUEST_KVER"
	# Hardlinks are free and the guest only reads them; copy across devices.
	cp -al "$kmod_src" "$kmods" 2>/dev/null || {
		rm -rf "$kmods"
		cp -a "$kmod_src" "$kmods"
	}
	if [ -f "$driver_ko" ]; then
		mkdir -p "$kmods/updates"
		cp "$driver_ko" "$kmods/updates/"
		log "layer: + guest-driver/pvrdma_overlay.ko in updates/"
	else
		log "notice: guest-driver/pvrdma_overlay.ko not built yet; layer has no pvrdma_overlay module"
	fi

	if [ -d "$rdma_stage" ]; then
		# The stage is an install tree rooted at /. Refuse top-level
		# directories that would hide the host's merged-/usr symlinks.
		for d in bin sbin lib lib32 lib64 libx32; do
			if [ -d "$rdma_stage/$d" ] && [ ! -L "$rdma_stage/$d" ]; then
				die "build/rdma-core-stage/$d is a directory: it would hide the host's /$d -> usr/$d symlink in the guest; install rdma-core with prefix /usr"
			fi
		done
		cp -a "$rdma_stage/." "$new/"
		lib=$(find "$new" -name 'libibverbs.so.1' | head -1)
		case "$lib" in
		"$new/usr/lib/x86_64-linux-gnu/libibverbs.so.1") ;;
		"") log "notice: build/rdma-core-stage has no libibverbs.so.1" ;;
		*) die "build/rdma-core-stage installs ${lib#"$new"}; the guest only prefers it over the host's copy at /usr/lib/x86_64-linux-gnu (use CMAKE_INSTALL_PREFIX=/usr, CMAKE_INSTALL_LIBDIR=lib/x86_64-linux-gnu)" ;;
		esac
		log "layer: + rdma-core stage ($(cd "$new" && find usr/bin -name 'ibv_*' 2>/dev/null | wc -l) ibv_* tools)"
	else
		log "notice: build/rdma-core-stage not built yet; the guest will use the host's rdma-core"
	fi

	# The layer is a lower layer, so its index must be complete before boot.
	kmod_base "$out/layer.kmod" "$kmods"
	depmod -b "$out/layer.kmod" "$GUEST_KVER" ||
		die "depmod failed on the layer's module tree"
	rm -rf "$out/layer.kmod"
	[ -s "$kmods/modules.dep" ] || die "depmod wrote no modules.dep in $kmods"

	rm -rf "$out/layer.old"
	[ -d "$out/layer" ] && mv "$out/layer" "$out/layer.old"
	mv "$new" "$out/layer"
	rm -rf "$out/layer.old"
	echo "$layer_key" >"$out/.layer.key"
fi

# --- initramfs ------------------------------------------------------------
initramfs_key=$({
	echo "script $script_hash"
	echo "kernel $kernel_id"
	echo "modules $initramfs_modules"
	hash_files "$busybox_bin" "$image_src/init" "$image_src/agent"
} | key_of)

if up_to_date initramfs "$initramfs_key" && [ -f "$out/initramfs.cpio.gz" ]; then
	log "initramfs up to date"
else
	log "initramfs: packing build/guest/initramfs.cpio.gz"
	for f in init agent; do
		[ -f "$image_src/$f" ] || die "guest-image/$f is missing"
	done
	root="$out/initramfs.root"
	rm -rf "$root"
	mkdir -p "$root/bin" "$root/dev" "$root/proc" "$root/sys" "$root/etc" \
		"$root/newroot" "$root/host" "$root/layer" "$root/rw" "$root/pvo"
	cp "$busybox_bin" "$root/bin/busybox"
	for applet in $("$busybox_bin" --list); do
		[ "$applet" = busybox ] || ln -s busybox "$root/bin/$applet"
	done
	# With /dev/console in the archive, init has its stdio from the start.
	mknod -m 600 "$root/dev/console" c 5 1 2>/dev/null || true
	cp "$image_src/init" "$root/init"
	cp "$image_src/agent" "$root/pvo/agent"
	chmod 755 "$root/init" "$root/pvo/agent"

	# Resolve dependencies with the layer's modules.dep (same kernel tree).
	kmod_base "$out/initramfs.kmod" "$out/layer/usr/lib/modules/$GUEST_KVER"
	deps="$out/initramfs.deps"
	: >"$deps"
	for m in $initramfs_modules; do
		modprobe -d "$out/initramfs.kmod" -S "$GUEST_KVER" --show-depends "$m" >>"$deps" ||
			die "cannot resolve module $m for $GUEST_KVER with modprobe --show-depends"
	done
	list="$root/etc/pvo-modules"
	: >"$list"
	while read -r kind path _; do
		[ "$kind" = insmod ] || continue # "builtin NAME": nothing to load
		rel=${path#"$out/initramfs.kmod/lib/modules/$GUEST_KVER/"}
		grep -qxF "$rel" "$list" && continue
		mkdir -p "$root/lib/modules/$(dirname "$rel")"
		cp "$kmod_src/$rel" "$root/lib/modules/$rel"
		echo "$rel" >>"$list"
	done <"$deps"
	nmods=$(wc -l <"$list")
	rm -f "$deps"
	rm -rf "$out/initramfs.kmod"
	[ "$nmods" -gt 0 ] || die "no modules resolved for the initramfs"

	(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) |
		gzip -6 -n >"$out/initramfs.cpio.gz.tmp"
	mv "$out/initramfs.cpio.gz.tmp" "$out/initramfs.cpio.gz"
	rm -rf "$root"
	echo "$initramfs_key" >"$out/.initramfs.key"
	log "initramfs: $nmods modules, $(du -h "$out/initramfs.cpio.gz" | cut -f1)"
fi
# --- ram root ---------------------------------------------------------------
# Host files come from Debian packages: any change of the installed package
# set (versions) rebuilds it, as does a new layer (driver, rdma-core stage).
# zstd: a third smaller than gzip, and the guest unpacks it faster (about
# 0.5 s of a 3 s boot under TCG; an uncompressed archive boots 0.3 s faster
# but is three times bigger in every guest's RAM until unpacked).
ramroot_key=$({
	echo "script $script_hash"
	echo "kernel $kernel_id"
	echo "layer $layer_key"
	hash_files "$image_src/init" "$image_src/agent" "$image_src/ramroot.py" "$image_src/ramroot.list"
	dpkg-query -W -f '${Package}:${Architecture} ${Version}\n' | LC_ALL=C sort | key_of
} | key_of)

if up_to_date ramroot "$ramroot_key" && [ -f "$out/ramroot.cpio.zst" ] && [ -f "$out/ramroot.manifest" ]; then
	log "ram root up to date"
else
	log "ram root: staging build/guest/ramroot.stage (guest-image/ramroot.list)"
	for f in init agent ramroot.py ramroot.list; do
		[ -f "$image_src/$f" ] || die "guest-image/$f is missing"
	done
	stage="$out/ramroot.stage"
	python3 "$image_src/ramroot.py" --list "$image_src/ramroot.list" --layer "$out/layer" \
		--kver "$GUEST_KVER" --image-src "$image_src" --out "$stage" \
		--manifest "$out/ramroot.manifest.tmp" || die "staging the ram root failed"
	[ -x "$stage/init" ] || die "staging the ram root failed (no $stage/init)"
	size=$(du -sm "$stage" | cut -f1)
	(cd "$stage" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) |
		zstd -q -10 -T0 >"$out/ramroot.cpio.zst.tmp"
	mv "$out/ramroot.cpio.zst.tmp" "$out/ramroot.cpio.zst"
	mv "$out/ramroot.manifest.tmp" "$out/ramroot.manifest"
	rm -rf "$stage"
	echo "$ramroot_key" >"$out/.ramroot.key"
	log "ram root: ${size} MiB unpacked, $(du -h "$out/ramroot.cpio.zst" | cut -f1) compressed"
fi
log "ok (build/guest: vmlinuz vmlinux initramfs.cpio.gz layer/ ramroot.cpio.zst)"
