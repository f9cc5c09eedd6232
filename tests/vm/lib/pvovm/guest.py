"""A test guest: QEMU (TCG) booting build/guest/ over the host's root, or
from a root in RAM (ram_root=True: no 9p, so the guest can migrate).

    with Guest("g1", ip="10.0.0.1/24") as g:   # starts QEMU
        g.wait_boot()
        rc, out = g.run("modprobe rdma_rxe")
        out = g.check("ip -br addr")           # raises unless rc == 0

    with Guest("g1", ram_root=True) as g:
        g.wait_boot()
        stats = g.migrate()                    # to a new QEMU (migration.py)

Every step has a timeout; when one expires, or anything else fails, QEMU is
killed and a GuestError names the console log. QEMU also dies with the test
process (stop() from the context manager and at exit, and a parent-death
signal if the test is killed).

Environment: PVO_KVM=1 uses KVM instead of TCG; PVO_QEMU overrides the QEMU
binary; PVO_TIMEOUT_SCALE multiplies every timeout (slow CI machines).
"""

import atexit
import base64
import os
import re
import shlex
import signal
import subprocess
import sys
import time

from . import netdev as _netdev
from . import paths, proc, ramroot
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
    ram_root   boot the ram root (build/guest/ramroot.cpio.zst, pvo.root=ram):
               the whole root in guest RAM, no 9p device, so the guest can
               be migrated (migrate(), migration.py); the host's files are
               not visible, only what guest-image/ramroot.list names
    ram_files  with ram_root: host files or directories put into the guest
               at the same paths at boot (default: ramroot.default_files(),
               the executables of build/plain/tests/vm/progs)
    image      boot the Debian 13 image (build/guest-image, make
               guest-image): its own 6.12 kernel and systemd, as /dev/vda
               a qcow2 of its own over the image (the image is never
               written; a migration's destination opens the same file), the
               driver and provider from its packages; the host's files are
               not visible (put_file copies one in)
    """

    def __init__(self, name, logdir=None, ip=None, mac=None, hostname=None,
                 netdev=_netdev.USER, extra_args=(), append="", memory=1024,
                 smp=1, netns=None, ram_root=False, ram_files=None, image=False):
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
        # source QEMUs a migration kept running ((process, dir), keep_source)
        self.retired = []
        self.ram_root = ram_root
        self.ram_files = ram_files
        self.image = image
        self.kvm = os.environ.get("PVO_KVM") == "1"
        self.boot_seconds = None
        self.dir = None
        self.proc = None
        self.console = None
        # every QEMU log of this guest: the first, then one per migration
        # attempt (<name>.qemu-mig<N>.log); qemu_log is the current QEMU's
        self.qemu_logs = [self.qemu_log]
        self.migrations = 0
        self.initrd = None
        self.disk = None  # image: the guest's qcow2 over the image
        self._image_dir = None
        self._migration = None
        self._qmp = None
        self._started = None

    # -- life cycle ---------------------------------------------------------

    def kernel_cmdline(self):
        args = ["console=ttyS0", "quiet", "printk.time=1", "panic=-1",
                "pvo.hostname=" + self.hostname,
                "pvo.mac=" + self.mac]
        if self.ram_root:
            args.append("pvo.root=ram")
        if self.image:
            # pvo.agent: the image runs the agent on ttyS0, not its login
            args.append("root=/dev/vda rw pvo.agent")
        if self.ips:
            args.append("pvo.ip=" + ",".join(self.ips))
        if self.append:
            args.append(self.append)
        return " ".join(args)

    def qemu_command(self):
        """QEMU's command line for this guest (the current one's, after a
        migration)."""
        return self.qemu_argv(self.console_sock, self.qmp_sock, self.netdev, self.extra_args)

    def qemu_argv(self, console_sock, qmp_sock, netdev, extra_args):
        """The command line with these sockets, netdev and extra_args (a
        migration's destination differs from its source in these only)."""
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
        if self.image:
            cmd += ["-kernel", paths.IMAGE_KERNEL, "-initrd", paths.IMAGE_INITRD,
                    "-append", self.kernel_cmdline(),
                    "-drive", "file=%s,if=virtio,format=qcow2,cache=unsafe" % self.disk]
        else:
            cmd += ["-kernel", paths.KERNEL,
                    "-initrd", self.initrd if self.ram_root else paths.INITRAMFS,
                    "-append", self.kernel_cmdline()]
        if not self.ram_root and not self.image:
            cmd += ["-fsdev", "local,id=hostroot,path=/,security_model=none,readonly=on,"
                    "multidevs=remap",
                    "-device", "virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot",
                    "-fsdev", "local,id=pvolayer,path=%s,security_model=none,readonly=on"
                    % paths.LAYER,
                    "-device", "virtio-9p-pci,fsdev=pvolayer,mount_tag=pvolayer"]
        cmd += ["-netdev", "%s,id=net0" % netdev,
                "-device", "virtio-net-pci,netdev=net0,mac=%s,romfile=" % self.mac,
                "-chardev", "socket,id=console,path=%s" % console_sock,
                "-serial", "chardev:console",
                "-monitor", "none",
                "-qmp", "unix:%s,server=on,wait=off" % qmp_sock]
        return cmd + list(extra_args)

    def launch(self, cmd, log_path, netns):
        """Start QEMU (cmd, inside netns if not None) with its output in
        log_path; dies with the test. Returns the Popen."""
        if netns is not None:
            # ip netns exec execs QEMU: the pid stays QEMU's, and the
            # parent-death signal set below survives the exec
            cmd = ["ip", "netns", "exec", netns] + cmd
        with open(log_path, "w") as log:
            log.write("# %s\n" % " ".join(shlex.quote(a) for a in cmd))
            log.flush()
            return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, preexec_fn=proc.kill_with_parent)

    def start(self, timeout=30):
        """Start QEMU and attach the console (does not wait for the boot)."""
        missing = paths.missing_guest_files(self.ram_root, self.image)
        if missing:
            raise GuestError("%s: cannot start, missing: %s" % (self.name, "; ".join(missing)))
        self.dir = paths.private_dir(self.name)
        self.console_sock = os.path.join(self.dir, "console.sock")
        self.qmp_sock = os.path.join(self.dir, "qmp.sock")
        ram_note = None
        if self.ram_root:
            # its own directory: it outlives self.dir when the guest migrates
            self._image_dir = paths.private_dir(self.name + "-initrd")
            try:
                self.initrd, ram_note = ramroot.build_initrd(self._image_dir, self.ram_files)
            except OSError as err:
                paths.remove_private_dir(self._image_dir)
                paths.remove_private_dir(self.dir)
                self._image_dir = self.dir = None
                raise GuestError("%s: cannot make the ram root's initrd: %s" % (self.name, err))
        if self.image:
            # its own directory: it outlives self.dir when the guest migrates
            self._image_dir = paths.private_dir(self.name + "-disk")
            self.disk = os.path.join(self._image_dir, "disk.qcow2")
            made = subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2",
                                   "-b", os.path.realpath(paths.IMAGE_DISK), self.disk],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if made.returncode != 0:
                paths.remove_private_dir(self._image_dir)
                paths.remove_private_dir(self.dir)
                self._image_dir = self.dir = None
                raise GuestError("%s: cannot make its disk over %s: %s"
                                 % (self.name, paths.IMAGE_DISK, made.stdout.strip()))
        self.console = Console(self.console_sock, self.console_log)
        cmd = self.qemu_command()
        self._started = time.monotonic()
        self.proc = self.launch(cmd, self.qemu_log, self.netns)
        _live.add(self)
        try:
            self.console.accept(timeout * timeout_scale(), self.alive)
        except ConsoleError as err:
            self._fail("start: %s" % err)
        if ram_note:
            self.console.note(ram_note)
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

    def stop_retired(self):
        """Stops the source QEMUs of migrations that kept them
        (keep_source=True); their exit statuses."""
        from .migration import stop_process
        out = []
        for p, d in self.retired:
            out.append(stop_process(p))
            paths.remove_private_dir(d)
        self.retired = []
        return out

    def stop(self):
        """Kill QEMU (if running) and release sockets. Safe to call twice."""
        self.stop_retired()
        if self._migration is not None:
            self._migration.abort("the guest is stopping")
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
        if self._image_dir is not None:
            paths.remove_private_dir(self._image_dir)
            self._image_dir = None
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
        """Execute a QMP command; returns its result. An error kills the
        guest (GuestError); try_qmp() leaves it running."""
        try:
            return self.try_qmp(command, **arguments)
        except (QmpError, OSError) as err:
            self._fail("QMP %s: %s" % (command, err))

    def try_qmp(self, command, **arguments):
        """Execute a QMP command; returns its result, raises QmpError (or
        OSError) and leaves the guest alone if QEMU refuses it."""
        if self._qmp is None:
            self._qmp = Qmp(self.qmp_sock, timeout=30 * timeout_scale())
        try:
            return self._qmp.command(command, **arguments)
        except OSError:
            self._qmp.close()
            self._qmp = None
            raise

    def put_file(self, path, data, mode=None, timeout=60):
        """Write data (bytes or str) to path in the guest over the console,
        in pieces below the command limit: for inputs a ram-root guest
        cannot read through the host root. Returns path."""
        if isinstance(data, str):
            data = data.encode()
        piece = 16 * 1024
        for i in range(0, max(len(data), 1), piece):
            text = base64.b64encode(data[i:i + piece]).decode()
            self.check("base64 -d %s %s <<'EOF'\n%s\nEOF" % (">" if i == 0 else ">>",
                                                              shlex.quote(path), text),
                       timeout=timeout)
        if mode is not None:
            self.check("chmod %o %s" % (mode, shlex.quote(path)))
        return path

    # -- live migration (migration.py) ---------------------------------------

    def start_migration(self, **options):
        """Start a live migration to a new QEMU; returns the running
        migration.Migration (wait(), cancel(), info()). Options: see
        migration.Migration."""
        from .migration import Migration
        return Migration(self, **options).start()

    def migrate(self, timeout=600, **options):
        """Live-migrate the guest to a new QEMU and switch to it; returns
        the migration.Stats. Raises migration.MigrationError (the guest
        stays on the source QEMU, running) if it fails."""
        return self.start_migration(**options).wait(timeout)
