#!/usr/bin/python3
"""make bench-migration: the RDMA blackout an application sees while its
guest live-migrates, next to QEMU's own downtime, in the same run.

Two ram-root TCG guests (migratable) on one back-end (build/plain, as
make bench uses). g1 runs pvo-blackout's writer: 64 KiB RDMA WRITEs back
to back (8 in flight, all signalled) into 1 MiB of g2's memory. First it
writes without a migration (its bandwidth, and the pauses this host makes
on its own); then g1 migrates to a new QEMU process on the same back-end
while it writes, --runs times, with QEMU's defaults (precopy,
downtime-limit 300 ms); a migration not done within --converge-s is
cancelled and the next ones use auto-converge.

The blackout is timed by the guest that does not migrate: a guest's clock
stands still while its VM is stopped, so the migrating writer's own gaps
between completions leave the stop out. g2's receiver looks for a new
WRITE every millisecond; the blackout is its longest wait that covers the
VM's stop. The stop is placed on the host's clock by QEMU's downtime
checkpoints (trace events in each QEMU's log: the source stops the VM,
the destination runs it), and the receiver's waits by the offset of g2's
clock to the host's. pvo-blackout also says for how long of a wait the
receiver itself did not run ("blind": a loaded host's noise, not the
device's).

Per migration: converged or not, total time, RAM sent, dirty-sync
passes, the highest dirty-page rate query-migrate showed, QEMU's
downtime (the source's view: until it sent the last byte), the VM's stop
from the checkpoints (until the destination runs it), the blackout,
blackout - downtime (target: at most 0.2x the downtime), blackout - VM
stop (what follows the VM's start: the back-end thaws it at QEMU's
DRIVER_OK, then its first WQEs), the migrated guest's first doorbell
after the thaw (the back-end's log: the part of that which is the
guest's own, its vCPU in a new TCG process), the longest pause while
the migration ran, the writer's own longest gap and its bandwidth.

Then (--receiver-area MiB, default 64; 0: skip) g2, the WRITEs' target,
migrates while the writer goes round that many MiB of it: the back-end
dirties g2's pages as fast as it writes. QEMU's defaults first, then
auto-converge, then a downtime-limit that the area can be sent in, until
one converges; g1's writer times the blackout then.

The table also goes to build/test-logs/migration.py/blackout.md; the logs
(consoles, back-end, each QEMU, pvo-blackout's output with every pause of
20 ms or more) are in the same directory.
"""

import argparse
import os
import re
import sys
import time

sys.dont_write_bytecode = True
TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(TOP, "tests/vm/lib"))
# the -O2 back-end, as make bench measures (the tests use the sanitizer build)
os.environ.setdefault("PVO_BACKEND", os.path.join(TOP, "build/plain/backend/pvrdma-overlayd"))
from pvovm import MigrationError, migration, rdma, tap  # noqa: E402
from pvovm.rdma import Node, RdmaGuests  # noqa: E402

# query-migrate every 50 ms: places the switch-over on the host's clock
migration.Migration.POLL = 0.05

PROG = rdma.prog("pvo-blackout")
PORT = 19400
SIZE = 65536
WINDOW = 8
SUMMARY = re.compile(r"^pvo-blackout: writes=(\d+) bytes=(\d+) seconds=([\d.]+) mbps=([\d.]+) "
                     r"gap_ms=([\d.]+) gap_at_s=([\d.]+) peer_gap_ms=([\d.]+) "
                     r"peer_gap_at_s=([\d.]+) peer_seconds=([\d.]+) verified=(\d)$", re.M)
GAP_LINE = re.compile(r"^(?:peer )?gap \d: .*$", re.M)
# the back-end's log: the migrated guest's first doorbell after the thaw
FIRST_DOORBELL = r"vm %s: the guest rang its first doorbell ([\d.]+) ms after the thaw"
PAUSE = re.compile(r"^(server|writer) pause: at=([\d.]+) len_ms=([\d.]+) blind_ms=([\d.]+)$", re.M)
# blackout - downtime at most this share of the downtime
TARGET_RATIO = 0.2
# pauses that end this long after the migration completed still count
# (the destination's first moments)
AFTER_SWITCH = 1.0
# QEMU's downtime checkpoints in each QEMU's log (migration.checkpoint)
QEMU_TRACE = migration.DOWNTIME_TRACE


