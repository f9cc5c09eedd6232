#!/usr/bin/python3
"""make bench-hostverbs: the host-verbs transport against the software
overlay and plain rdma_rxe, in the same run, between the same two hosts.

The hosts are two TCG guests with rdma_rxe on a VXLAN netdev each (tenant
blue, VNI 100; tests/vm/lib/pvovm/hostverbs.py), as t-hostverbs-datapath
has them. One program, t-hostverbs-xhost built at -O2 without sanitizers
(build/plain/bench/pvo-bench-xhost), measures every transport the same
way: RDMA WRITEs of 64 KiB, 16 in flight, for bandwidth; 64-byte SENDs
answered one by one for the half round trip. The ends are

  plain rxe   a libibverbs process on rxe_blue at each end
  hostverbs   a simulated VM behind pvrdma-overlayd with
              `transport = hostverbs` on rxe_blue at each end; again in
              latency mode (busy-poll-us 200: the back-end polls hot QPs'
              rings and the host CQs instead of waiting for events)
  overlay     a simulated VM behind pvrdma-overlayd whose tenant uses the
              software RoCEv2-in-VXLAN overlay between the hosts' NICs

Each host guest's QEMU is pinned to a host core of its own (when the
machine has two): unpinned, the two spinning vCPUs and the QEMU threads
that carry their packets share the cores as the host scheduler decides,
and plain rxe's half round trip swung between 0.5 and 1.2 ms from run to
run. Pinned, runs agree within a few per cent.

Targets: hostverbs >= 90 % of plain rxe's
bandwidth, its half round trip within 10 % of plain rxe's.

The migration part (--parts migration) runs the data-path suite's
migrate section in timing mode (build/plain/bench/pvo-bench-datapath,
T_MIGRATE_BENCH) in host guest h1, three back-ends on its rxe0: VM a
with an RC connection to b moves between host 1 and host 3, and for
each move the bench reports the switch-over as the front-end sees it
(a frozen -> running at its destination: what QEMU reports as downtime)
next to the connection's blackout both ways (a frozen -> a WRITE of b
posted while a was frozen, and one of a posted as it runs, complete),
and at each place WRITE bandwidth both ways and a 64-byte WRITE's round
trip: a on host 3 pays the translation of its numbers (b's WQEs name
a's guest numbers, translated by host 2's alias table), a before any
move does not. Target: blackout - downtime at most 0.2 x the downtime.

The tables also go to build/test-logs/hostverbs.py/bench.md, the runs'
logs next to it.
"""

import argparse
import os
import re
import subprocess
import sys

sys.dont_write_bytecode = True
TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(TOP, "tests/vm/lib"))
PLAIN = os.path.join(TOP, "build", "plain")
os.environ.setdefault("PVO_BACKEND", os.path.join(PLAIN, "backend/pvrdma-overlayd"))
from pvovm import hostverbs, rdma  # noqa: E402
from pvovm.hostverbs import end  # noqa: E402
from pvovm.rdma import Node, RdmaGuests  # noqa: E402

XHOST = os.path.join(PLAIN, "bench", "pvo-bench-xhost")
DATAPATH = os.path.join(PLAIN, "bench", "pvo-bench-datapath")


def measure(rg, server, client, name, iters, server_env="", client_env=""):
    """One run of the bench case: (MB/s, half round trip in us) or None."""
    res = hostverbs.xhost(rg, XHOST, PLAIN, server, client, "bench-" + name, cases="bench",
                          timeout=900, env="T_XHOST_BENCH_ITERS=%d" % iters,
                          server_env=server_env, client_env=client_env)
    out = res.client_out or ""
    bw = re.search(r"write_bw_MBps=([\d.]+)", out)
    lat = re.search(r"half_rtt_us=([\d.]+)", out)
    if not res.ok or not bw or not lat:
        print("bench: %s failed; see %s\n%s" % (name, rg.logdir, res.diag()), flush=True)
        return None
    print("bench: %-30s WRITE 64 KiB %8.1f MB/s, half round trip %7.1f us"
          % (name, float(bw.group(1)), float(lat.group(1))), flush=True)
    return float(bw.group(1)), float(lat.group(1))


