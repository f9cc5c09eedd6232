"""Shared parts of the inter-host overlay tests (t-overlay-*): two guests on
two namespace hosts, one back-end each, and checks of what the back-ends
report through `pvo-ctl show` (docs/overlay.md).

    why = overlay.skip_reason()
    if why: tap.skip_all(why)
    with RdmaGuests(overlay.two_hosts(51), kind="pvo") as rg:
        overlay.map_checks(rg)                  # the [remote] sections arrived
        mon = overlay.monitor(rg)               # samples `show` while traffic runs
        ...
        overlay.traffic_checks(rg, mon)         # tx/rx > 0 per VM, no bad ICRC
"""

import os
import threading
import time

from . import backend, hosts, rdma, tap

VXLAN_PORT = 4789


def skip_reason():
    """Why overlay tests cannot run here (a missing prerequisite of the
    machine, not of the code under test), or None."""
    if rdma.device_kind() != "pvo":
        return ("PVO_TEST_DEVICE=%s: the overlay tests check pvrdma-overlay's back-ends "
                "(there is no rxe counterpart)" % rdma.device_kind())
    why = hosts.unsupported_reason()
    if why:
        return "cannot make namespace hosts: %s" % why
    return None


def two_hosts(subnet, tenant="blue"):
    """Guests g1 on host 0 and g2 on host 1, addresses 10.0.<subnet>.1/.2,
    one tenant."""
    return [rdma.Node("g1", "10.0.%d.1" % subnet, tenant=tenant, host=0),
            rdma.Node("g2", "10.0.%d.2" % subnet, tenant=tenant, host=1)]


def _show(rg, be):
    """be.show(), or (None, why) when pvo-ctl is missing or fails."""
    why = backend.missing_ctl()
    if why:
        return None, "pvo-ctl missing: %s" % why
    try:
        return be.show(), None
    except backend.CtlError as err:
        return None, str(err)


def map_checks(rg):
    """One TAP line per back-end: `show` lists a map entry (origin config)
    for every guest of the other hosts (those it has no [vm] of, see
    Node(also_on=)), with its VNI, IP, VTEP:4789 and MAC."""
    for h, be in enumerate(rg.backends):
        recs, why = _show(rg, be)
        want = [n for n in rg.nodes if not n.served_on(h)]
        if recs is None:
            tap.not_ok(rg.label("%s: show lists the [remote] mappings" % be.name), diag=why)
            continue
        maps = recs.get("map", [])
        missing = []
        for n in want:
            entry = {"vni": rg.vni(n.tenant), "ip": n.ip,
                     "vtep": "%s:%d" % (rg.hosts.vtep(n.host), VXLAN_PORT),
                     "mac": n.mac, "origin": "config"}
            if not any(all(m.get(k) == v for k, v in entry.items()) for m in maps):
                missing.append(" ".join("%s=%s" % kv for kv in entry.items()))
        tap.ok(not missing, rg.label("%s: show lists the [remote] mappings (%s)"
                                     % (be.name, ", ".join(n.name for n in want))),
               diag="missing: %s\nmap records: %s" % ("; ".join(missing), maps))


def monitor(rg, interval=2.0):
    """A ShowMonitor over the back-ends, started (None without pvo-ctl)."""
    if backend.missing_ctl():
        return None
    return backend.ShowMonitor(rg.backends, interval=interval).start()


def vm_record(recs, name):
    for v in (recs or {}).get("vm", []):
        if v.get("name") == name:
            return v
    return None


def final_show(rg, mon):
    """{back-end name: parsed show} now (mon sampled last), or the reasons."""
    out, whys = {}, []
    if mon is not None:
        mon.stop()
    for be in rg.backends:
        recs, why = _show(rg, be)
        if recs is None:
            whys.append("%s: %s" % (be.name, why))
        else:
            out[be.name] = recs
    return out, whys


