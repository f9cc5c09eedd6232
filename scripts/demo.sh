#!/usr/bin/python3
"""make demo: start pvrdma-overlayd and two TCG guests with -device
pvrdma-overlay on it, show the RDMA device from inside a guest (ibv_devices,
ibv_devinfo, rdma link), then run ib_write_bw and ib_send_lat between the
guests, on pvrdma-overlay and, in the same guests and the same run, on Linux
rdma_rxe over their virtio-net link, and print both side by side.

Absolute numbers are TCG-bound; the ratio is what to look at. The table is
also written to build/test-logs/demo.sh/perftest.md. Logs: build/test-logs/demo.sh/.
"""

import os
import re
import sys

sys.dont_write_bytecode = True
TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(TOP, "tests/vm/lib"))
from pvovm import rdma, paths, tap  # noqa: E402
from pvovm.rdma import Node, RdmaGuests  # noqa: E402

ITERS = 500
RUNS = [
    # tool, extra args, what the result column means, regex over the client output
    ("ib_write_bw", "-s 65536", "BW average [MB/s], 64 KiB",
     re.compile(r"^\s*65536\s+%d\s+[\d.]+\s+([\d.]+)" % ITERS, re.M)),
    ("ib_send_lat", "-s 64", "t_typical [usec], 64 B",
     re.compile(r"^\s*64\s+%d\s+[\d.]+\s+[\d.]+\s+([\d.]+)" % ITERS, re.M)),
]


def say(msg):
    print("demo: " + msg, flush=True)


def add_rxe(n):
    """rdma_rxe on the guest's NIC, next to pvrdma-overlay; its GID index."""
    n.check("modprobe rdma_rxe && rdma link add rxe0 type rxe netdev %s" % n.nic, timeout=120)
    out = n.check("cd /sys/class/infiniband/rxe0/ports/1; for t in $(seq 100); do "
                  "for f in $(grep -lx %s gids/* 2>/dev/null); do i=${f##*/}; "
                  "[ \"$(cat gid_attrs/types/$i)\" = 'RoCE v2' ] && echo $i && exit 0; done; "
                  "sleep 0.1; done; exit 1" % n.gid, timeout=60)
    return int(out.split()[0])


def perftest(rg, dev, gids, tool, extra, regex, port):
    a, b = rg.nodes
    common = "-F -n %d -p %d %s" % (ITERS, port, extra)
    r = rg.pair(b, "%s -d %s -x %d %s" % (tool, dev[b.name], gids[b.name], common),
                a, "%s -d %s -x %d %s %s" % (tool, dev[a.name], gids[a.name], common, b.ip),
                "%s-%s" % (tool, dev[a.name]), timeout=180, ready=rdma.tcp(port))
    m = regex.search(r.client_out)
    if not (r.ok and m):
        say("%s on %s failed; see %s" % (tool, dev[a.name], rg.logdir))
        return None
    return float(m.group(1))


def main():
    tap.plain("demo")
    missing = rdma.missing("pvo")
    if missing:
        sys.exit("demo: build outputs missing: %s (run make)" % "; ".join(missing))
    nodes = [Node("demo-a", "10.0.77.1"), Node("demo-b", "10.0.77.2")]
    say("starting pvrdma-overlayd (tenant 'blue', VNI 100) and two TCG guests (about 20 s)")
    with RdmaGuests(nodes, kind="pvo") as rg:
        a, b = rg.nodes
        for cmd in ["ibv_devices", "ibv_devinfo -v -d pvrdma_overlay0", "rdma link"]:
            print("\n[%s]# %s" % (a.name, cmd), flush=True)
            print(a.check(cmd).rstrip(), flush=True)
        say("adding Linux rdma_rxe on the guests' virtio-net for comparison")
        pvo_dev = {n.name: "pvrdma_overlay0" for n in nodes}
        pvo_gid = {n.name: n.gid_index for n in nodes}
        rxe_dev = {n.name: "rxe0" for n in nodes}
        rxe_gid = {n.name: add_rxe(n) for n in nodes}
        rows = []
        port = 19500
        for tool, extra, what, regex in RUNS:
            say("%s %s -n %d: pvrdma-overlay, then rxe" % (tool, extra, ITERS))
            pvo = perftest(rg, pvo_dev, pvo_gid, tool, extra, regex, port)
            rxe = perftest(rg, rxe_dev, rxe_gid, tool, extra, regex, port + 1)
            port += 2
            rows.append((tool, what, pvo, rxe))
    fmt = lambda v: "%.2f" % v if v is not None else "failed"  # noqa: E731
    lines = ["| test | metric | pvrdma-overlay | rdma_rxe over virtio-net | ratio |",
             "|---|---|---|---|---|"]
    for tool, what, pvo, rxe in rows:
        ratio = "-"
        if pvo and rxe:
            ratio = "%.2fx %s" % ((pvo / rxe, "higher") if "BW" in what else
                                  (rxe / pvo, "lower latency"))
        lines.append("| %s | %s | %s | %s | %s |" % (tool, what, fmt(pvo), fmt(rxe), ratio))
    table = "\n".join(lines)
    print("\n" + table + "\n", flush=True)
    with open(os.path.join(paths.test_log_dir(), "perftest.md"), "w") as f:
        f.write("Two TCG guests, one host, same run (make demo):\n\n" + table + "\n")
    if tap.failed() or None in [v for row in rows for v in row[2:]]:
        sys.exit("demo: something failed (above); logs in %s" % paths.test_log_dir())
    say("done; logs in %s" % paths.test_log_dir())


main()
