"""Live migration of a test guest to a new QEMU process.

    with Guest("g1", ram_root=True) as g:    # no 9p: QEMU can migrate it
        g.wait_boot()
        stats = g.migrate()                   # Stats; g now runs on the new QEMU
        m = g.start_migration(max_bandwidth=4 << 20)
        ... m.info() ...                      # query-migrate of the source
        stats = m.cancel()                    # the source keeps running
        g.migrate(...)                        # MigrationError if it fails; the
                                              # source keeps running
    ms = [g.start_migration(...), h.start_migration(...)]
    results = wait_all(ms)                    # both at once: Stats or MigrationError

The destination QEMU gets the source's command line with its own private
directory (console, QMP and migration sockets), its own log
(<name>.qemu-mig<N>.log) and `-incoming defer`; `migrate-incoming` opens a
unix socket and the source's `migrate` sends to it. Its serial console
connects to a second listener of the guest's Console, whose bytes are held
back until the source QEMU has been stopped and its last bytes read: the
console log and transcript continue in order, with a harness line where the
destination takes over, and a command running in the guest across the
switch can still be waited for.

The destination's arguments derive from the source's:

- extra_args (default: the source's). A device chardev on a back-end socket
  (devices.pvrdma_overlay(sock)) makes a new connection to the same path:
  the same back-end gets a second front-end for the incoming guest. For
  another back-end pass the new args, e.g.
  extra_args=devices.pvrdma_overlay(other_sock), or a function of the
  source's list (devices.with_socket(other_sock)).
- netdev (default: the source's). A dgram netdev on unix sockets (the
  dgram_pair / Hub cables) binds PATH.mig<N> on the destination and is
  renamed over PATH when the guest switches, so the peers' frames reach the
  guest on the source until then and on the destination after (frames in
  flight at the switch are lost, as on a real wire); Hub knows the name.
  A tap netdev cannot be opened twice: give the destination its own (in
  its own namespace: netns=...).
- netns (default: the source's): the destination QEMU's network namespace,
  e.g. another hosts.py host for an inter-host move.
- rewrite: a function(argv) -> argv, the last word on the command line.

Timeouts kill the destination QEMU; every failure leaves the guest on its
source QEMU, running, and raises MigrationError with QEMU's error text.
"""

import os
import re
import threading
import time

from . import paths, tap
from .console import ConsoleError
from .guest import GuestError, timeout_scale
from .qmp import Qmp, QmpError

_KEEP = object()
# query-migrate states after which nothing more happens
FINAL = ("completed", "failed", "cancelled")


class MigrationError(GuestError):
    """A migration failed, was refused or timed out; the guest still runs
    on its source QEMU. .stats: the last Stats (None if it never started),
    .qemu_log: the destination's log."""

    def __init__(self, msg, stats=None, qemu_log=None):
        super().__init__(msg)
        self.stats = stats
        self.qemu_log = qemu_log


# QEMU's downtime checkpoints, timestamped (wall clock) in a QEMU's log
# when it runs with these arguments: the source stops the VM at
# src-downtime-start, the destination runs it from
# dst-precopy-bh-vm-started (checkpoint())
DOWNTIME_TRACE = ["-msg", "timestamp=on", "-trace", "vmstate_downtime_checkpoint"]
_CHECKPOINT = re.compile(r"^\d+@([\d.]+):vmstate_downtime_checkpoint (\S+)\s*$", re.M)


def checkpoint(log, name):
    """The time of QEMU's last downtime checkpoint name in log, on the
    host's monotonic clock; None if there is none."""
    try:
        with open(log, errors="replace") as f:
            times = [float(t) for t, n in _CHECKPOINT.findall(f.read()) if n == name]
    except OSError:
        return None
    return times[-1] - (time.time() - time.monotonic()) if times else None


def _mib(n):
    return (n or 0) / (1 << 20)


