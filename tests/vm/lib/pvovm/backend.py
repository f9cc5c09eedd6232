"""pvrdma-overlayd for VM tests: started from a config file, its output kept
with the test logs, stopped with SIGTERM, checked for sanitizer reports.

    be = Backend(config_text, logdir, workdir, sockets=[sock])   # listening
    ...  guests with devices.pvrdma_overlay(sock)
    status = be.stop()
    be.tap_checks(status)      # "exits 0", "sanitizers quiet"

The binary is $PVO_BACKEND, else the ASan/UBSan build
build/backend-san/pvrdma-overlayd.
"""

import os
import signal
import subprocess
import time

from . import paths, tap

BINARY = os.environ.get("PVO_BACKEND",
                        os.path.join(paths.BUILD, "backend-san", "pvrdma-overlayd"))

# Lines ASan, LSan and UBSan print when they find something.
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "LeakSanitizer",
                   "runtime error", "SUMMARY: UndefinedBehaviorSanitizer")


def missing():
    """Why the back-end cannot run, or None."""
    if not os.access(BINARY, os.X_OK):
        return "%s (build it: make backend)" % BINARY
    return None


def sanitizer_findings(log):
    """Lines of a sanitizer report in the back-end's output."""
    return [line for line in log.splitlines() if any(m in line for m in SANITIZER_MARKS)]


class Backend:
    """One pvrdma-overlayd process configured by config_text (written to
    workdir/pvo.conf). Waits until every path in sockets exists."""

    def __init__(self, config_text, logdir, workdir, sockets=(), name="backend",
                 timeout=10):
        self.conf = os.path.join(workdir, "%s.conf" % name)
        with open(self.conf, "w") as f:
            f.write(config_text)
        self.log_path = os.path.join(logdir, "%s.log" % name)
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen([BINARY, "--config", self.conf], stdout=self.log,
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        for sock in sockets:
            while not os.path.exists(sock):
                if self.proc.poll() is not None:
                    raise RuntimeError("back-end exited with status %s before listening on %s; "
                                       "see %s" % (self.proc.returncode, sock, self.log_path))
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
        tap.ok(status == 0, "back-end exits 0 on SIGTERM (status %s)" % status,
               diag="log: %s\n%s" % (self.log_path, log[-3000:]))
        found = sanitizer_findings(log)
        tap.ok(not found, "back-end sanitizers quiet",
               diag="log: %s\n%s" % (self.log_path, "\n".join(found[:20])))
