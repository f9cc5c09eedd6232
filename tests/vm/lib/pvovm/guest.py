"""A test guest: QEMU (TCG) booting build/guest/ over the host's root.

    with Guest("g1", ip="10.0.0.1/24") as g:   # starts QEMU
        g.wait_boot()
        rc, out = g.run("modprobe rdma_rxe")
        out = g.check("ip -br addr")           # raises unless rc == 0

Every step has a timeout; when one expires, or anything else fails, QEMU is
killed and a GuestError names the console log. QEMU also dies with the test
process (stop() from the context manager and at exit, and a parent-death
signal if the test is killed).

Environment: PVO_KVM=1 uses KVM instead of TCG; PVO_QEMU overrides the QEMU
binary; PVO_TIMEOUT_SCALE multiplies every timeout (slow CI machines).
"""

import atexit
import os
import re
import shlex
import signal
import subprocess
import sys
import time

from . import netdev as _netdev
from . import paths, proc
from .console import Console, ConsoleError, READY
from .qmp import Qmp, QmpError

# Console text that means the guest will never come up.
BOOT_FAILURE = re.compile(r"Kernel panic - not syncing[^\r\n]*\r?\n|pvo-init: FATAL[^\r\n]*\r?\n")

# Started guests, held until stop() so that atexit reaches every one of them.
_live = set()
_count = 0


class GuestError(Exception):
    pass


def timeout_scale():
    try:
        return float(os.environ.get("PVO_TIMEOUT_SCALE", "1"))
    except ValueError:
        return 1.0


def _stop_all():
    for g in list(_live):
        g.stop()


atexit.register(_stop_all)
# A test killed with SIGTERM (e.g. by a CI timeout) still stops its guests.
if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


