#!/bin/bash
# build-rdma-core.sh: build rdma-core $RDMA_CORE_VER with the pvrdma_overlay
# provider (guest-provider/) added to its tree, and stage its install for the
# guests.
#
# Results, as symlinks refreshed on every run:
#   build/rdma-core        the CMake/Ninja build tree
#   build/rdma-core-stage  the installed files at their final paths (/usr/...,
#                          /etc/...): the guests put it over the host's root
#                          as an overlayfs lower layer
# Both live in $PVO_CACHE/rdma-core-<key>, where key hashes every input (the
# versions, this script, guest-provider/, the ABI headers, the CMake flags),
# so a rerun without changes only refreshes the symlinks.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
# shellcheck source=scripts/versions.sh
. "$here/versions.sh"

# pyverbs needs cython3, which the project does not install; it is only
# used by rdma-core's own Python tests.
cmake_flags=(
	-GNinja
	-DCMAKE_BUILD_TYPE=RelWithDebInfo
	-DCMAKE_INSTALL_PREFIX=/usr
	-DCMAKE_INSTALL_SYSCONFDIR=/etc
	-DCMAKE_INSTALL_LIBDIR=lib/x86_64-linux-gnu
	-DCMAKE_INSTALL_RUNDIR=/run
	-DNO_MAN_PAGES=1
	-DNO_PYVERBS=1
	-DPYTHON_EXECUTABLE=/usr/bin/python3
)

# Files the guests need from the stage; checked before a build is published.
libdir=usr/lib/x86_64-linux-gnu
required_files=(
	"$libdir/libibverbs.so.1"
	"$libdir/librdmacm.so.1"
	"$libdir/libibverbs/libpvrdma_overlay-rdmav34.so"
	"$libdir/libibverbs/librxe-rdmav34.so"
	etc/libibverbs.d/pvrdma_overlay.driver
	usr/bin/ibv_devices
	usr/bin/ibv_devinfo
	usr/bin/ibv_rc_pingpong
	usr/bin/ibv_uc_pingpong
	usr/bin/ibv_ud_pingpong
	usr/bin/ibv_srq_pingpong
	usr/bin/rping
	usr/bin/ucmatose
	usr/bin/rdma_server
	usr/bin/rdma_client
	usr/include/infiniband/verbs.h
)
# Debian's perftest (host package) runs in the guests against the stage.
perftest_bins=(ib_write_bw ib_write_lat ib_read_bw ib_read_lat ib_send_bw
	ib_send_lat ib_atomic_bw ib_atomic_lat)

input_key() {
	{
		cat "$here/versions.sh" "$here/build-rdma-core.sh"
		(cd "$root" &&
			find guest-provider -type f -print0 | LC_ALL=C sort -z |
			xargs -0 sha256sum &&
			sha256sum include/rdma/pvrdma_overlay-abi.h include/pvo-device.h)
		printf '%s\n' "${cmake_flags[@]}"
	} | sha256sum | cut -c1-16
}

publish_links() {
	mkdir -p "$root/build"
	ln -sfn "$dir/build" "$root/build/rdma-core"
	ln -sfn "$dir/stage" "$root/build/rdma-core-stage"
	touch "$dir"	# most recently used, for prune_old
}

# Keep the two most recently used other builds, so switching between
# branches does not rebuild each time.
prune_old() {
	local old
	find "$PVO_CACHE" -maxdepth 1 -type d -name 'rdma-core-????????????????' \
		! -path "$dir" -printf '%T@ %p\n' | sort -rn | tail -n +3 |
		cut -d' ' -f2- | while read -r old; do
			echo "rdma-core: removing old build $old"
			rm -rf "$old"
		done
}

