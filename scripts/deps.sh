#!/bin/sh
# make deps: install every Debian package the build, tests and demo need, and
# fetch (through apt only) the third-party sources the build uses into
# $PVO_CACHE/src. Idempotent: a second run only checks.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.sh"

if [ "$(id -u)" != 0 ]; then
	echo "deps: must run as root (apt-get install)" >&2
	exit 1
fi
"$here/apt-sources.sh"

# procps psmisc bsdextrautils netbase libgcc-s1: guest-image/ramroot.list
# copies them into the ram root; a minimal host may lack them.
# libvirt-daemon, libvirt-daemon-driver-qemu: tests/vm/t-libvirt runs its own
# unprivileged libvirtd.
# libibverbs-dev: the back-end's host-verbs transport (the host's libibverbs;
# the guests' rdma-core is built from source).
# frr: tests/integration/t-evpn-frr runs zebra and bgpd in namespaces (the
# package's own service stays as the host has it).
# debhelper dh-dkms dkms lintian fakeroot: make deb and tests/packaging/t-deb
# (DKMS builds the guest driver in trees of the test's own).
# mmdebstrap qemu-utils: make guest-image (a Debian 13 root from the archive,
# made a qcow2 disk).
pkgs="build-essential pkg-config ninja-build python3 python3-venv python3-pycotap
 flex bison zlib1g-dev libglib2.0-dev libpixman-1-dev libslirp-dev libcap-ng-dev
 libattr1-dev cmake libnl-3-dev libnl-route-3-dev libudev-dev libibverbs-dev
 linux-headers-$GUEST_KVER kmod busybox-static cpio xz-utils zstd
 seabios qemu-system-data ipxe-qemu perftest iproute2 tshark socat strace
 perl libclang-rt-14-dev clang linux-source-6.1 sparse nvme-cli nfs-kernel-server ucx-utils
 libvirt-clients libvirt-daemon libvirt-daemon-driver-qemu procps psmisc bsdextrautils netbase libgcc-s1
 frr debhelper dh-dkms dkms lintian fakeroot mmdebstrap qemu-utils"
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' ||
		missing="$missing $p"
done
# meson >= 1.5 only exists in bookworm-backports
mv=$(dpkg-query -W -f='${Version}' meson 2>/dev/null || true)
case "$mv" in 1.[5-9]* | 1.1[0-9]*) ;; *) missing="$missing meson/bookworm-backports" ;; esac
# the guest driver must also build on Debian 13's 6.12: bookworm-backports'
# headers of that series (tests/packaging/t-deb builds it there with DKMS)
ls -d /usr/src/linux-headers-6.12.*-amd64 >/dev/null 2>&1 ||
	missing="$missing linux-headers-amd64/bookworm-backports"
if [ -n "$missing" ]; then
	echo "deps: apt-get install$missing"
	echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
fi

src="$PVO_CACHE/src"
mkdir -p "$src"
cd "$src"
fetch_source() { # package suite file-glob
	if ! ls $3 >/dev/null 2>&1; then
		echo "deps: apt-get source --download-only $1/$2"
		# The archive may lack a .dsc (seen for rdma-core 56.1); only the
		# orig tarball is needed, so judge by it, not by apt's exit status.
		apt-get source -q --download-only "$1/$2" >/dev/null 2>&1 || true
		if ! ls $3 >/dev/null 2>&1; then
			echo "deps: could not fetch $3 with apt-get source $1/$2;" \
				"check the deb-src entries in" \
				"/etc/apt/sources.list.d/pvrdma-overlay.sources" >&2
			exit 1
		fi
	fi
}
fetch_source qemu trixie "qemu_${QEMU_DEBVER}.orig.tar.xz"
fetch_source rdma-core trixie "rdma-core_${RDMA_CORE_VER}.orig.tar.gz"
if ! ls linux-image-${GUEST_KVER}_*.deb >/dev/null 2>&1; then
	echo "deps: apt-get download linux-image-$GUEST_KVER"
	apt-get download -q "linux-image-$GUEST_KVER" >/dev/null
fi
"$here/avocado-deps.sh"
echo "deps: ok (sources in $src)"
