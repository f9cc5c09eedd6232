#!/bin/bash
# build-deb.sh (make deb): the Debian packages of this tree, with Debian's
# tools (dpkg-buildpackage, debhelper, dh-dkms), checked by lintian:
#   pvrdma-overlayd          the back-end and pvo-ctl, a systemd unit and
#                            /etc/pvrdma-overlay.conf (host)
#   pvrdma-overlay-dkms      the guest driver's source for DKMS (guest)
#   pvrdma-overlay-provider  the libibverbs provider (guest), taken from the
#                            rdma-core build (make rdma-core)
# into build/deb/. packaging/debian is the debian/ directory; the version
# is 0~gitDATE.COMMIT of the last commit (+dirty with local changes). A
# rerun with the same inputs (the tracked files, the QEMU tree, the
# provider) only says where the packages are.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
cd "$root"

qemu=$("$here/unpack.sh" qemu)
stage=$(readlink -f build/rdma-core-stage 2>/dev/null || true)
provider="$stage/usr/lib/x86_64-linux-gnu/libibverbs/libpvrdma_overlay-rdmav34.so"
if [ ! -f "$provider" ]; then
	echo "deb: no provider in build/rdma-core-stage; run 'make rdma-core' first" >&2
	exit 1
fi
for tool in dpkg-buildpackage dh dh_dkms lintian; do
	if ! command -v "$tool" >/dev/null; then
		echo "deb: $tool is missing; run 'make deps' (it installs" \
			"debhelper, dh-dkms and lintian)" >&2
		exit 1
	fi
done

ver="0~git$(git log -1 --format=%cd --date=format:%Y%m%d).$(git log -1 --format=%h)"
git diff --quiet HEAD -- . 2>/dev/null || ver="$ver+dirty"
out=build/deb
key=$( (echo "$ver"; git ls-files -co --exclude-standard -z | xargs -0 sha256sum; sha256sum "$provider";
	echo "$qemu") | sha256sum | cut -d' ' -f1)
if [ "$(cat "$out/.key" 2>/dev/null)" = "$key" ] && ls "$out"/*.deb >/dev/null 2>&1; then
	echo "deb: up to date: $(cd "$out" && echo ./*.deb)"
	exit 0
fi
rm -rf "$out"
work="$out/src/pvrdma-overlay-$ver"
mkdir -p "$work"
git ls-files -co --exclude-standard -z | tar --null -T - -cf - | tar -xf - -C "$work"
cp -r packaging/debian "$work/debian"
cat >"$work/debian/changelog" <<EOC
pvrdma-overlay ($ver) unstable; urgency=medium

  * Built from commit $(git log -1 --format=%H).

 -- pvrdma-overlay developers <pvrdma-overlay@lists.invalid>  $(git log -1 --format=%aD)
EOC

echo "deb: building pvrdma-overlay $ver (log: $out/build.log)"
if ! (cd "$work" && PVO_QEMU_SRC="$qemu" PVO_RDMA_STAGE="$stage" \
	dpkg-buildpackage -b -us -uc) >"$out/build.log" 2>&1; then
	tail -30 "$out/build.log" >&2
	echo "deb: dpkg-buildpackage failed; the whole log is $out/build.log" >&2
	exit 1
fi
mv "$out"/src/*.deb "$out"/src/*.changes "$out"/src/*.buildinfo "$out"/
rm -rf "$out/src"
echo "deb: lintian (errors fail the build)"
if ! lintian --fail-on error\
	"$out"/*.changes | tee "$out/lintian.log"; then
	echo "deb: lintian found errors (above; also in $out/lintian.log)" >&2
	exit 1
fi
echo "$key" >"$out/.key"
echo "deb: $(cd "$out" && echo ./*.deb) in $out"