def traffic_checks(rg, mon):
    """TAP lines after traffic: for each guest, its back-end's vm record
    counts overlay packets sent and received (> 0); no VM and no QP record
    (sampled through the run) counts a drop_bad_icrc. Returns the final
    show records ({back-end name: records})."""
    shows, whys = final_show(rg, mon)
    for n in rg.nodes:
        be = rg.backend_of(n)
        v = vm_record(shows.get(be.name), n.name)
        tap.ok(v is not None and isinstance(v.get("tx_packets"), int) and v["tx_packets"] > 0
               and isinstance(v.get("rx_packets"), int) and v["rx_packets"] > 0,
               rg.label("%s: %s counts overlay packets sent and received (tx %s, rx %s)"
                        % (n.name, be.name, v and v.get("tx_packets"), v and v.get("rx_packets"))),
               diag="vm record: %s\n%s" % (v, "\n".join(whys)))
    bad = []
    for name, recs in shows.items():
        for v in recs.get("vm", []):
            if v.get("drop_bad_icrc"):
                bad.append("%s: vm %s" % (name, v))
        for q in recs.get("qp", []):
            if q.get("drop_bad_icrc"):
                bad.append("%s: qp %s" % (name, q))
    for q in (mon.qp_records() if mon else []):
        if q.get("drop_bad_icrc"):
            bad.append("sampled: qp %s" % q)
    seen = len(mon.qp_records()) if mon else 0
    tap.ok(not whys and not bad,
           rg.label("no VM and none of the %d QP records seen counts drop_bad_icrc" % seen),
           diag="\n".join(whys + bad[:20]))
    return shows


def counter_sum(shows, kind, key):
    """Sum of an integer field over every record of a kind in every back-end."""
    total = 0
    for recs in shows.values():
        for r in recs.get(kind, []):
            if isinstance(r.get(key), int):
                total += r[key]
    return total


def save_impairment_stats(rg, name="impairment"):
    """Writes tc statistics of every host's underlay NIC to
    <logdir>/<name>.h<i>.txt; returns the texts."""
    texts = []
    for h in range(rg.host_count):
        text = rg.hosts.qdisc_stats(h)
        with open(os.path.join(rg.logdir, "%s.h%d.txt" % (name, h)), "w") as f:
            f.write(text)
        texts.append(text)
    return texts


class MapWatch:
    """Polls a back-end's map in a thread until (vni, ip) maps to vtep
    ("A.B.C.D:port"), e.g. while a VM migrates; .at is then the time (host
    monotonic clock, as migration.checkpoint()) of the first sample that
    showed it, within the interval plus one `pvo-ctl show` (.resolution,
    the longest sample).

        w = MapWatch(be, 100, "10.0.57.1", "10.1.2.3:4790").start()
        ...                      # migrate
        at = w.wait(timeout=30)  # None if it never did
    """

    def __init__(self, be, vni, ip, vtep, interval=0.02):
        self.be, self.vni, self.ip, self.vtep = be, vni, ip, vtep
        self.interval = interval
        self.at = None
        self.resolution = 0.0
        self.last = None
        self._stop = threading.Event()
        self._thread = None

    def start(self):
        self._thread = threading.Thread(target=self._run, daemon=True, name="map-watch")
        self._thread.start()
        return self

    def _run(self):
        while not self._stop.is_set():
            t0 = time.monotonic()
            try:
                recs = self.be.show()
            except Exception:  # noqa: B902 - CtlError, OSError: sampled again
                recs = None
            t1 = time.monotonic()
            self.resolution = max(self.resolution, t1 - t0 + self.interval)
            for m in (recs or {}).get("map", []):
                if m.get("vni") == self.vni and m.get("ip") == self.ip:
                    self.last = m
                    if m.get("vtep") == self.vtep:
                        self.at = t0
                        return
            self._stop.wait(self.interval)

    def wait(self, timeout):
        self._thread.join(timeout)
        self._stop.set()
        return self.at
