"""pvrdma-overlayd for VM tests: started from a config file, its output kept
with the test logs, stopped with SIGTERM, checked for sanitizer reports.

    be = Backend(config_text, logdir, workdir, sockets=[sock])   # listening
    ...  guests with devices.pvrdma_overlay(sock)
    status = be.stop()
    be.tap_checks(status)      # "exits 0", "sanitizers quiet"

With netns=NAME the daemon runs inside that network namespace (a "host" of
hosts.py; ip netns exec execs it, so its pid is the daemon's). Its unix
sockets are paths, so QEMU and pvo-ctl reach them from the root namespace.

    be.ctl("map", "add", "100", "10.0.0.9", "10.250.0.2", "52:54:00:00:00:09")
    recs = be.show()           # {"map": [{...}], "vm": [{"name": "a", ...}], ...}

The binary is $PVO_BACKEND, else the ASan/UBSan build
build/san/backend/pvrdma-overlayd; pvo-ctl is $PVO_CTL, else the pvo-ctl next
to the daemon.
"""

import os
import re
import signal
import subprocess
import threading
import time

from . import paths, proc, tap

BINARY = os.environ.get("PVO_BACKEND",
                        os.path.join(paths.BUILD, "san", "backend", "pvrdma-overlayd"))
CTL = os.environ.get("PVO_CTL", os.path.join(os.path.dirname(BINARY), "pvo-ctl"))
DEFAULT_SOCKET_DIR = "/run/pvrdma-overlay"

# Lines ASan, LSan and UBSan print when they find something.
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "LeakSanitizer",
                   "runtime error", "SUMMARY: UndefinedBehaviorSanitizer")


def missing():
    """Why the back-end cannot run, or None."""
    if not os.access(BINARY, os.X_OK):
        return "%s (build it: make backend)" % BINARY
    return None


def missing_ctl():
    """Why pvo-ctl cannot run, or None."""
    if not os.access(CTL, os.X_OK):
        return "%s (build it: make backend)" % CTL
    return None


class CtlError(Exception):
    """pvo-ctl failed, or the daemon answered "error: ..."."""


def parse_show(text):
    """`pvo-ctl show` output -> {record kind: [ {key: value}, ... ]}, in
    order. Values of decimal digits become ints; everything else (names,
    0x QPNs, addresses, states) stays a string. The final "ok" is dropped;
    an "error: ..." line raises CtlError."""
    records = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line == "ok":
            continue
        if line.startswith("error"):
            raise CtlError(line)
        kind, *fields = line.split()
        rec = {}
        for field in fields:
            key, _, value = field.partition("=")
            rec[key] = int(value) if value.isdigit() else value
        records.setdefault(kind, []).append(rec)
    return records


def _config_value(text, section, key):
    """The value of key in [section] of an INI text, or None."""
    current = None
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        m = re.fullmatch(r"\[\s*(.*?)\s*\]", line)
        if m:
            current = m.group(1)
        elif current == section and "=" in line:
            k, _, v = line.partition("=")
            if k.strip() == key:
                return v.strip()
    return None


def sanitizer_findings(log):
    """Lines of a sanitizer report in the back-end's output."""
    return [line for line in log.splitlines() if any(m in line for m in SANITIZER_MARKS)]