class Stats:
    """What query-migrate said at the end (times in seconds, sizes in
    bytes), and what the harness measured:

    status        "completed", "cancelled" or "failed"
    total_time    QEMU's total time of the migration
    downtime      QEMU's measured downtime (None unless completed)
    setup_time    QEMU's set-up time
    transferred   bytes sent (ram.transferred); ram_total, remaining
    dirty_syncs   dirty-bitmap passes (ram.dirty-sync-count)
    mbps          QEMU's last transfer rate, Mbit/s
    error         QEMU's error-desc (failed)
    dest_start    seconds to start the destination QEMU up to migrate-incoming
    wall          seconds from start_migration() to the end (switch included)
    switch        seconds from "completed" until the guest's Console, QMP
                  and process pointed at the destination
    raw           the whole query-migrate answer
    """

    def __init__(self, raw, dest_start=None, wall=None, switch=None):
        raw = raw or {}
        ram = raw.get("ram") or {}
        self.raw = raw
        self.status = raw.get("status")
        self.total_time = raw.get("total-time", 0) / 1000.0
        self.downtime = raw["downtime"] / 1000.0 if "downtime" in raw else None
        self.setup_time = raw.get("setup-time", 0) / 1000.0
        self.transferred = ram.get("transferred", 0)
        self.ram_total = ram.get("total", 0)
        self.remaining = ram.get("remaining", 0)
        self.dirty_syncs = ram.get("dirty-sync-count", 0)
        self.mbps = ram.get("mbps", 0.0)
        self.error = raw.get("error-desc")
        self.dest_start = dest_start
        self.wall = wall
        self.switch = switch

    def __str__(self):
        s = "%s after %.2f s" % (self.status, self.total_time)
        if self.downtime is not None:
            s += " (downtime %d ms, set-up %d ms)" % (self.downtime * 1000, self.setup_time * 1000)
        s += ", %.1f MiB of %.0f MiB RAM sent, %d dirty-sync pass(es), %.0f Mbit/s" % (
            _mib(self.transferred), _mib(self.ram_total), self.dirty_syncs, self.mbps)
        if self.dest_start is not None:
            s += "; destination QEMU ready in %.2f s" % self.dest_start
        if self.switch is not None:
            s += ", switch %.2f s" % self.switch
        if self.wall is not None:
            s += ", %.2f s in all" % self.wall
        if self.error:
            s += "; error: %s" % self.error
        return s


def _last_line(path):
    try:
        with open(path, errors="replace") as f:
            lines = [ln.strip() for ln in f if ln.strip() and not ln.startswith("# ")]
    except OSError:
        return "(no log)"
    return lines[-1] if lines else "(nothing)"


def stop_process(p, grace=5):
    if p is None:
        return None
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(timeout=grace)
        except Exception:  # noqa: B902 - subprocess.TimeoutExpired; kill anyway
            p.kill()
            p.wait()
    return p.returncode