def say(msg):
    print("bench-migration: " + msg, flush=True)


class Run:
    """One pvo-blackout run and, if it had one, its migration."""

    def __init__(self, what):
        self.what = what
        self.pair = None
        self.summary = None
        self.stats = None        # migration.Stats (completed or not)
        self.error = None        # why the migration failed
        self.settings = None     # what was set beyond QEMU's defaults
        self.max_dirty_rate = 0  # pages/s, the highest query-migrate showed
        self.page_size = 4096
        # on the host's monotonic clock: when the writer was started, the
        # migration started, the last poll that found it still running and
        # the first that found it completed
        self.started = self.t_migrate = self.t_running = self.t_completed = None
        # from QEMU's checkpoints: (source stopped the VM, the destination
        # runs it), on the host's monotonic clock
        self.vm_stop = None
        # the side that does not migrate times the blackout: its clock runs on
        self.observer = "server"
        self.offset = None       # (observer's clock - host's, uncertainty), s
        # (len_ms, blind_ms) of pauses the observer saw: the longest while
        # the migration ran (the whole run without one), the switch-over's
        self.longest = None
        self.blackout = None
        # the back-end's view: the mover's first doorbell after its thaw
        self.first_doorbell_ms = None

    @property
    def ok(self):
        return self.pair is not None and self.pair.ok and self.summary is not None \
            and self.summary["verified"] == 1

    def parse(self):
        m = SUMMARY.search(self.pair.client_out) if self.pair else None
        if m:
            keys = ("writes", "bytes", "seconds", "mbps", "gap_ms", "gap_at_s", "peer_gap_ms",
                    "peer_gap_at_s", "peer_seconds", "verified")
            self.summary = {k: (int(v) if k in ("writes", "bytes", "verified") else float(v))
                            for k, v in zip(keys, m.groups())}
        if self.pair is None:
            return
        out = self.pair.server_out if self.observer == "server" else self.pair.client_out
        pauses = [(float(m.group(2)), float(m.group(3)), float(m.group(4)))
                  for m in PAUSE.finditer(out)]
        if self.t_migrate is None or self.offset is None:
            # (below PAUSE_MS pvo-blackout lists none: its longest gap then)
            self.longest = max(((ln, bl) for _, ln, bl in pauses), default=None) or (
                (self.summary["peer_gap_ms" if self.observer == "server" else "gap_ms"], 0)
                if self.summary else None)
            return
        slack = self.offset[1] + 0.02
        # the switch-over's pause overlaps the VM's stop: from QEMU's
        # checkpoints, else the downtime before query-migrate said completed
        done = self.t_completed or time.monotonic()
        running = self.t_running or done
        down = self.stats.downtime if self.stats and self.stats.downtime else 0
        if self.vm_stop:
            stop = ((self.vm_stop[0] + self.vm_stop[1]) / 2,
                    (self.vm_stop[1] - self.vm_stop[0]) / 2 + slack)
        else:
            stop = ((running + done) / 2 - down / 2, (done - running) / 2 + slack)
        for at, length, blind in pauses:
            start = at - self.offset[0]
            end = start + length / 1000
            if end >= self.t_migrate - slack and start <= done + AFTER_SWITCH + slack:
                self.longest = max(self.longest or (0, 0), (length, blind))
            if self.t_completed and start <= stop[0] + stop[1] and end >= stop[0] - stop[1]:
                self.blackout = max(self.blackout or (0, 0), (length, blind))


def clock_offset(node):
    """node's CLOCK_MONOTONIC (as /proc/uptime shows it) minus the host's
    monotonic clock, and the uncertainty: half the command's round trip."""
    t1 = time.monotonic()
    out = node.check("cat /proc/uptime")
    t2 = time.monotonic()
    return float(out.split()[0]) - (t1 + t2) / 2, (t2 - t1) / 2 + 0.005


