#!/bin/bash
# build-guest-image.sh (make guest-image): a Debian 13 (trixie) guest disk
# image on Debian's own 6.12 kernel, made from Debian's archive with
# mmdebstrap: rdma-core, perftest, rdmacm-utils and nvme-cli from Debian,
# and this tree's guest packages (make deb) installed with apt inside it:
# pvrdma-overlay-dkms, which DKMS builds there for the image's kernel, and
# pvrdma-overlay-provider. ttyS0 has a login prompt (root, password
# "pvo": a test image), or, with pvo.agent on the kernel command line, the
# test harness's agent (guest-image/agent) as a systemd service; nothing
# else of the project is in it.
#
# Results, in $PVO_CACHE/guest-image-<key> (key: every input: the package
# list, the two .debs, the agent and its unit, this script), linked from
# build/guest-image:
#   trixie.qcow2   the root file system (ext4, no partition table), as
#                  /dev/vda; guests boot it with snapshot=on
#   vmlinuz, initrd.img   its kernel and initramfs, for QEMU's -kernel
#   kver           the kernel's release
#   manifest       the image's packages and versions
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
# shellcheck source=scripts/versions.sh
. "$here/versions.sh"
cd "$root"

suite=trixie
mirror=http://deb.debian.org/debian
pkgs="linux-image-amd64 linux-headers-amd64 dkms systemd-sysv udev kmod
 iproute2 procps hostname bash login ca-certificates rdma-core ibverbs-utils
 ibverbs-providers rdmacm-utils perftest nvme-cli"
dkms_deb=$(ls build/deb/pvrdma-overlay-dkms_*_all.deb 2>/dev/null | head -1)
provider_deb=$(ls build/deb/pvrdma-overlay-provider_*_amd64.deb 2>/dev/null | head -1)
if [ -z "$dkms_deb" ] || [ -z "$provider_deb" ]; then
	echo "guest-image: no packages in build/deb; run 'make deb' first" >&2
	exit 1
fi
for tool in mmdebstrap mke2fs qemu-img; do
	command -v "$tool" >/dev/null ||
		{ echo "guest-image: $tool is missing; run 'make deps'" >&2; exit 1; }
done

key=$( (echo "$suite $mirror $pkgs"; sha256sum "$0" guest-image/agent \
	guest-image/pvo-agent.service guest-image/serial-getty-no-agent.conf; sha256sum <"$dkms_deb"; sha256sum <"$provider_deb") |
	sha256sum | cut -c1-16)
out="$PVO_CACHE/guest-image-$key"
if [ -f "$out/trixie.qcow2" ]; then
	ln -sfn "$out" build/guest-image
	exit 0
fi
tmp=$(mktemp -d "$PVO_CACHE/guest-image-tmp.XXXXXX")
# mmdebstrap can leave the chroot's devpts mounted (busy when it ends):
# unmount what is left under tmp, and never descend into a mount
cleanup() {
	left=$(findmnt -rn -o TARGET | grep -F "$tmp/" | sort -r || true)
	[ -z "$left" ] || echo "$left" | xargs umount -l || true
	rm -rf --one-file-system "$tmp"
}
trap cleanup EXIT
log="$root/build/guest-image.log"
echo "guest-image: Debian $suite with pvrdma-overlay's packages, from $mirror (log: $log)"
mkdir -p "$tmp/debs"
cp "$dkms_deb" "$provider_deb" "$tmp/debs/"

# In the chroot DKMS builds for the kernels it finds; the check after it
# says whether the image's got its module.
if ! mmdebstrap --variant=apt --include="$(echo $pkgs | tr ' ' ,)" \
	--customize-hook="copy-in $tmp/debs /tmp" \
	--customize-hook='chroot "$1" sh -c "DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends /tmp/debs/*.deb"' \
	--customize-hook='rm -rf "$1/tmp/debs"' \
	--customize-hook='for k in "$1"/lib/modules/*; do chroot "$1" dkms autoinstall -k "${k##*/}"; done' \
	--customize-hook="upload guest-image/agent /usr/local/sbin/pvo-agent" \
	--customize-hook='chmod 0755 "$1/usr/local/sbin/pvo-agent"' \
	--customize-hook="upload guest-image/pvo-agent.service /etc/systemd/system/pvo-agent.service" \
	--customize-hook='chroot "$1" systemctl enable pvo-agent.service' \
	--customize-hook='mkdir -p "$1/etc/systemd/system/serial-getty@ttyS0.service.d"' \
	--customize-hook="upload guest-image/serial-getty-no-agent.conf /etc/systemd/system/serial-getty@ttyS0.service.d/no-agent.conf" \
	--customize-hook='echo root:pvo | chroot "$1" chpasswd' \
	--customize-hook='echo "/dev/vda / ext4 defaults 0 1" >"$1/etc/fstab"' \
	--customize-hook='echo pvo-guest >"$1/etc/hostname"' \
	--customize-hook='chroot "$1" dpkg-query -W >"$1/root/manifest"' \
	"$suite" "$tmp/root" "$mirror" >"$log" 2>&1; then
	tail -30 "$log" >&2
	echo "guest-image: mmdebstrap failed; the whole log is $log" >&2
	exit 1
fi
kver=$(ls "$tmp/root/lib/modules" | sort -V | tail -1)
if ! ls "$tmp/root/lib/modules/$kver/updates/dkms/"pvrdma_overlay.ko* >/dev/null 2>&1; then
	grep -i -A5 "dkms\|error" "$log" | tail -30 >&2
	echo "guest-image: DKMS built no pvrdma_overlay module for $kver (log: $log)" >&2
	exit 1
fi
mkdir -p "$tmp/out"
cp "$tmp/root/boot/vmlinuz-$kver" "$tmp/out/vmlinuz"
cp "$tmp/root/boot/initrd.img-$kver" "$tmp/out/initrd.img"
echo "$kver" >"$tmp/out/kver"
mv "$tmp/root/root/manifest" "$tmp/out/manifest"
# the root's size and a margin for the tests' files
mib=$(( $(du -sm "$tmp/root" | cut -f1) * 13 / 10 + 256 ))
mke2fs -q -t ext4 -L pvo-root -d "$tmp/root" "$tmp/root.ext4" "${mib}M" >>"$log" 2>&1
qemu-img convert -O qcow2 "$tmp/root.ext4" "$tmp/out/trixie.qcow2"
rm -rf "$out"
mv "$tmp/out" "$out"
ln -sfn "$out" build/guest-image
echo "guest-image: $out/trixie.qcow2 ($(du -m "$out/trixie.qcow2" | cut -f1) MiB, kernel $kver)"
