# Sourced by the avocado-vt wrappers: the venv `make deps` built
# (scripts/avocado-deps.sh), avocado's config and data under the build
# tree (build/avocado, not /root or /var/lib), a bootstrapped avocado-vt that downloads
# nothing, and this provider registered by path. Sets VENV, AVOCADO,
# AVOCADO_BASE, VT_DATA.
# shellcheck shell=sh disable=SC2154 # top: set by the sourcing script
build=$top/build
VENV=$build/avocado-venv
AVOCADO=$VENV/bin/avocado
AVOCADO_BASE=$build/avocado
VT_DATA=$AVOCADO_BASE/data/avocado-vt
if [ ! -x "$AVOCADO" ]; then
	echo "avocado: $AVOCADO missing; run 'make deps'" >&2
	return 1
fi
# avocado reads $VIRTUAL_ENV/etc/avocado/avocado.conf as its system config
export VIRTUAL_ENV="$VENV"
# aexpect runs its helper from PATH
export PATH="$VENV/bin:$PATH"
mkdir -p "$VENV/etc/avocado" "$AVOCADO_BASE/tmp"
cat >"$VENV/etc/avocado/avocado.conf" <<CONF
[datadir.paths]
base_dir = $AVOCADO_BASE
test_dir = $AVOCADO_BASE/tests
data_dir = $AVOCADO_BASE/data
logs_dir = $AVOCADO_BASE/job-results
cache_dirs = ["$AVOCADO_BASE/cache"]
[vt.common]
tmp_dir = $AVOCADO_BASE/tmp
[sysinfo.collect]
enabled = False
[plugins.vtjoblock]
dir = $AVOCADO_BASE/tmp
CONF

# This provider, registered by path (before vt-bootstrap, which lists the
# registered providers' tests in its subtests.cfg).
providers=$VT_DATA/virttest/test-providers.d
mkdir -p "$providers/downloads"
sed "s|@TESTS@|$top/tests|" "$top/tests/avocado-vt/pvrdma-overlay.ini" \
	>"$providers/pvrdma-overlay.ini"
# avocado-vt's plugin refuses to load while the providers' download
# directory is empty; a file:// provider needs none
echo "pvrdma-overlay is a file:// provider: nothing to download" >"$providers/downloads/README"

# vt-bootstrap once per venv: no guest image download or restore, no
# test provider clone (the stock tp-qemu / tp-libvirt entries it copies
# in are dropped again).
if [ "$(cat "$AVOCADO_BASE/.bootstrap" 2>/dev/null)" != "$(cat "$VENV/.key" 2>/dev/null)" ]; then
	"$AVOCADO" vt-bootstrap --vt-type qemu --vt-no-downloads \
		--vt-skip-verify-download-assets --yes-to-all \
		>"$AVOCADO_BASE/bootstrap.log" 2>&1 || {
		echo "avocado: vt-bootstrap failed, see $AVOCADO_BASE/bootstrap.log" >&2
		return 1
	}
	rm -f "$providers"/io-github-*.ini
	cat "$VENV/.key" >"$AVOCADO_BASE/.bootstrap" 2>/dev/null || true
fi
