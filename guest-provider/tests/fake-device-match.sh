#!/bin/bash
# fake-device-match.sh STAGE: check a staged rdma-core (build-rdma-core.sh)
# without a real device. The staged libibverbs must load every staged
# provider, and our provider must claim exactly the pvrdma-overlay devices
# and reach its context set-up.
#
# How: in a private mount namespace the stage is put over /usr and /etc as
# read-only overlayfs layers (as the guests do), /dev is a fresh tmpfs with
# stand-in uverbs nodes, and a fake sysfs (SYSFS_PATH; libibverbs reads it
# when the kernel has no RDMA netlink) describes the devices. Nothing of the
# host is bound into the work directory, and the work directory is removed
# only after the namespace (and every mount in it) is gone.
# Prints "ok"/"not ok" lines and "N passed, N failed"; exit 1 on a failure,
# 77 when the host cannot run it (the reason is printed).
set -euo pipefail

skip() { echo "fake-device-match: skipped: $*"; exit 77; }

if [ $# -lt 1 ] || [ ! -d "$1/usr/lib/x86_64-linux-gnu" ]; then
	echo "usage: $0 STAGE (a DESTDIR install of rdma-core, e.g. build/rdma-core-stage)" >&2
	exit 2
fi
stage=$(cd "$1" && pwd)
# the versions the provider was built with
top=$(cd "$(dirname "$0")/../.." && pwd)
abi=$(sed -n 's/^#define PVO_UVERBS_ABI_VERSION[[:space:]]\+\([0-9]\+\).*/\1/p' \
	"$top/include/rdma/pvrdma_overlay-abi.h")
iface=$(sed -n 's/^#define PVO_INTERFACE_VERSION[[:space:]]\+\([0-9]\+\).*/\1/p' \
	"$top/include/pvo-device.h")
if [ -z "$abi" ] || [ -z "$iface" ]; then
	echo "fake-device-match: cannot read PVO_UVERBS_ABI_VERSION / PVO_INTERFACE_VERSION from $top/include" >&2
	exit 2
fi

if [ $# -eq 1 ]; then
	[ -d /sys/module/ib_core ] &&
		skip "ib_core is loaded, so libibverbs enumerates real devices over netlink and ignores a fake sysfs"
	grep -qw overlay /proc/filesystems ||
		skip "the kernel has no overlayfs"
	unshare -m true 2>/dev/null ||
		skip "cannot create a mount namespace (unshare -m needs root / CAP_SYS_ADMIN)"
	work=$(mktemp -d)
	rc=0
	unshare -m "$0" "$stage" "$work" "$abi" "$iface" || rc=$?
	# The namespace is gone with its mounts: $work is plain files again.
	if grep -q " $work" /proc/mounts; then
		echo "fake-device-match: $work still has mounts; not removing it" >&2
	else
		rm -rf "$work"
	fi
	exit "$rc"
fi

# --- inside the private mount namespace ---
work=$2 abi=$3 iface=$4
mount --make-rprivate /

mount -t overlay overlay -o "lowerdir=$stage/usr:/usr" /usr
mount -t overlay overlay -o "lowerdir=$stage/etc:/etc" /etc

mount -t tmpfs -o mode=755 tmpfs /dev
mknod -m 666 /dev/null c 1 3
mknod -m 666 /dev/zero c 1 5
mknod -m 666 /dev/urandom c 1 9
mkdir /dev/infiniband
# uverbs0 accepts every command and answers with zeros (it is /dev/null),
# so a context allocation "succeeds" with interface version 0.
mknod -m 666 /dev/infiniband/uverbs0 c 1 3
for n in 1 2 3; do
	touch /dev/infiniband/uverbs$n
done

# fake_dev UVERBS IBDEV ABI GUID [MODALIAS]: one uverbs device in the sysfs
fake_dev() {
	local uv=$work/sys/class/infiniband_verbs/$1 ib=$work/sys/class/infiniband/$2
	mkdir -p "$uv" "$ib"
	echo "$2" >"$uv/ibdev"
	echo "231:19${1#uverbs}" >"$uv/dev"
	echo "$3" >"$uv/abi_version"
	echo "1: CA" >"$ib/node_type"
	echo "$4" >"$ib/node_guid"
	if [ $# -ge 5 ]; then
		mkdir -p "$ib/device"
		echo "$5" >"$ib/device/modalias"
	fi
}

passed=0 failed=0
check() {	# check DESCRIPTION COMMAND...: COMMAND decides
	if "${@:2}"; then
		echo "ok - $1"; passed=$((passed + 1))
	else
		echo "not ok - $1"; failed=$((failed + 1))
		echo "# stdout:"; sed 's/^/#   /' "$work/out"
		echo "# stderr:"; sed 's/^/#   /' "$work/err"
	fi
}
has() { grep -q -- "$2" "$work/$1"; }
lacks() { ! grep -q -- "$2" "$work/$1"; }
run() { "$@" >"$work/out" 2>"$work/err" </dev/null && echo 0 >"$work/rc" || echo $? >"$work/rc"; }
rc_is() { [ "$(cat "$work/rc")" = "$1" ]; }
rc_not() { [ "$(cat "$work/rc")" != "$1" ]; }

staged_name() { basename "$(readlink -f "$1/usr/lib/x86_64-linux-gnu/libibverbs.so.1")"; }
: >"$work/out"; : >"$work/err"
check "the overlay serves the staged libibverbs" \
	test "$(staged_name /)" = "$(staged_name "$stage")"

# 1. No devices: an empty list, no complaints.
mkdir -p "$work/sys/class/infiniband_verbs"
echo 6 >"$work/sys/class/infiniband_verbs/abi_version"
export SYSFS_PATH=$work/sys
run /usr/bin/ibv_devices
check "no devices: ibv_devices exits 0" rc_is 0
check "no devices: nothing on stderr" test ! -s "$work/err"
check "no devices: no device listed" test "$(grep -c '[0-9a-f]\{16\}$' "$work/out")" = 0

# 2. Our device by modalias, by name, a foreign virtio device and an ABI
#    our provider does not speak.
fake_dev uverbs0 pvo0 "$abi" 5254:00ff:fe12:3456 virtio:d0000002Av00001AF4
fake_dev uverbs1 pvrdma_overlay1 "$abi" 5254:00ff:fe12:3457
fake_dev uverbs2 virtio_other2 "$abi" 5254:00ff:fe12:3458 virtio:d00000001v00001AF4
fake_dev uverbs3 pvo3 99 5254:00ff:fe12:3459 virtio:d0000002Av00001AF4
# libibverbs opens a uverbs node only if its numbers are the sysfs ones
echo 1:3 >"$work/sys/class/infiniband_verbs/uverbs0/dev"
IBV_SHOW_WARNINGS=1 run /usr/bin/ibv_devices
check "devices: ibv_devices exits 0" rc_is 0
check "every staged provider loads (no \"couldn't load driver\")" lacks err "couldn't"
check "modalias virtio:d0000002A matches pvo0" has out "pvo0[[:space:]]*525400fffe123456"
check "name prefix pvrdma_overlay matches without a modalias" has out "pvrdma_overlay1[[:space:]]*525400fffe123457"
check "a foreign virtio device is not claimed" lacks out virtio_other2
check "an unknown uverbs ABI is refused" has err "pvrdma_overlay does not support the kernel ABI of 99"
check "the refused device is not listed" lacks out pvo3

# 3. Opening pvo0 reaches our alloc_context, which refuses the interface
#    version 0 that the stand-in answered, with advice.
run /usr/bin/ibv_devinfo -d pvo0
check "ibv_devinfo on the stand-in fails" rc_not 0
check "the interface version mismatch is explained" has err "interface version 0 but this provider speaks $iface; install"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
