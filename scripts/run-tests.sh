#!/bin/sh
# run-tests.sh BUILD-DIR "SUITES" "TESTS" [meson test options]: make check's
# runner. Every test speaks TAP; meson prints each test's lines as they
# come (-v) and a summary, and keeps the whole run in
# BUILD-DIR/meson-logs/testlog.txt. SUITES (unit, integration, vm) and
# TESTS (names as in the source tree, e.g. tests/vm/t-perftest) narrow the
# run; both empty: everything. One test at a time: the VM tests boot TCG
# guests on a 2-core budget, and timings inside the tests assume it.
set -eu
dir=$1 suites=$2 tests=$3
shift 3
set -- "$@" -C "$dir" -v --num-processes 1 --print-errorlogs
for s in $suites; do
	set -- "$@" --suite "$s"
done
known=$(meson test -C "$dir" --list 2>/dev/null)
for t in $tests; do
	t=${t#./}
	if ! printf '%s\n' "$known" | grep -q " / $t\$\|^$t\$"; then
		echo "check: no test named $t; the tests are:" >&2
		printf '%s\n' "$known" | sed 's/^/  /' >&2
		exit 2
	fi
	set -- "$@" "$t"
done
exec meson test "$@"
