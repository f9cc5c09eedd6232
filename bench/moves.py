#!/usr/bin/python3
"""make bench-migration (second part): how soon the other hosts' back-ends
map a migrated VM to its new host, with the map from BGP EVPN next to the
back-ends' own announcements, in the same run on the same hosts.

Three namespace hosts with an EVPN fabric (tests/vm/lib/pvovm/evpn.py:
FRR's zebra and bgpd on each, iBGP full mesh; each guest's NIC a tap on
its host's tenant bridge), one back-end each (build/plain). Tenant blue
takes its map from EVPN (control-plane = evpn), tenant red from [remote]
sections and the announcements a destination back-end sends at the thaw
(a [daemon] migration-key, the other hosts as peers). Guests b1 (blue)
and r1 (red) start on host 1 and migrate between hosts 1 and 3 in turns,
--runs times each; b2 and r2 on host 2 are their peers. Host 2's map is
sampled every 20 ms during each move (overlay.MapWatch); the time is
from QEMU's checkpoint where the destination runs the VM
(dst-precopy-bh-vm-started) to the first sample that maps the VM to its
new VTEP, give or take the sampling interval plus one `pvo-ctl show`.

The table also goes to build/test-logs/moves.py/convergence.md, next to
the logs (consoles, back-ends, FRR).
"""

import argparse
import os
import statistics
import sys
import time

sys.dont_write_bytecode = True
TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(TOP, "tests/vm/lib"))
os.environ.setdefault("PVO_BACKEND", os.path.join(TOP, "build/plain/backend/pvrdma-overlayd"))
from pvovm import MigrationError, devices, evpn, migration, overlay, paths, rdma  # noqa: E402
from pvovm.rdma import Node, RdmaGuests  # noqa: E402

H1, H2, H3 = 0, 1, 2
MEMORY = 512
MAP_WAIT = 30


def say(msg):
    print(msg, flush=True)


def move(rg, node, src, dst):
    """node from host src to host dst while host 2's map is watched; the
    seconds from the VM's start at dst to host 2's new mapping (None) and
    what happened."""
    watch = overlay.MapWatch(rg.backends[H2], rg.vni(node.tenant), node.ip,
                             "%s:%d" % (rg.hosts.vtep(dst), evpn.BACKEND_VXLAN_PORT)).start()
    try:
        m = node.guest.start_migration(extra_args=devices.with_socket(node.sock_on(dst)),
                                       netdev=rg.fabric.plug(dst, rg.vni(node.tenant), node.name),
                                       netns=rg.hosts.name(dst))
        st = m.wait(timeout=180)
    except MigrationError as e:
        watch.wait(0)
        return None, "failed: %s" % str(e).split("\n")[0], 0
    at = watch.wait(MAP_WAIT)
    ran = migration.checkpoint(node.guest.qemu_log, "dst-precopy-bh-vm-started")
    if at is None or ran is None:
        return None, "no mapping within %d s (last: %s)" % (MAP_WAIT, watch.last), 0
    return at - ran, "downtime %d ms" % ((st.downtime or 0) * 1000), watch.resolution


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="moves per control plane")
    args = ap.parse_args()
    why = overlay.skip_reason() or evpn.missing()
    if why:
        say("moves: cannot run here: %s" % why)
        return 1
    missing = rdma.missing("pvo", ram_root=True)
    if missing:
        say("moves: build outputs missing: %s" % "; ".join(missing))
        return 1
    keydir = paths.private_dir("bench-moves-key")
    key = os.path.join(keydir, "migration.key")
    with open(key, "wb") as f:
        f.write(os.urandom(32))
    nodes = [Node("b1", "10.0.58.1", tenant="blue", host=H1, also_on=[H3], ram_root=True,
                  memory=MEMORY),
             Node("b2", "10.0.58.2", tenant="blue", host=H2, ram_root=True, memory=MEMORY),
             Node("r1", "10.0.59.1", tenant="red", host=H1, also_on=[H3], ram_root=True,
                  memory=MEMORY),
             Node("r2", "10.0.59.2", tenant="red", host=H2, ram_root=True, memory=MEMORY)]
    options = {"migration-key": key,
               "peers": lambda h: ", ".join(rg.hosts.vtep(i) for i in (H1, H2, H3) if i != h)}
    rows = {"EVPN (FRR)": [], "announcements": []}
    notes = []
    say("moves: booting 4 TCG guests on 3 hosts with FRR (about a minute)")
    rg = RdmaGuests(nodes, kind="pvo", daemon_options=options, evpn_fabric=True,
                    evpn_tenants=["blue"], qemu_args=migration.DOWNTIME_TRACE)
    try:
        with rg:
            b1, b2, r1, r2 = rg.nodes
            for n in rg.nodes:
                evpn.announce(n)
            time.sleep(2)
            where = {b1.name: H1, r1.name: H1}
            for i in range(args.runs):
                for label, n in (("EVPN (FRR)", b1), ("announcements", r1)):
                    src = where[n.name]
                    dst = H3 if src == H1 else H1
                    took, what, res = move(rg, n, src, dst)
                    where[n.name] = dst
                    rows[label].append(took)
                    say("moves: %s %s host %d -> host %d: %s (%s, +/- %.2f s)"
                        % (label, n.name, src + 1, dst + 1,
                           "%.3f s" % took if took is not None else "-", what, res))
                    if took is None:
                        notes.append("%s run %d: %s" % (label, i + 1, what))
                    time.sleep(1)
    finally:
        paths.remove_private_dir(keydir)
    lines = ["| map from | moves | after the VM runs at its destination, host 2 maps it "
             "there (s): each | median |", "|---|---|---|---|"]
    for label, vals in rows.items():
        ok = [v for v in vals if v is not None]
        lines.append("| %s | %d | %s | %s |" % (
            label, len(vals), ", ".join("%.3f" % v if v is not None else "-" for v in vals),
            "%.3f" % statistics.median(ok) if ok else "-"))
    out = "\n".join(lines + [""] + notes)
    say("\n" + out)
    logdir = paths.test_log_dir("moves.py")
    with open(os.path.join(logdir, "convergence.md"), "w") as f:
        f.write(out + "\n")
    return 0 if not notes else 1


if __name__ == "__main__":
    sys.exit(main())