class Migration:
    """One migration of guest to a new QEMU (Guest.start_migration() makes
    and starts it). Options:

    extra_args      the destination's extra QEMU arguments: None (the
                    source's), a list, or a function(source's list) -> list
    netdev          the destination's -netdev, without id= (default: the
                    source's)
    netns           the destination QEMU's network namespace (default: the
                    source's; None: the test's own)
    rewrite         function(argv) -> argv applied last
    max_bandwidth   bytes/s for this migration (QEMU's default is 128 MiB/s);
                    restored on the source if the migration does not complete
    downtime_limit  ms (QEMU's default: 300)
    capabilities    {capability: bool} for both QEMUs, e.g. {"auto-converge": True};
                    restored on the source if the migration does not complete
    progress        True (default): a TAP comment every progress_every
                    seconds; a function(query-migrate answer) called at
                    every poll; False: quiet
    start_timeout   seconds for the destination QEMU to come up (scaled by
                    PVO_TIMEOUT_SCALE)
    keep_source     leave the source QEMU (paused after the switch, its
                    device still connected) running, as a management layer
                    that has not destroyed it yet; guest.stop_retired()
                    (or guest.stop()) stops it
    """

    POLL = 0.2

    def __init__(self, guest, extra_args=None, netdev=None, netns=_KEEP, rewrite=None,
                 max_bandwidth=None, downtime_limit=None, capabilities=None, progress=True,
                 progress_every=5.0, start_timeout=30, keep_source=False):
        self.guest = guest
        self.keep_source = keep_source
        self.number = None
        if extra_args is None:
            self.extra_args = list(guest.extra_args)
        elif callable(extra_args):
            self.extra_args = list(extra_args(list(guest.extra_args)))
        else:
            self.extra_args = list(extra_args)
        self.netdev = netdev if netdev is not None else guest.netdev
        self.netns = guest.netns if netns is _KEEP else netns
        self.rewrite = rewrite
        self.params = {}
        if max_bandwidth is not None:
            self.params["max-bandwidth"] = int(max_bandwidth)
        if downtime_limit is not None:
            self.params["downtime-limit"] = int(downtime_limit)
        self.capabilities = dict(capabilities or {})
        self.progress = progress
        self.progress_every = progress_every
        self.start_timeout = start_timeout * timeout_scale()
        self.state = "new"
        self.proc = None
        self.qmp = None
        self.dir = None
        self.qemu_log = None
        self.argv = None
        self.renames = []      # (destination's path, the path it takes over)
        self.dest_start = None
        self._saved_params = {}
        self._saved_caps = []
        self._t0 = None
        self._last_active = {}

    # -- start -------------------------------------------------------------

    def _dgram_paths(self, argv):
        """Give every unix dgram netdev a local path of its own."""
        out = list(argv)
        for i in range(len(out) - 1):
            if out[i] != "-netdev" or not out[i + 1].startswith("dgram,"):
                continue
            opts = out[i + 1].split(",")
            if "local.type=unix" not in opts:
                continue
            for j, o in enumerate(opts):
                if o.startswith("local.path="):
                    path = o[len("local.path="):]
                    tmp = "%s.mig%d" % (path, self.number)
                    opts[j] = "local.path=" + tmp
                    self.renames.append((tmp, path))
            out[i + 1] = ",".join(opts)
        return out

    def dest_alive(self):
        return self.proc is not None and self.proc.poll() is None

    def start(self):
        g = self.guest
        if g.proc is None or not g.alive() or g.console is None:
            raise GuestError("%s: cannot migrate: the guest is not running" % g.name)
        if g._migration is not None:
            raise GuestError("%s: a migration is already under way" % g.name)
        g.migrations += 1
        self.number = g.migrations
        self._t0 = time.monotonic()
        self.dir = paths.private_dir("%s-mig%d" % (g.name, self.number))
        console_sock = os.path.join(self.dir, "console.sock")
        qmp_sock = os.path.join(self.dir, "qmp.sock")
        self.uri = "unix:" + os.path.join(self.dir, "migrate.sock")
        self.qemu_log = os.path.join(g.logdir, "%s.qemu-mig%d.log" % (g.name, self.number))
        g.qemu_logs.append(self.qemu_log)
        argv = g.qemu_argv(console_sock, qmp_sock, self.netdev, self.extra_args)
        argv = self._dgram_paths(argv) + ["-incoming", "defer"]
        if self.rewrite is not None:
            argv = list(self.rewrite(argv))
        self.argv = argv
        self.console_sock, self.qmp_sock = console_sock, qmp_sock
        g._migration = self
        self.state = "starting"
        try:
            g.console.listen_next(console_sock)
            self.proc = g.launch(argv, self.qemu_log, self.netns)
            g.console.note("migration %d: destination QEMU pid %d started (log %s)%s: %s"
                           % (self.number, self.proc.pid, self.qemu_log,
                              " in netns %s" % self.netns if self.netns else "", " ".join(argv)))
            g.console.accept_next(self.start_timeout, self.dest_alive)
            self.qmp = Qmp(qmp_sock, timeout=self.start_timeout)
            if self.capabilities:
                caps = [{"capability": k, "state": bool(v)} for k, v in self.capabilities.items()]
                self.qmp.command("migrate-set-capabilities", capabilities=caps)
            self.qmp.command("migrate-incoming", uri=self.uri)
            self.dest_start = time.monotonic() - self._t0
            if self.capabilities:
                # the source keeps them after a failed migration: put
                # back what it had then
                old = g.try_qmp("query-migrate-capabilities")
                self._saved_caps = [c for c in old if c["capability"] in self.capabilities]
                g.try_qmp("migrate-set-capabilities", capabilities=caps)
            if self.params:
                old = g.try_qmp("query-migrate-parameters")
                self._saved_params = {k: old[k] for k in self.params if k in old}
                g.try_qmp("migrate-set-parameters", **self.params)
            g.try_qmp("migrate", uri=self.uri)
        except (ConsoleError, QmpError, OSError) as err:
            what = "cannot start it"
            if not self.dest_alive() and self.proc is not None:
                what = "the destination QEMU exited (status %s: %s)" % (
                    self.proc.returncode, _last_line(self.qemu_log))
            self._give_up("refused")
            raise MigrationError("%s: migration %d: %s: %s (the guest stays on its source QEMU; "
                                 "logs: %s, %s)" % (g.name, self.number, what, err,
                                                    g.qemu_log, self.qemu_log),
                                 qemu_log=self.qemu_log) from err
        self.state = "running"
        g.console.note("migration %d: migrate %s%s" % (
            self.number, self.uri, " with %s" % self.params if self.params else ""))
        return self

    # -- watch -------------------------------------------------------------

    def info(self):
        """query-migrate on the source QEMU (a dict; "status" says where
        it is: setup, active, completed, failed, cancelling, ...)."""
        return self.guest.try_qmp("query-migrate")

    def _source_info(self):
        """info(); a dead source QEMU is the guest's death: GuestError."""
        g = self.guest
        try:
            info = self.info()
        except (QmpError, OSError) as err:
            if not g.alive():
                self.abort("the source QEMU died")
                g._fail("migration %d: the source QEMU died: %s" % (self.number, err))
            raise
        if "ram" in info:
            self._last_active = info
        return info

    def _stats(self, final, switch=None):
        """Stats of the final answer; a cancelled or failed migration's
        answer lacks the counters: they come from the last poll before."""
        raw = dict(self._last_active)
        raw.update(final)
        return Stats(raw, self.dest_start, time.monotonic() - self._t0, switch)

    def _report(self, info, last):
        """Progress; returns the time of the last comment."""
        if callable(self.progress):
            self.progress(info)
            return last
        now = time.monotonic()
        if not self.progress or now - last < self.progress_every:
            return last
        ram = info.get("ram") or {}
        tap.diag("%s: migration %d: %s for %.1f s, %.0f MiB sent, %.0f MiB left, %.0f Mbit/s, "
                 "pass %d" % (self.guest.name, self.number, info.get("status"),
                              now - self._t0, _mib(ram.get("transferred")),
                              _mib(ram.get("remaining")), ram.get("mbps", 0),
                              ram.get("dirty-sync-count", 0)))
        return now

    def _running(self, what):
        if self.state != "running":
            raise GuestError("%s: %s: migration %s is %s" % (self.guest.name, what, self.number,
                                                             self.state))

    def wait_until(self, predicate, timeout=60):
        """Poll the source's query-migrate until predicate(info) is true
        (e.g. some MiB sent) or the migration has ended (see wait() and
        cancel() for what follows); returns info. Not within timeout: the
        migration is cancelled and MigrationError raised."""
        self._running("wait_until")
        deadline = time.monotonic() + timeout * timeout_scale()
        last = time.monotonic()
        while True:
            info = self._source_info()
            last = self._report(info, last)
            if predicate(info) or info.get("status") in FINAL:
                return info
            if time.monotonic() > deadline:
                stats = self.cancel()
                if stats.status == "completed":
                    return stats.raw
                raise MigrationError("%s: migration %d: condition not met within %d s, cancelled "
                                     "(%s); the guest keeps running on its source QEMU"
                                     % (self.guest.name, self.number, timeout, stats),
                                     stats=stats, qemu_log=self.qemu_log)
            time.sleep(self.POLL)

    def wait(self, timeout=600):
        """Wait for the end. Completed: the guest switches to the
        destination QEMU (console, QMP, process, logs; the source QEMU is
        stopped) and the Stats are returned. Failed, or not done within
        timeout (scaled; the migration is then cancelled): MigrationError,
        the guest keeps running on its source QEMU. Meanwhile commands other
        threads start wait until the end (the source may be stopped);
        commands running in the guest run on."""
        self._running("wait")
        with self.guest.console.hold_input():
            return self._wait(timeout)

    def _wait(self, timeout):
        g = self.guest
        deadline = time.monotonic() + timeout * timeout_scale()
        last = time.monotonic()
        while True:
            info = self._source_info()
            last = self._report(info, last)
            status = info.get("status")
            if status == "completed":
                return self._switch(info)
            if status in ("failed", "cancelled"):
                stats = self._stats(info)
                dest = self._dest_said()
                self._give_up(status)
                raise MigrationError("%s: migration %d %s: %s; %s (the guest keeps running on its "
                                     "source QEMU; logs: %s, %s)" % (
                                         g.name, self.number, status,
                                         info.get("error-desc", "(no error text)"), dest,
                                         g.qemu_log, self.qemu_log),
                                     stats=stats, qemu_log=self.qemu_log)
            if time.monotonic() > deadline:
                stats = self._cancel(60)
                if stats.status == "completed":
                    return stats
                raise MigrationError("%s: migration %d not done within %d s, cancelled (%s); the "
                                     "guest keeps running on its source QEMU" % (
                                         g.name, self.number, timeout, stats),
                                     stats=stats, qemu_log=self.qemu_log)
            time.sleep(self.POLL)

    def cancel(self, timeout=60):
        """migrate_cancel; waits until the source says cancelled (or
        failed), stops the destination QEMU and returns the Stats: the
        guest keeps running on its source QEMU. If the migration completed first,
        the guest switches as with wait() and .status is "completed"."""
        self._running("cancel")
        with self.guest.console.hold_input():
            return self._cancel(timeout)

    def _cancel(self, timeout):
        g = self.guest
        g.console.note("migration %d: migrate_cancel" % self.number)
        try:
            g.try_qmp("migrate_cancel")
        except (QmpError, OSError):
            pass  # judged by the status below
        deadline = time.monotonic() + timeout * timeout_scale()
        while True:
            info = self._source_info()
            status = info.get("status")
            if status == "completed":
                return self._switch(info)
            if status in ("cancelled", "failed"):
                break
            if time.monotonic() > deadline:
                self._give_up("cancel timed out")
                raise MigrationError("%s: migration %d: still %s %d s after migrate_cancel"
                                     % (g.name, self.number, status, timeout),
                                     stats=self._stats(info), qemu_log=self.qemu_log)
            time.sleep(self.POLL)
        stats = self._stats(info)
        self._give_up(status)
        return stats

    def kill_destination(self):
        """SIGKILL the destination QEMU (to test a failing migration)."""
        if self.proc is not None and self.proc.poll() is None:
            self.guest.console.note("migration %d: killing the destination QEMU pid %d"
                                    % (self.number, self.proc.pid))
            self.proc.kill()
            self.proc.wait()

    # -- ends ----------------------------------------------------------------

    def _dest_said(self):
        if self.proc is None:
            return "no destination QEMU"
        if self.proc.poll() is None:
            return "the destination QEMU was still running"
        return "the destination QEMU exited with status %s: %s" % (
            self.proc.returncode, _last_line(self.qemu_log))

    def _switch(self, info):
        """The source completed: wait until the destination runs the
        guest, then point the guest at it and stop the source QEMU."""
        g = self.guest
        t_done = time.monotonic()
        deadline = t_done + 60 * timeout_scale()
        while True:
            err = None
            try:
                st = self.qmp.command("query-status")
                if st.get("status") == "running":
                    break
            except (QmpError, OSError) as e:
                err = e
            if not self.dest_alive() or err is not None or time.monotonic() > deadline:
                what = self._dest_said() if not self.dest_alive() else (
                    "QMP: %s" % err if err else "not running after 60 s (%s)" % st.get("status"))
                self._give_up("destination failed")
                raise MigrationError("%s: migration %d: the source completed, but the destination "
                                     "did not take over: %s (the guest keeps running on its "
                                     "source QEMU; logs: %s, %s)" % (g.name, self.number, what,
                                                                     g.qemu_log, self.qemu_log),
                                     stats=self._stats(info), qemu_log=self.qemu_log)
            time.sleep(0.05)
        # the peers' datagrams go to the destination from now on
        for tmp, final in self.renames:
            try:
                os.rename(tmp, final)
            except OSError as e:
                g.console.note("migration %d: cannot rename %s to %s: %s"
                               % (self.number, tmp, final, e))
        g.console.begin_switch()
        old_proc, old_dir, old_qmp, old_log = g.proc, g.dir, g._qmp, g.qemu_log
        g.proc, g._qmp, g.dir = self.proc, self.qmp, self.dir
        g.console_sock, g.qmp_sock, g.qemu_log = self.console_sock, self.qmp_sock, self.qemu_log
        g.extra_args, g.netdev, g.netns = self.extra_args, self.netdev, self.netns
        g._migration = None
        if old_qmp is not None:
            old_qmp.close()
        if self.keep_source:
            g.retired.append((old_proc, old_dir))
            status = "kept running"
        else:
            status = stop_process(old_proc)
            paths.remove_private_dir(old_dir)
        g.console.finish_switch(
            "migration %d completed: the source QEMU pid %d (log %s) stopped (status %s); "
            "console of the destination QEMU pid %d (log %s) from here"
            % (self.number, old_proc.pid, old_log, status, self.proc.pid, self.qemu_log))
        self.state = "completed"
        stats = self._stats(info, time.monotonic() - t_done)
        g.console.note("migration %d: %s" % (self.number, stats))
        return stats

    def _give_up(self, why):
        """Stop the destination; the guest stays on the source, running."""
        g = self.guest
        self._abort_destination()
        if self._saved_params:
            try:
                g.try_qmp("migrate-set-parameters", **self._saved_params)
            except (QmpError, OSError):
                pass
        if self._saved_caps:
            try:
                g.try_qmp("migrate-set-capabilities", capabilities=self._saved_caps)
            except (QmpError, OSError):
                pass
        try:
            st = g.try_qmp("query-status")
            if st.get("status") != "running":
                # e.g. postmigrate after a destination that failed to load
                g.try_qmp("cont")
                g.console.note("migration %d: source QEMU was %s, cont" % (self.number,
                                                                            st.get("status")))
        except (QmpError, OSError) as err:
            g.console.note("migration %d: cannot check the source QEMU: %s" % (self.number, err))
        self.state = why
        g.console.note("migration %d: %s; the guest stays on the source QEMU pid %d"
                       % (self.number, why, g.proc.pid))

    def _abort_destination(self):
        g = self.guest
        if self.qmp is not None:
            self.qmp.close()
            self.qmp = None
        stop_process(self.proc, grace=2)
        if g.console is not None:
            g.console.abandon_next()
        for tmp, _ in self.renames:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        if self.dir is not None:
            paths.remove_private_dir(self.dir)
            self.dir = None
        if g._migration is self:
            g._migration = None

    def abort(self, why):
        """Stop the destination QEMU without talking to the source (the
        guest is stopping, or the source died)."""
        if self.state in ("completed",):
            return
        self._abort_destination()
        self.state = why


def wait_all(migrations, timeout=600):
    """Wait for migrations that run at the same time, each switching its
    guest as soon as it completes (one thread each: a guest must not wait
    for another's switch). Returns, in order, each one's Stats or the
    MigrationError it raised."""
    results = [None] * len(migrations)

    def one(i, m):
        try:
            results[i] = m.wait(timeout)
        except MigrationError as err:
            results[i] = err
        except Exception as err:  # noqa: B902 - reported as a failure
            results[i] = MigrationError("%s: migration %s: %s: %s"
                                        % (m.guest.name, m.number, type(err).__name__, err))

    threads = [threading.Thread(target=one, args=(i, m), daemon=True)
               for i, m in enumerate(migrations)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results
