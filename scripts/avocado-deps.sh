#!/bin/sh
# avocado-deps.sh (part of make deps): the avocado-vt test stack that
# tests/avocado-vt runs on: avocado 113.0 and avocado-vt 113.0 in a venv,
# build/avocado-venv, on Debian's python3 (--system-site-packages: six,
# setuptools and packaging come from Debian), plus the host tools
# avocado-vt checks for. The packages come from the wheels in the
# directory $PVO_WHEELS names (a machine that reaches no Python package
# index), else from the index. The venv is keyed on the wheel set and
# the Python version: a rerun with the same inputs only compares the key.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
venv=$top/build/avocado-venv
wheels=${PVO_WHEELS:-}
if [ -n "$wheels" ] && [ ! -d "$wheels" ]; then
	echo "deps: PVO_WHEELS=$wheels is not a directory: point it at the" \
		"avocado wheels, or unset it to install from the Python package index" >&2
	exit 1
fi
pins="avocado-framework==113.0 avocado-framework-plugin-vt==113.0"

pkgs="python3-venv python3-setuptools python3-six python3-packaging
 tcpdump netcat-openbsd iputils-arping"
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "deps: apt-get install$missing (avocado-vt)"
	# shellcheck disable=SC2086 # a list of packages
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
fi

if [ -n "$wheels" ]; then
	wheels=$(cd "$wheels" && pwd)
	source="--no-index --find-links $wheels"
	from="the wheels in $wheels"
	key=$( (echo "$pins"; /usr/bin/python3 --version; cd "$wheels" && sha256sum ./*.whl) |
		sha256sum | cut -d' ' -f1)
else
	source=""
	from="the Python package index"
	key=$( (echo "$pins"; /usr/bin/python3 --version) | sha256sum | cut -d' ' -f1)
fi
if [ "$(cat "$venv/.key" 2>/dev/null)" = "$key" ] && [ -x "$venv/bin/avocado" ]; then
	exit 0
fi
echo "deps: avocado-vt: building $venv from $from"
rm -rf "$venv"
/usr/bin/python3 -m venv --system-site-packages "$venv"
# shellcheck disable=SC2086 # source is a list of options
if ! "$venv/bin/pip" install -q --disable-pip-version-check $source $pins; then
	echo "deps: avocado-vt: pip could not install $pins from $from;" \
		"without a Python package index, set PVO_WHEELS to a directory" \
		"holding their wheels (and aexpect's)" >&2
	exit 1
fi
"$venv/bin/avocado" --version >/dev/null
echo "$key" >"$venv/.key"