def commands(writer, target, seconds, area):
    server = "%s -d %s -g %d -p %d" % (PROG, target.ibdev, target.gid_index, PORT)
    client = "%s -d %s -g %d -p %d -D %d -s %d -w %d -a %d %s" % (
        PROG, writer.ibdev, writer.gid_index, PORT, seconds, SIZE, WINDOW, area, target.ip)
    return server, client


def baseline(rg, seconds):
    a, b = rg.nodes
    run = Run("no migration (%d s)" % seconds)
    server, client = commands(a, b, seconds, 16 * SIZE)
    run.pair = rg.pair(b, server, a, client, "blackout-baseline", timeout=seconds + 120,
                       ready=rdma.tcp(PORT))
    run.parse()
    return run


AUTO_CONVERGE = ("auto-converge", {"capabilities": {"auto-converge": True}})


def migrate_under_writes(rg, mover, area, args, settings, what):
    """The writer (g1) writes into area bytes of g2; mover migrates
    meanwhile, with settings (None: QEMU's defaults, or (label, options of
    Guest.start_migration)). The writer is stopped (SIGINT) args.after
    seconds after the migration."""
    a, b = rg.nodes
    run = Run(what)
    run.settings = settings
    observer = b if mover is a else a
    run.observer = "server" if observer is b else "writer"
    run.offset = clock_offset(observer)
    server, client = commands(a, b, 3600, area)
    name = "blackout-%d" % (len(args.done) + 1)
    job = rg.start_pair(b, server, a, client, name, timeout=args.converge_s + 600,
                        ready=rdma.tcp(PORT))
    run.started = time.monotonic()
    time.sleep(args.settle)

    def progress(info):
        ram = info.get("ram") or {}
        run.max_dirty_rate = max(run.max_dirty_rate, ram.get("dirty-pages-rate", 0))
        run.page_size = ram.get("page-size", run.page_size)
        if info.get("status") == "completed":
            run.t_completed = run.t_completed or time.monotonic()
        else:
            run.t_running = time.monotonic()

    run.t_migrate = time.monotonic()
    source_log = mover.guest.qemu_log
    log_from = len(rg.backend.text())
    try:
        m = mover.guest.start_migration(progress=progress, **(settings[1] if settings else {}))
        run.stats = m.wait(timeout=args.converge_s)
        stopped = migration.checkpoint(source_log, "src-downtime-start")
        started = migration.checkpoint(mover.guest.qemu_log, "dst-precopy-bh-vm-started")
        if stopped and started and run.t_migrate < stopped < started:
            run.vm_stop = (stopped, started)
    except MigrationError as e:
        run.error = str(e).split("\n")[0]
        run.stats = e.stats
    time.sleep(args.after)
    # timeout(1) passes the signal on to the writer, which drains and reports
    a.run("kill -INT $(cat %s.pid)" % job["cbase"])
    run.pair = rg.finish_pair(job)
    run.parse()
    m = re.search(FIRST_DOORBELL % re.escape(mover.name), rg.backend.text()[log_from:])
    run.first_doorbell_ms = float(m.group(1)) if m else None
    return run


