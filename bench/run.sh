#!/bin/sh
# make bench: build the plain (-O2, no sanitizer) back-end and pvo-bench,
# then run the native data-path benchmark. Options go to pvo-bench
# (--seconds S, --sizes 64,4096,..., --depth N, --batch N, --lat-iters N,
# --backend-arg ARG); PVO_BACKEND overrides the back-end binary.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
echo "bench: building (back-end and pvo-bench)"
nice -n 10 make -s -C "$top/bench" all
export PVO_BACKEND="${PVO_BACKEND:-$top/build/backend/pvrdma-overlayd}"
echo "bench: running (about 30 s)"
exec "$top/build/bench/pvo-bench" "$@"
