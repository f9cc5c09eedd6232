#!/bin/sh
# make bench: run the native data-path benchmark (two simulated VMs, one
# back-end), the fairness and scaling sections (data-path threads) and the
# overlay benchmark (two back-ends in two network namespaces joined by a
# veth, RoCEv2 in VXLAN, next to plain UDP over the same veth). Options
# go to every pvo-bench run (--seconds S, --depth N, --batch N, --sizes,
# --lat-iters, --backend-arg ARG; the overlay run uses --sizes, not
# --lat-iters); PVO_BACKEND overrides the back-end binary.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
# make bench built build/plain (-O2, no sanitizer): the daemon and the bench
bin=$top/build/plain
export PVO_BACKEND="${PVO_BACKEND:-$bin/backend/pvrdma-overlayd}"
echo "bench: running the one-host data path, doorbell mode (about 50 s)"
"$bin/bench/pvo-bench" "$@"
echo
echo "bench: the >= 64 KiB rows again, 7 rounds: the bandwidth target is read"
echo "from the median round (this host's memory bandwidth drifts; about 90 s)"
"$bin/bench/pvo-bench" --sizes 65536,262144,1048576 --rounds 7 \
	--repeat 2 --lat-iters 100 "$@"
echo
echo "bench: the same in latency mode (--busy-poll-us 200)"
"$bin/bench/pvo-bench" --backend-arg=--busy-poll-us=200 "$@"
echo
echo "bench: fairness: each attack next to a ping-pong, threads = 1 and 2 (about 70 s)"
"$bin/bench/pvo-bench" --fairness "$@"
echo
echo "bench: scaling: 1 and 2 VM pairs on threads = 1 and 2, alternating (about 40 s)"
"$bin/bench/pvo-bench" --scaling "$@"
echo
echo "bench: running the overlay between two back-ends (about 10 s)"
# two "hosts": network namespaces joined by a veth (MTU 9000), else loopback
a=pvobench$$a b=pvobench$$b
cleanup() { ip netns del "$a" 2>/dev/null; ip netns del "$b" 2>/dev/null; }
trap cleanup EXIT
if ip netns add "$a" 2>/dev/null && ip netns add "$b" &&
	ip link add va$$ mtu 9000 netns "$a" type veth peer name vb$$ mtu 9000 netns "$b" &&
	ip -n "$a" addr add 10.254.0.1/24 dev va$$ && ip -n "$b" addr add 10.254.0.2/24 dev vb$$ &&
	ip -n "$a" link set va$$ up && ip -n "$b" link set vb$$ up &&
	ip -n "$a" link set lo up && ip -n "$b" link set lo up; then
	"$bin/bench/pvo-bench" --overlay --netns "$a,$b" \
		--vteps 10.254.0.1,10.254.0.2 "$@"
else
	echo "bench: no network namespaces here; the overlay runs over loopback"
	"$bin/bench/pvo-bench" --overlay "$@"
fi
