#!/bin/sh
# make bench: build the plain (-O2, no sanitizer) back-end and pvo-bench,
# then run the native data-path benchmark (two simulated VMs, one back-end)
# and the overlay benchmark (two back-ends, RoCEv2 in VXLAN over loopback,
# next to plain UDP). Options go to both pvo-bench runs (--seconds S,
# --depth N, --batch N, --backend-arg ARG; --sizes, --lat-iters for the
# first); PVO_BACKEND overrides the back-end binary.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
echo "bench: building (back-end and pvo-bench)"
nice -n 10 make -s -C "$top/bench" all
export PVO_BACKEND="${PVO_BACKEND:-$top/build/backend/pvrdma-overlayd}"
echo "bench: running the one-host data path, doorbell mode (about 30 s)"
"$top/build/bench/pvo-bench" "$@"
echo
echo "bench: the same in latency mode (--busy-poll-us 200)"
"$top/build/bench/pvo-bench" --backend-arg=--busy-poll-us=200 "$@"
echo
echo "bench: running the overlay between two back-ends (about 10 s)"
exec "$top/build/bench/pvo-bench" --overlay "$@"