def pin(nodes):
    """Each host guest's QEMU (all its threads) on a host core of its own."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < len(nodes):
        print("bench-hostverbs: %d host cores for %d guests: not pinning; expect "
              "run-to-run swings" % (len(cores), len(nodes)), flush=True)
        return
    for core, n in zip(cores, nodes):
        subprocess.run(["taskset", "-a", "-p", "-c", str(core), str(n.guest.proc.pid)],
                       check=True, stdout=subprocess.DEVNULL)
        print("bench-hostverbs: %s's QEMU (pid %d) pinned to host core %d"
              % (n.name, n.guest.proc.pid, core), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iters", type=int, default=2000,
                    help="64 KiB WRITEs per transport (a quarter as many ping-pongs)")
    ap.add_argument("--smp", type=int, default=1,
                    help="vCPUs of each host guest (default 1)")
    ap.add_argument("--rounds", type=int, default=2,
                    help="rounds of the four rows; the table shows each one's best")
    ap.add_argument("--no-pin", action="store_true",
                    help="leave the host guests' QEMUs to the host scheduler")
    ap.add_argument("--parts", default="transports,migration",
                    help="transports (the four rows), migration (host-verbs moves)")
    ap.add_argument("--moves", type=int, default=3,
                    help="round trips host 1 -> host 3 -> host 1 of the migration part")
    args = ap.parse_args()
    parts = args.parts.split(",")
    missing = rdma.missing("rxe")
    for exe in (XHOST, DATAPATH):
        if not os.access(exe, os.X_OK):
            missing.append("%s (make backend)" % exe)
    if missing:
        sys.exit("bench-hostverbs: missing: " + "; ".join(missing))
    nodes = [Node("h1", "10.0.72.1", memory=2048, smp=args.smp),
             Node("h2", "10.0.72.2", memory=2048, smp=args.smp)]
    print("bench-hostverbs: booting two TCG guests with rdma_rxe (about a minute)", flush=True)
    with RdmaGuests(nodes, kind="rxe") as rg:
        h1, h2 = rg.nodes
        hostverbs.tenant_netdevs(rg, tenants=("blue",))
        if not args.no_pin:
            pin(rg.nodes)
        overlay = "T_XHOST_TRANSPORT=overlay T_XHOST_OVERLAY=%s:%s:%s"
        runs = [("plain rxe", end("plain", "h2"), end("plain", "h1"), ("", "")),
                ("hostverbs", end("vm", "h2"), end("vm", "h1"), ("", "")),
                ("hostverbs, busy-poll-us 200", end("vm", "h2"), end("vm", "h1"),
                 ("T_XHOST_BUSY_POLL_US=200",) * 2),
                ("overlay", ("vm", "-", "-", "10.7.0.9"), ("vm", "-", "-", "10.7.0.1"),
                 (overlay % (h2.ip, h1.ip, "10.7.0.1"), overlay % (h1.ip, h2.ip, "10.7.0.9")))]
        text = ""
        if "migration" in parts:
            text += migration(h1, args.moves, max(50, args.iters // 10))
        if "transports" not in parts:
            write_md(rg.logdir, text)
            return
        best = {}
        for r in range(args.rounds):
            for name, server, client, (senv, cenv) in runs:
                got = measure(rg, server, client,
                              "%s-%d" % (re.sub(r"[^A-Za-z0-9]+", "-", name), r),
                              args.iters, senv, cenv)
                if got:
                    bw, lat = best.get(name, (0.0, float("inf")))
                    best[name] = (max(bw, got[0]), min(lat, got[1]))
        write_md(rg.logdir, table(best) + "\n\n" + text)


def write_md(logdir, text):
    with open(os.path.join(logdir, "bench.md"), "w") as f:
        f.write(text + "\n")


def migration(h, moves, iters):
    """The migrate section's timing mode in h: its tables (markdown)."""
    hostverbs.datapath_addresses(h)
    env = ("T_DATAPATH_HOSTVERBS=rxe0:{nic} T_DATAPATH_ONLY=migrate "
           "T_MIGRATE_BENCH={m} T_MIGRATE_BENCH_ITERS={i} PVO_BUILD={b} "
           "PVO_BACKEND={b}/backend/pvrdma-overlayd PVO_TEST_TIMEOUT_MS=20000"
           ).format(nic=h.nic, m=moves, i=iters, b=PLAIN)
    print("bench-hostverbs: a on host verbs moves %d times to host 3 and back "
          "(its RC connection to b timed)" % moves, flush=True)
    rc, out = h.run("cd /tmp && %s timeout -k 5 900 %s 2>&1" % (env, DATAPATH), timeout=960)
    failed = [l for l in out.splitlines() if l.startswith("not ok")]
    if rc != 0 or failed:
        print("bench: the migration part failed (exit %d):\n%s"
              % (rc, "\n".join(failed or out.splitlines()[-30:])), flush=True)
    moves_t = ["| move | downtime | blackout b -> a | blackout a -> b "
               "| blackout - downtime (worse) | / downtime |",
               "|---|---:|---:|---:|---:|---:|"]
    places = {}
    for line in out.splitlines():
        f = dict(re.findall(r"(\w+)=([\w.]+)", line)) if "bench: " in line else {}
        if "move" in f:
            down = float(f["downtime_ms"])
            worst = max(float(f["blackout_b_ms"]), float(f["blackout_a_ms"]))
            moves_t.append("| to %s | %.1f ms | %.1f ms | %.1f ms | %+.1f ms | %.2f |"
                           % (f["move"], down, float(f["blackout_b_ms"]),
                              float(f["blackout_a_ms"]), worst - down,
                              (worst - down) / down if down else 0))
            print("bench: %s" % line.split("bench: ", 1)[1], flush=True)
        elif "place" in f:
            places.setdefault(f["place"], []).append(
                (float(f["write_ab_MBps"]), float(f["write_ba_MBps"]), float(f["rtt_us"])))
            print("bench: %s" % line.split("bench: ", 1)[1], flush=True)
    place_t = ["| a | runs | WRITE a -> b, MB/s | WRITE b -> a, MB/s | round trip 64 B, us |",
               "|---|---:|---:|---:|---:|"]
    for name, what in (("home_unmoved", "on host 1, before any move"),
                       ("on_host3", "on host 3 (peers translate its numbers)"),
                       ("home", "on host 1 again")):
        rows = places.get(name)
        if not rows:
            continue
        n = len(rows)
        place_t.append("| %s | %d | %.1f | %.1f | %.1f |"
                       % (what, n, sum(r[0] for r in rows) / n,
                          sum(r[1] for r in rows) / n, sum(r[2] for r in rows) / n))
    text = "\n".join(moves_t) + "\n\n" + "\n".join(place_t)
    print("\n" + text, flush=True)
    return text


def table(best):
    base = best.get("plain rxe")
    lines = ["| between two TCG guests (rdma_rxe) | WRITE 64 KiB, MB/s | of plain rxe "
             "| half RTT 64 B, us | of plain rxe |",
             "|---|---:|---:|---:|---:|"]
    for name in ("plain rxe", "hostverbs", "hostverbs, busy-poll-us 200", "overlay"):
        if name not in best:
            lines.append("| %s | failed | | | |" % name)
            continue
        bw, lat = best[name]
        lines.append("| %s | %.1f | %s | %.1f | %s |"
                     % (name, bw, "%.0f %%" % (100 * bw / base[0]) if base else "-",
                        lat, "%.0f %%" % (100 * lat / base[1]) if base else "-"))
    text = "\n".join(lines)
    print("\n" + text)
    for name in ("hostverbs", "hostverbs, busy-poll-us 200"):
        if base and name in best:
            bw, lat = best[name]
            print("bench: %s: bandwidth %.0f %% of plain rxe (target >= 90 %%), "
                  "half round trip %.0f %% (target <= 110 %%)"
                  % (name, 100 * bw / base[0], 100 * lat / base[1]))
    return text


if __name__ == "__main__":
    main()