def report(r):
    if r.stats is not None:
        say("  QEMU: %s" % r.stats)
    if r.error:
        say("  %s" % r.error)
    s = r.summary
    if s is None:
        say("  pvo-blackout failed: %s" % r.pair.diag())
        return
    say("  writer: %d WRITEs, %.0f MB/s, the receiver found every slot right; the guests' "
        "clocks drifted %.0f ms apart (one stands still while its VM is stopped)"
        % (s["writes"], s["mbps"], abs(s["peer_seconds"] - s["seconds"]) * 1000))
    for line in GAP_LINE.findall(r.pair.client_out):
        say("    " + line)
    who = "g2's receiver" if r.observer == "server" else "g1's writer"
    if r.t_completed:
        say("    (the migration ran from %.2f to %.2f s after the writer was started; "
            "%s's clock - host's: %.3f +- %.3f s)" % (
                r.t_migrate - r.started, r.t_completed - r.started, who, r.offset[0],
                r.offset[1]))
    if r.vm_stop:
        say("  QEMU's checkpoints: the VM stopped %.2f s after the writer was started, ran "
            "again on the destination %.1f ms later" % (
                r.vm_stop[0] - r.started, (r.vm_stop[1] - r.vm_stop[0]) * 1000))
    if r.longest:
        say("  longest pause %s: %.1f ms (%s did not look for %.1f ms of it)"
            % ("during the migration" if r.t_migrate else "of the run", r.longest[0], who,
               r.longest[1]))
    if r.blackout:
        say("  the switch-over's pause: %.1f ms (%s did not look for %.1f ms of it)"
            % (r.blackout[0], who, r.blackout[1]))


def fmt(v, spec):
    return spec % v if v is not None else "-"


