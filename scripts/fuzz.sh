#!/bin/sh
# fuzz.sh BUILD-DIR LIMIT HARNESS...: runs libFuzzer harnesses of
# backend/fuzz (built in BUILD-DIR with -Dfuzz=true) from their committed
# corpus, one TAP line per harness. LIMIT is a libFuzzer option: -runs=N
# (make check: a short fixed pass) or -max_total_time=S (make fuzz). New
# inputs go to BUILD-DIR/fuzz-corpus/HARNESS (copy the interesting ones
# to backend/fuzz/corpus/HARNESS), a crash or a sanitizer report to
# BUILD-DIR/fuzz-artifacts/HARNESS-*, with libFuzzer's log next to it.
# backend/fuzz/dict/HARNESS.dict, where there is one, is the harness's
# dictionary (tokens of a text format).
set -u
dir=$(cd "$1" && pwd)
limit=$2
shift 2
top=$(cd "$(dirname "$0")/.." && pwd)
echo "1..$#"
n=0
fail=0
for h in "$@"; do
	n=$((n + 1))
	work="$dir/fuzz-corpus/$h"
	art="$dir/fuzz-artifacts"
	log="$art/$h.log"
	mkdir -p "$work" "$art"
	# the harness's dictionary of tokens, if it has one
	dict=
	[ -f "$top/backend/fuzz/dict/$h.dict" ] &&
		dict=-dict="$top/backend/fuzz/dict/$h.dict"
	"$dir/backend/fuzz/$h" "$limit" -print_final_stats=1 $dict \
		-timeout=10 -rss_limit_mb=2048 -artifact_prefix="$art/$h-" \
		"$work" "$top/backend/fuzz/corpus/$h" >"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
	cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1)
	if [ "$rc" = 0 ]; then
		echo "ok $n - $h: ${runs:-?} executions (${speed:-?}/s), $cov, no crash or sanitizer report"
	else
		fail=1
		echo "not ok $n - $h: exit $rc after ${runs:-?} executions; log $log"
		grep -E 'ERROR|SUMMARY|Test unit written' "$log" | head -5 | sed 's/^/# /'
	fi
done
exit $fail
