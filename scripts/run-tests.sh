#!/bin/sh
# run-tests.sh BUILD-DIR "SUITES" "TESTS" [meson test options]: make check's
# runner. Every test speaks TAP; meson prints each test's lines as they
# come (-v) and a summary, and keeps the whole run in
# BUILD-DIR/meson-logs/testlog.txt. SUITES (unit, integration, vm) and
# TESTS (names as in the source tree, e.g. tests/vm/t-perftest) narrow the
# run; both empty: everything. One test at a time: the VM tests boot TCG
# guests on a 2-core budget, and timings inside the tests assume it.
# After a failed run the failing checks are listed again, last, with their
# tests, so that the end of the output (all a CI page may keep) says what
# failed and where its logs are.
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
rc=0
meson test "$@" || rc=$?
if [ "$rc" != 0 ] && [ -f "$dir/meson-logs/testlog.txt" ]; then
	echo "check: what failed (the whole run: $dir/meson-logs/testlog.txt; guest consoles: build/test-logs/):"
	awk '/^test: / { t = $NF }
	     /^(not ok|Bail out!)/ && !/# TODO/ { print "  " t ": " substr($0, 1, 300); n++ }
	     END { if (!n) print "  (no failing TAP line: see the summary above)" }' \
		"$dir/meson-logs/testlog.txt" | head -40
fi
exit "$rc"