# add_provider SRC: put our provider and its ABI header into a copied tree
# and register both where rdma-core registers its own providers.
add_provider() {
	local src=$1 f
	local pdir=$src/providers/pvrdma_overlay

	mkdir "$pdir" "$pdir/tests"
	for f in "$root"/guest-provider/CMakeLists.txt "$root"/guest-provider/*.[ch]; do
		cp "$f" "$pdir/"
	done
	# test programs the provider's CMakeLists.txt builds (not installed)
	cp "$root"/guest-provider/tests/*.c "$pdir/tests/"
	cp "$root/include/pvo-device.h" "$pdir/"
	cp "$root/include/rdma/pvrdma_overlay-abi.h" "$src/kernel-headers/rdma/"

	# kernel-headers/CMakeLists.txt lists each provider ABI header twice:
	# published into the build's include/rdma/, and turned into the
	# _STRUCT_ macros that DECLARE_DRV_CMD uses (include/kernel-abi/).
	sed -i 's|^\(\s*\)rdma/vmw_pvrdma-abi.h$|&\n\1rdma/pvrdma_overlay-abi.h|' \
		"$src/kernel-headers/CMakeLists.txt"
	if [ "$(grep -c 'rdma/pvrdma_overlay-abi.h' "$src/kernel-headers/CMakeLists.txt")" != 2 ]; then
		echo "rdma-core: could not register pvrdma_overlay-abi.h in $src/kernel-headers/CMakeLists.txt (expected two lists naming rdma/vmw_pvrdma-abi.h); adapt add_provider() in $0 to this rdma-core version" >&2
		exit 1
	fi

	# Outside the HAVE_COHERENT_DMA block: the "device" is the host CPU.
	sed -i 's|^add_subdirectory(providers/siw)$|&\nadd_subdirectory(providers/pvrdma_overlay)|' \
		"$src/CMakeLists.txt"
	if ! grep -q '^add_subdirectory(providers/pvrdma_overlay)$' "$src/CMakeLists.txt"; then
		echo "rdma-core: could not add providers/pvrdma_overlay to $src/CMakeLists.txt (no 'add_subdirectory(providers/siw)' line); adapt add_provider() in $0 to this rdma-core version" >&2
		exit 1
	fi
}

# Ninja prints one "[n/total]" line per step: show every 10% of them, and
# everything else (warnings, errors) as it comes.
progress_filter() {
	awk '/^\[[0-9]+\/[0-9]+\] / {
		split(substr($1, 2), nt, "/"); pct = int(nt[1] * 100 / nt[2])
		if (pct >= next_pct) {
			printf "rdma-core: built %d%% (%s)\n", pct, $1; fflush()
			next_pct = pct - pct % 10 + 10
		}
		next
	}
	{ print; fflush() }'
}

fail_check() {
	echo "rdma-core: stage check failed: $*" >&2
	echo "rdma-core: the build in $dir is not published; fix the cause and rerun $0" >&2
	exit 1
}

# check_stage STAGE: the stage has what the guests need and its libraries
# resolve every symbol their users need.
check_stage() {
	local stage=$1 f b out driver
	local ldpath=$stage/$libdir

	for f in "${required_files[@]}"; do
		[ -e "$stage/$f" ] || fail_check "$stage/$f is missing"
	done

	driver=$(cat "$stage/etc/libibverbs.d/pvrdma_overlay.driver")
	[ "$driver" = "driver pvrdma_overlay" ] ||
		fail_check "pvrdma_overlay.driver says '$driver', not 'driver pvrdma_overlay'"

	# A provider exports nothing; it registers from a constructor.
	f=$stage/$libdir/libibverbs/libpvrdma_overlay-rdmav34.so
	out=$(nm -D --defined-only "$f")
	[ -z "$out" ] || fail_check "$f exports symbols: $out"
	nm -D --undefined-only "$f" | grep -q 'verbs_register_driver_34@IBVERBS_PRIVATE_34' ||
		fail_check "$f does not call verbs_register_driver_34@IBVERBS_PRIVATE_34"

	# ldd -r relocates everything and reports unresolved symbols and
	# missing symbol versions.
	for b in "$f" "$stage"/usr/bin/ibv_devinfo "$stage"/usr/bin/rping \
		"${perftest_bins[@]/#//usr/bin/}"; do
		if [ ! -e "$b" ]; then
			echo "rdma-core: $b is not installed (apt-get install perftest); not checked" >&2
			continue
		fi
		out=$(LD_LIBRARY_PATH=$ldpath ldd -r "$b" 2>&1) ||
			fail_check "ldd -r $b failed: $out"
		if grep -E 'not found|undefined symbol' <<<"$out" >&2; then
			fail_check "$b does not resolve against $ldpath (above)"
		fi
		if grep -q 'libibverbs.so.1 =>' <<<"$out" &&
			! grep -q "libibverbs.so.1 => $ldpath/libibverbs.so.1" <<<"$out"; then
			fail_check "$b did not pick the staged libibverbs.so.1: $out"
		fi
	done

	# The staged libibverbs with this host's real /sys (no RDMA device).
	if [ ! -e /sys/class/infiniband_verbs ]; then
		out=$(LD_LIBRARY_PATH=$ldpath "$stage/usr/bin/ibv_devices" 2>&1) && true
		# libibverbs reports a host without RDMA support as ENOSYS
		grep -q 'Failed to get IB devices list: Function not implemented' <<<"$out" ||
			fail_check "ibv_devices on this host (no RDMA devices) printed: $out"
	fi

	# The data path against a fake device (guest-provider/tests/datapath-test.c).
	local bin=$dir/build/bin
	[ -x "$bin/pvo-verbs-check" ] ||
		fail_check "$bin/pvo-verbs-check was not built"
	out=$("$bin/pvo-datapath-test" 2>&1) ||
		fail_check "$bin/pvo-datapath-test failed: $(grep -v '^ok' <<<"$out")"
	echo "rdma-core: $(tail -n 1 <<<"$out")"

	# A fake sysfs: matching, provider loading, context set-up.
	local rc=0 log=$dir/fake-device-match.log
	"$root/guest-provider/tests/fake-device-match.sh" "$stage" >"$log" 2>&1 || rc=$?
	sed 's/^/rdma-core: /' "$log"
	[ "$rc" = 0 ] || [ "$rc" = 77 ] ||
		fail_check "guest-provider/tests/fake-device-match.sh $stage failed (above)"
}

mkdir -p "$PVO_CACHE"
key=$(input_key)
dir=$PVO_CACHE/rdma-core-$key

exec 9>"$PVO_CACHE/rdma-core.lock"
if ! flock -n 9; then
	echo "rdma-core: waiting for another build-rdma-core.sh to finish"
	flock 9
fi

if [ -f "$dir/complete" ] && [ -d "$dir/stage" ] && [ -d "$dir/build" ]; then
	publish_links
	echo "rdma-core: up to date ($dir)"
	exit 0
fi

echo "rdma-core: building $RDMA_CORE_VER with pvrdma_overlay in $dir"
pristine=$("$here/unpack.sh" rdma-core)
mkdir -p "$dir"
rm -f "$dir/complete"

# The source tree is prepared whole or not at all. The build tree stays
# where it was configured (CMake trees cannot move): an interrupted build
# continues there, and only a complete, checked install becomes stage/.
if [ ! -f "$dir/src/.pvo-prepared" ]; then
	echo "rdma-core: preparing the source tree"
	rm -rf "$dir/src" "$dir/src.tmp" "$dir/build"
	cp -a "$pristine" "$dir/src.tmp"
	add_provider "$dir/src.tmp"
	touch "$dir/src.tmp/.pvo-prepared"
	mv "$dir/src.tmp" "$dir/src"
fi

if [ ! -f "$dir/build/build.ninja" ]; then
	echo "rdma-core: configuring"
	rm -rf "$dir/build"
	if ! cmake -S "$dir/src" -B "$dir/build" "${cmake_flags[@]}" >"$dir/configure.log" 2>&1; then
		tail -n 30 "$dir/configure.log" >&2
		echo "rdma-core: configure failed; full log: $dir/configure.log" >&2
		exit 1
	fi
fi

echo "rdma-core: building (about 2 min on 2 cores; log: $dir/build.log)"
if ! nice -n 10 ninja -C "$dir/build" -j2 2>&1 | tee "$dir/build.log" | progress_filter; then
	echo "rdma-core: build failed; full log: $dir/build.log" >&2
	exit 1
fi

echo "rdma-core: installing into the stage"
rm -rf "$dir/stage.tmp" "$dir/stage"
if ! DESTDIR="$dir/stage.tmp" ninja -C "$dir/build" install >"$dir/install.log" 2>&1; then
	tail -n 30 "$dir/install.log" >&2
	echo "rdma-core: install failed; full log: $dir/install.log" >&2
	exit 1
fi

echo "rdma-core: checking the stage"
check_stage "$dir/stage.tmp"

mv "$dir/stage.tmp" "$dir/stage"
touch "$dir/complete"
publish_links
prune_old
echo "rdma-core: done: build/rdma-core-stage -> $dir/stage"