def table(runs, base):
    lines = ["| run | converged | total s | RAM sent MiB | dirty syncs | dirty rate MiB/s | "
             "downtime ms | VM stopped ms | blackout ms | blackout - downtime ms | "
             "(blackout - downtime) / downtime | "
             "blackout - VM stopped ms | guest's first doorbell after the thaw ms | "
             "longest pause ms | writer's own gap ms | WRITE MB/s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def pause(p):
        # the observer's blind time in it, when it matters
        if p is None:
            return "-"
        return "%.0f" % p[0] + (" (blind %.0f)" % p[1] if p[1] >= 10 else "")

    for r in [base] + runs:
        st, s = r.stats, r.summary or {}
        done = st is not None and st.status == "completed"
        conv = "-" if r is base else ("yes" if done else "no (%s)" % (
            st.status if st else "not started"))
        if r.settings:
            conv += ", " + r.settings[0]
        down = st.downtime * 1000 if done else None
        stopped = (r.vm_stop[1] - r.vm_stop[0]) * 1000 if r.vm_stop else None
        lines.append("| %s |" % " | ".join([
            r.what, conv,
            fmt(st.total_time if st else None, "%.2f"),
            fmt(st.transferred / 2 ** 20 if st else None, "%.1f"),
            fmt(st.dirty_syncs if st else None, "%d"),
            fmt(r.max_dirty_rate * r.page_size / 2 ** 20 if st else None, "%.1f"),
            fmt(down, "%.0f"),
            fmt(stopped, "%.0f"),
            pause(r.blackout),
            fmt(r.blackout[0] - down if r.blackout and down is not None else None, "%+.0f"),
            fmt((r.blackout[0] - down) / down if r.blackout and down else None, "%+.2f"),
            fmt(r.blackout[0] - stopped if r.blackout and stopped is not None else None,
                "%+.0f"),
            fmt(r.first_doorbell_ms, "%.0f"),
            pause(r.longest),
            fmt(s.get("gap_ms"), "%.0f"),
            fmt(s.get("mbps"), "%.0f")]))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="migrations of the writer (3)")
    ap.add_argument("--baseline-s", type=int, default=5,
                    help="seconds of writing without a migration (5)")
    ap.add_argument("--settle", type=float, default=3, help="seconds of writing before a "
                    "migration starts (3)")
    ap.add_argument("--after", type=float, default=2, help="seconds of writing after it (2)")
    ap.add_argument("--converge-s", type=int, default=30,
                    help="a migration not done by then has not converged (30)")
    ap.add_argument("--receiver-area", type=int, default=64, metavar="MiB",
                    help="then migrate the WRITEs' target while they go round MiB of it "
                    "(64; 0: not)")
    args = ap.parse_args()
    args.done = []
    tap.plain("bench-migration")
    missing = rdma.missing("pvo", ["pvo-blackout"], ram_root=True)
    if missing:
        sys.exit("bench-migration: build outputs missing: %s (run make)" % "; ".join(missing))
    nodes = [Node("g1", "10.0.42.1", ram_root=True), Node("g2", "10.0.42.2", ram_root=True)]
    say("back-end %s; two ram-root TCG guests (about 20 s)" % os.environ["PVO_BACKEND"])
    t_start = time.monotonic()
    with RdmaGuests(nodes, kind="pvo", qemu_args=QEMU_TRACE) as rg:
        a, b = rg.nodes
        clock = a.check("cat /sys/devices/system/clocksource/clocksource0/current_clocksource")
        params = a.guest.qmp("query-migrate-parameters")
        say("guest clocksource %s; QEMU's migration defaults: downtime-limit %s ms, "
            "max-bandwidth %.0f MiB/s" % (clock.strip(), params.get("downtime-limit"),
                                          params.get("max-bandwidth", 0) / 2 ** 20))
        say("g1 writes to g2 for %d s without a migration" % args.baseline_s)
        base = baseline(rg, args.baseline_s)
        report(base)
        settings = None
        for i in range(args.runs):
            say("migration %d of g1 while it writes%s" % (
                i + 1, " (%s)" % settings[0] if settings else ""))
            r = migrate_under_writes(rg, a, 16 * SIZE, args, settings, "g1 (writer) #%d" % (i + 1))
            args.done.append(r)
            report(r)
            if r.stats is None or r.stats.status != "completed":
                settings = AUTO_CONVERGE
        if args.receiver_area:
            # the back-end dirties the target's pages for the peer: QEMU's
            # defaults first, then auto-converge, then a downtime-limit
            # that the area can be sent in
            area = args.receiver_area << 20
            limit = max(300, int(2000 * area / params.get("max-bandwidth", 128 << 20)))
            tries = [None, AUTO_CONVERGE,
                     ("downtime-limit %d ms" % limit, {"downtime_limit": limit})]
            for settings in tries:
                say("migration of g2 while g1's WRITEs go round %d MiB of it%s" % (
                    args.receiver_area, " (%s)" % settings[0] if settings else ""))
                r = migrate_under_writes(rg, b, area, args, settings,
                                         "g2 (target, %d MiB)" % args.receiver_area)
                args.done.append(r)
                report(r)
                if r.stats is not None and r.stats.status == "completed":
                    break
        logdir = rg.logdir
    text = table(args.done, base)
    # reported, never failing the run (as make bench's targets)
    measured = [(r.blackout[0] - r.stats.downtime * 1000) / (r.stats.downtime * 1000)
                for r in args.done if r.blackout and r.stats and r.stats.downtime]
    text += ("\n\ntarget, blackout - downtime at most %.1fx the downtime: met by %d of %d "
             "completed migrations" % (TARGET_RATIO, sum(1 for d in measured if d <= TARGET_RATIO),
                                       len(measured)))
    # the same with the migrated writer's own wait before it rang the
    # device taken out (its vCPU, not the device or its peers; a
    # migrated target's doorbells pace nothing the writer waits for)
    ours = [(r.blackout[0] - ((r.first_doorbell_ms or 0) if r.observer == "server" else 0)
             - r.stats.downtime * 1000)
            / (r.stats.downtime * 1000)
            for r in args.done if r.blackout and r.stats and r.stats.downtime]
    text += ("; less the migrated guest's first doorbell after the thaw: met by %d of %d"
             % (sum(1 for d in ours if d <= TARGET_RATIO), len(ours)))
    print("\n" + text + "\n", flush=True)
    with open(os.path.join(logdir, "blackout.md"), "w") as f:
        f.write("make bench-migration, %s; 64 KiB RDMA WRITEs, %d in flight\n\n%s\n"
                % (time.strftime("%Y-%m-%d"), WINDOW, text))
    bad = [r.what for r in [base] + args.done if not r.ok]
    if bad or tap.failed():
        sys.exit("bench-migration: failed: %s; logs in %s" % (", ".join(bad) or "checks above",
                                                              logdir))
    say("done in %.0f s; logs in %s" % (time.monotonic() - t_start, logdir))


main()