class Guest:
    """One QEMU guest. Arguments:

    name       guest name: log files <logdir>/<name>.console.log and
               <name>.qemu.log; default hostname
    logdir     where the logs go (default build/test-logs/<test script>/)
    ip         address(es) for the NIC, "10.0.0.1/24" or a list
    mac        the NIC's MAC (default: unique per guest)
    netdev     -netdev back-end without id= (default "user"; see netdev.py)
    extra_args more QEMU arguments (e.g. a chardev and -device pvrdma-overlay)
    append     more kernel command line
    memory     MiB of guest RAM; smp: vCPUs
    netns      run QEMU inside this network namespace (ip netns exec), e.g.
               so that a -netdev tap opens a tap device of a hosts.py host
               (default: QEMU stays in the test's namespace)
    """

    def __init__(self, name, logdir=None, ip=None, mac=None, hostname=None,
                 netdev=_netdev.USER, extra_args=(), append="", memory=1024,
                 smp=1, netns=None):
        global _count
        _count += 1
        self.name = name
        self.logdir = logdir or paths.test_log_dir()
        os.makedirs(self.logdir, exist_ok=True)
        self.console_log = os.path.join(self.logdir, name + ".console.log")
        self.qemu_log = os.path.join(self.logdir, name + ".qemu.log")
        self.ips = [ip] if isinstance(ip, str) else list(ip or [])
        self.mac = (mac or "52:54:00:%02x:%02x:%02x" % (
            (os.getpid() >> 8) & 0xff, os.getpid() & 0xff, _count & 0xff)).lower()
        self.hostname = hostname or name
        self.netdev = netdev
        self.extra_args = list(extra_args)
        self.append = append
        self.memory = memory
        self.smp = smp
        self.netns = netns
        self.kvm = os.environ.get("PVO_KVM") == "1"
        self.boot_seconds = None
        self.dir = None
        self.proc = None
        self.console = None
        self._qmp = None
        self._started = None

    # -- life cycle ---------------------------------------------------------

    def kernel_cmdline(self):
        args = ["console=ttyS0", "quiet", "printk.time=1", "panic=-1",
                "pvo.hostname=" + self.hostname,
                "pvo.mac=" + self.mac]
        if self.ips:
            args.append("pvo.ip=" + ",".join(self.ips))
        if self.append:
            args.append(self.append)
        return " ".join(args)

    def qemu_command(self):
        accel = ["-accel", "kvm", "-cpu", "host"] if self.kvm else ["-accel", "tcg"]
        # Guest RAM is a shared memfd so vhost-user back-ends can map it.
        cmd = [paths.QEMU, "-name", self.name,
               "-object", "memory-backend-memfd,id=ram,size=%dM,share=on" % self.memory,
               "-machine", "q35,memory-backend=ram", *accel,
               "-m", str(self.memory),
               # maxcpus >= 2 even with one vCPU: with max_cpus == 1 TCG
               # translates without CF_PARALLEL, i.e. drops guest memory
               # barriers and emulates atomics (xchg, cmpxchg) as plain
               # load + store. The device's rings and doorbell records are
               # shared with the back-end, another process, so they need
               # real atomics and barriers (a lost db_pending update
               # stalled a QP forever in CI).
               "-smp", "%d,maxcpus=%d" % (self.smp, max(2, self.smp)),
               "-nographic", "-nodefaults", "-no-user-config", "-no-reboot"]
        for d in paths.FIRMWARE_DIRS:
            cmd += ["-L", d]
        cmd += ["-kernel", paths.KERNEL, "-initrd", paths.INITRAMFS,
                "-append", self.kernel_cmdline(),
                "-fsdev", "local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap",
                "-device", "virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot",
                "-fsdev", "local,id=pvolayer,path=%s,security_model=none,readonly=on" % paths.LAYER,
                "-device", "virtio-9p-pci,fsdev=pvolayer,mount_tag=pvolayer",
                "-netdev", "%s,id=net0" % self.netdev,
                "-device", "virtio-net-pci,netdev=net0,mac=%s,romfile=" % self.mac,
                "-chardev", "socket,id=console,path=%s" % self.console_sock,
                "-serial", "chardev:console",
                "-monitor", "none",
                "-qmp", "unix:%s,server=on,wait=off" % self.qmp_sock]
        return cmd + self.extra_args

    def start(self, timeout=30):
        """Start QEMU and attach the console (does not wait for the boot)."""
        missing = paths.missing_guest_files()
        if missing:
            raise GuestError("%s: cannot start, missing: %s" % (self.name, "; ".join(missing)))
        self.dir = paths.private_dir(self.name)
        self.console_sock = os.path.join(self.dir, "console.sock")
        self.qmp_sock = os.path.join(self.dir, "qmp.sock")
        self.console = Console(self.console_sock, self.console_log)
        cmd = self.qemu_command()
        if self.netns is not None:
            # ip netns exec execs QEMU: the pid stays QEMU's, and the
            # parent-death signal set below survives the exec
            cmd = ["ip", "netns", "exec", self.netns] + cmd
        with open(self.qemu_log, "w") as log:
            log.write("# %s\n" % " ".join(shlex.quote(a) for a in cmd))
            log.flush()
            self._started = time.monotonic()
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, preexec_fn=proc.kill_with_parent)
        _live.add(self)
        try:
            self.console.accept(timeout * timeout_scale(), self.alive)
        except ConsoleError as err:
            self._fail("start: %s" % err)
        self.console.note("QEMU pid %d started: %s" % (self.proc.pid, " ".join(cmd)))
        return self

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def wait_boot(self, timeout=180):
        """Wait until the guest agent is ready; sets self.boot_seconds."""
        try:
            m, _ = self.console.wait(READY, timeout * timeout_scale(), fail=BOOT_FAILURE,
                                     alive=self.alive, what="the guest agent")
        except ConsoleError as err:
            self._fail("boot: %s" % err)
        self.boot_seconds = time.monotonic() - self._started
        self.console.note("booted in %.1fs (guest kernel uptime %ss)" % (self.boot_seconds, m.group(3)))
        if int(m.group(2)):
            self._fail("boot: the guest agent reported %s set-up error(s) "
                       "(lines 'pvo-agent: ERROR')" % m.group(2))
        return self.boot_seconds

    def stop(self):
        """Kill QEMU (if running) and release sockets. Safe to call twice."""
        if self._qmp is not None:
            self._qmp.close()
            self._qmp = None
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.console is not None:
            if self.proc is not None:
                self.console.note("QEMU exited with status %s" % self.proc.returncode)
            self.console.close()
            self.console = None
        if self.dir is not None:
            paths.remove_private_dir(self.dir)
            self.dir = None
        _live.discard(self)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    def _fail(self, what):
        exited = self.proc is not None and self.proc.poll() is not None
        self.stop()
        where = "console log: %s" % self.console_log
        if exited:
            what += "; QEMU exited with status %s: %s" % (self.proc.returncode, self._qemu_said())
            where += ", QEMU log: %s" % self.qemu_log
        raise GuestError("%s: %s (%s)" % (self.name, what, where))

    def _qemu_said(self):
        """The last line QEMU wrote (its error message, if it failed)."""
        try:
            with open(self.qemu_log, errors="replace") as log:
                lines = [ln.strip() for ln in log if ln.strip() and not ln.startswith("# ")]
        except OSError:
            return "(no QEMU log)"
        return lines[-1] if lines else "(nothing)"

    # -- commands -----------------------------------------------------------

    def run(self, cmd, timeout=60):
        """Run cmd (bash) in the guest; returns (exit status, output).

        Output is stdout + stderr. stdin is /dev/null. Each call runs in a
        fresh shell in /, so cd and variables do not carry over. Redirect
        the output of background jobs (cmd >/tmp/x.log 2>&1 &), or it lands
        in the next command's output. On timeout the guest is killed."""
        if self.console is None:
            raise GuestError("%s: run() before start()" % self.name)
        self.console.note("run (timeout %ds): %s" % (timeout, cmd))
        try:
            status, out = self.console.run(cmd, timeout * timeout_scale(), alive=self.alive)
        except ConsoleError as err:
            self._fail("run %r: %s" % (cmd, err))
        self.console.note("exit status %d" % status)
        return status, out

    def check(self, cmd, timeout=60):
        """run(), but a non-zero exit status is a GuestError; returns output."""
        status, out = self.run(cmd, timeout)
        if status != 0:
            raise GuestError("%s: %r exited with status %d (console log: %s); output:\n%s"
                             % (self.name, cmd, status, self.console_log, out))
        return out

    def qmp(self, command, **arguments):
        """Execute a QMP command; returns its result."""
        try:
            if self._qmp is None:
                self._qmp = Qmp(self.qmp_sock, timeout=30 * timeout_scale())
            return self._qmp.command(command, **arguments)
        except (QmpError, OSError) as err:
            self._fail("QMP %s: %s" % (command, err))