class Backend:
    """One pvrdma-overlayd process configured by config_text (written to
    workdir/<name>.conf). Waits until every path in sockets exists. netns:
    run it inside that network namespace (the config is then also copied to
    logdir). ctl() and show() use the management socket the config names
    ([daemon] management-socket, else socket-dir/pvrdma-overlayd.mgmt)."""

    def __init__(self, config_text, logdir, workdir, sockets=(), name="backend",
                 timeout=10, netns=None):
        self.name = name
        self.netns = netns
        self.logdir = logdir
        self.conf = os.path.join(workdir, "%s.conf" % name)
        with open(self.conf, "w") as f:
            f.write(config_text)
        if netns is not None:
            # a copy with the logs (the workdir goes away)
            with open(os.path.join(logdir, "%s.conf" % name), "w") as f:
                f.write(config_text)
        # the management socket, as the daemon derives it from the config
        self.mgmt = _config_value(config_text, "daemon", "management-socket") or os.path.join(
            _config_value(config_text, "daemon", "socket-dir") or DEFAULT_SOCKET_DIR,
            "pvrdma-overlayd.mgmt")
        self.log_path = os.path.join(logdir, "%s.log" % name)
        self.log = open(self.log_path, "w")
        cmd = [BINARY, "--config", self.conf]
        extra = {}
        if netns is not None:
            cmd = ["ip", "netns", "exec", netns] + cmd
            # SIGTERM if the test dies: no daemon left in a namespace
            extra["preexec_fn"] = proc.term_with_parent
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, **extra)
        deadline = time.monotonic() + timeout
        for sock in sockets:
            while not os.path.exists(sock):
                if self.proc.poll() is not None:
                    self.log.close()
                    raise RuntimeError("back-end exited with status %s before listening on %s; "
                                       "see %s; it said:\n%s" % (self.proc.returncode, sock,
                                                                  self.log_path,
                                                                  self.text()[-1500:]))
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("back-end did not listen on %s within %ds; see %s"
                                       % (sock, timeout, self.log_path))
                time.sleep(0.05)

    def text(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        """SIGTERM, then SIGKILL after 20 s; returns the exit status
        (negative: killed by that signal). Safe to call twice."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not self.log.closed:
            self.log.close()
        return self.proc.returncode

    def tap_checks(self, status):
        """Two TAP lines: exit status 0 and no sanitizer report."""
        log = self.text()
        what = "back-end" if self.name == "backend" else "back-end %s" % self.name
        tap.ok(status == 0, "%s exits 0 on SIGTERM (status %s)" % (what, status),
               diag="log: %s\n%s" % (self.log_path, log[-3000:]))
        found = sanitizer_findings(log)
        tap.ok(not found, "%s sanitizers quiet" % what,
               diag="log: %s\n%s" % (self.log_path, "\n".join(found[:20])))

    # -- management ---------------------------------------------------------

    def ctl(self, *args, timeout=30, check=True, wait=5):
        """Runs `pvo-ctl --socket <management socket> ARGS...` and returns
        its output (stdout and stderr). With check (default), a non-zero
        exit or an answer without a final "ok" raises CtlError. Waits up to
        wait seconds for the socket to appear (the daemon may still be
        starting). Every call and answer is appended to <name>.ctl.log."""
        if not os.access(CTL, os.X_OK):
            raise CtlError("pvo-ctl missing: %s" % CTL)
        deadline = time.monotonic() + wait
        while not os.path.exists(self.mgmt) and time.monotonic() < deadline and self.alive():
            time.sleep(0.05)
        cmd = [CTL, "--socket", self.mgmt] + [str(a) for a in args]
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, timeout=timeout)
            rc, out = p.returncode, p.stdout.decode(errors="replace")
        except subprocess.TimeoutExpired:
            rc, out = None, "(no answer within %d s)" % timeout
        with open(os.path.join(self.logdir, "%s.ctl.log" % self.name), "a") as f:
            f.write("%.3f $ %s\n%s%s(exit status %s)\n" % (
                time.time(), " ".join(cmd), out, "" if out.endswith("\n") else "\n", rc))
        if check:
            lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
            if rc != 0 or not lines or lines[-1] != "ok":
                raise CtlError("%s: exit status %s, output:\n%s" % (" ".join(cmd), rc,
                                                                    out[-3000:]))
        return out

    def show(self):
        """`pvo-ctl show` parsed by parse_show()."""
        return parse_show(self.ctl("show"))


class ShowMonitor:
    """Polls `show` of some back-ends every interval seconds in a thread,
    so that per-QP counters of QPs that no longer exist at the end are seen
    too. Each sample of a back-end replaces .last[name]; .qps collects
    every QP record seen, keyed (back-end name, vm, qpn, n-th life of that
    QPN), with its latest values. Errors of pvo-ctl are kept in .errors.

        mon = ShowMonitor(backends).start()
        ...
        mon.stop()
        bad = [q for q in mon.qp_records() if q.get("drop_bad_icrc")]
    """

    def __init__(self, backends, interval=1.0):
        self.backends = list(backends)
        self.interval = interval
        self.last = {}
        self.qps = {}
        self.samples = 0
        self.errors = []
        self._stop = threading.Event()
        self._thread = None
        self._lives = {}

    def start(self):
        self._thread = threading.Thread(target=self._run, daemon=True, name="show-monitor")
        self._thread.start()
        return self

    def sample(self):
        """One sample of every back-end, now (also called by the thread)."""
        for be in self.backends:
            if not be.alive():
                continue
            try:
                recs = be.show()
            except CtlError as err:
                self.errors.append(str(err))
                continue
            self.last[be.name] = recs
            self.samples += 1
            for q in recs.get("qp", []):
                vm, qpn = q.get("vm"), q.get("qpn")
                life = self._lives.get((be.name, vm, qpn), 0)
                key = (be.name, vm, qpn, life)
                old = self.qps.get(key)
                # counters that went down: the QPN was destroyed and reused
                if old is not None and any(isinstance(v, int) and k in q and
                                           isinstance(q[k], int) and q[k] < v
                                           for k, v in old.items()):
                    life += 1
                    self._lives[(be.name, vm, qpn)] = life
                    key = (be.name, vm, qpn, life)
                self.qps[key] = dict(q, backend=be.name)

    def _run(self):
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def stop(self):
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=60)
            self._thread = None
        self.sample()
        return self

    def qp_records(self):
        return list(self.qps.values())
