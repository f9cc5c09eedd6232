"""libvirt for VM tests: libvirt daemons the test starts itself, and guests
defined, started, shut down and migrated with virsh.

    with Hosts(2, logdir, shared=True) as hs:   # one network namespace
        multicast_ready(hs.name(0))              # for mcast_nic() NICs
        lv = Libvirtd("host-a", logdir, netns=hs.name(0)).start()
        g = LibvirtGuest(lv, "g1", domain_xml, mcast_nic(47901), ip="10.0.0.1/24", mac=MAC)
        g.start(); g.wait_boot(); g.run("...")   # as a Guest (guest.py)
        g.shutdown()                             # virsh shutdown: ACPI power button
        g.start(); g.wait_boot()                 # virsh start
        g.destroy()                              # virsh destroy
        g.migrate(other_lv)                      # virsh migrate --live
        g.stop()                                 # destroy and undefine
        lv.stop()                                # the daemon and its directories

Each Libvirtd is an unprivileged (session) libvirtd running as `nobody`
with runtime, config and cache directories of its own under a private
directory, so nothing of the machine's libvirt is used or changed, and
several daemons can run at once as separate "hosts": each gets its own
host UUID and, in its own UTS namespace, its own hostname (libvirt refuses
to migrate to a daemon that reports the same UUID or hostname). QEMU runs
as `nobody` too: everything it opens (kernel, initrd, the console and
back-end sockets) must be reachable by that user.

A LibvirtGuest boots the ram root (no 9p: migratable) with the kernel,
initrd and command line a Guest(ram_root=True) has; the domain XML comes
from the caller (pvo-ctl libvirt-xml) and gets the boot, console and NIC
elements here. Its serial console connects to a socket the harness
listens on, as with Guest; QMP goes through virsh qemu-monitor-command.
"""

import atexit
import json
import os
import pwd
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
import xml.etree.ElementTree as ET

from . import guest as _guest
from . import paths, proc, ramroot
from .console import Console, ConsoleError
from .guest import Guest, GuestError, timeout_scale
from .migration import MigrationError

USER = "nobody"
QEMU_NS = "http://libvirt.org/schemas/domain/qemu/1.0"
ET.register_namespace("qemu", QEMU_NS)


def _user():
    pw = pwd.getpwnam(USER)
    return pw.pw_uid, pw.pw_gid


def give(path, mode):
    """chown path to the daemon's user and chmod it: QEMU runs as that
    user and must open it."""
    uid, gid = _user()
    os.chown(path, uid, gid)
    os.chmod(path, mode)


def user_can_read(path):
    """Whether the daemon's user can open path: every directory on the way
    searchable, the file readable (a checkout under a private directory,
    e.g. one mktemp made, is not)."""
    uid, gid = _user()
    return subprocess.run(["setpriv", "--reuid", str(uid), "--regid", str(gid),
                           "--clear-groups", "test", "-r", path],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


def emulator():
    """This build's QEMU as the daemon's user reaches it: build/qemu is a
    link into the build cache, which build-qemu.sh keeps searchable by all."""
    qemu = os.path.realpath(paths.QEMU)
    if not user_can_read(qemu):
        raise RuntimeError("%s: not readable by %s, who runs libvirt's QEMU here"
                           % (qemu, USER))
    return qemu


def reachable_copy(path, stage_dir):
    """path if the daemon's user can open it, else a copy of it in
    stage_dir (a directory given to that user)."""
    if user_can_read(path):
        return path
    copy = os.path.join(stage_dir, os.path.basename(path))
    if not os.path.exists(copy):
        shutil.copyfile(path, copy)
        os.chmod(copy, 0o644)
    return copy


def missing():
    """Why libvirt tests cannot run here (programs missing), or None."""
    for prog in ("libvirtd", "virsh", "setpriv", "unshare"):
        if not any(os.access(os.path.join(d, prog), os.X_OK)
                   for d in os.environ.get("PATH", "/usr/bin:/usr/sbin").split(":")
                   + ["/usr/sbin"]):
            return "%s not installed (make deps)" % prog
    return None


def multicast_ready(netns):
    """Multicast on the loopback device of netns, so that QEMU's mcast
    netdevs (<interface type='mcast'>) reach each other inside it and
    nothing leaves the machine."""
    for cmd in (["ip", "-n", netns, "link", "set", "lo", "multicast", "on"],
                ["ip", "-n", netns, "route", "add", "224.0.0.0/4", "dev", "lo"]):
        subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


class LibvirtError(Exception):
    pass


_daemons = set()


def _stop_all():
    for lv in list(_daemons):
        lv.stop()


atexit.register(_stop_all)


def remove_stale():
    """Stops what a killed earlier test left: libvirtd drops the parent-death
    signal when it becomes USER, and libvirt daemonizes QEMU, so they
    outlive a SIGKILLed test. Its directories (pvo-libvirt-*, with the pid
    of the test that made them in owner.pid) name them: every process
    whose command line or environment mentions the directory of a test
    that no longer runs is killed, then the directory is removed."""
    base = os.environ.get("PVO_SOCK_DIR", tempfile.gettempdir())
    stale = []
    for name in os.listdir(base):
        d = os.path.join(base, name)
        if not name.startswith("pvo-libvirt-"):
            continue
        owner = _read_pid(os.path.join(d, "owner.pid"))
        try:
            # (a directory just made has no owner.pid for a moment)
            old = time.time() - os.stat(d).st_mtime > 60
        except OSError:
            continue
        if not _alive_pid(owner) if owner is not None else old:
            stale.append(d.encode())
    if not stale:
        return
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        text = b""
        for what in ("cmdline", "environ"):
            try:
                with open("/proc/%s/%s" % (pid, what), "rb") as f:
                    text += f.read()
            except OSError:
                pass
        if any(d + b"/" in text or text.endswith(d) for d in stale):
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass
    for d in stale:
        paths.remove_private_dir(d.decode())


class Libvirtd:
    """One session-mode libvirtd as USER, with its own directories under
    a private directory; its log is <logdir>/libvirtd-<name>.log and every
    virsh call goes to <logdir>/virsh-<name>.log."""

    def __init__(self, name, logdir, netns=None, host_uuid=None):
        self.name = name
        self.logdir = logdir
        self.netns = netns
        self.host_uuid = host_uuid or str(uuid.uuid4())
        self.dir = None
        self.proc = None
        self.log = os.path.join(logdir, "libvirtd-%s.log" % name)
        self.virsh_log = os.path.join(logdir, "virsh-%s.log" % name)

    def env(self):
        d = self.dir
        return {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C",
                "HOME": os.path.join(d, "home"), "XDG_RUNTIME_DIR": os.path.join(d, "run"),
                "XDG_CONFIG_HOME": os.path.join(d, "config"),
                "XDG_CACHE_HOME": os.path.join(d, "cache")}

    @property
    def socket(self):
        return os.path.join(self.dir, "run", "libvirt", "libvirt-sock")

    @property
    def uri(self):
        """The daemon's URI for another client (virsh migrate's destination)."""
        return "qemu+unix:///session?socket=%s" % self.socket

    def as_user(self, argv):
        return ["setpriv", "--reuid=%s" % USER, "--regid=%d" % _user()[1], "--clear-groups",
                "env", "-i"] + ["%s=%s" % kv for kv in self.env().items()] + list(argv)

    def start(self, timeout=60):
        remove_stale()
        self.dir = paths.private_dir("libvirt-%s" % self.name)
        _daemons.add(self)
        with open(os.path.join(self.dir, "owner.pid"), "w") as f:
            f.write("%d\n" % os.getpid())
        give(self.dir, 0o755)
        for sub in ("home", "run", "config", "config/libvirt", "cache"):
            p = os.path.join(self.dir, sub)
            os.makedirs(p, exist_ok=True)
            give(p, 0o700)
        conf = os.path.join(self.dir, "config", "libvirt", "libvirtd.conf")
        with open(conf, "w") as f:
            f.write("# written by %s (%s)\nhost_uuid = \"%s\"\n"
                    % (paths.test_name(), __name__, self.host_uuid))
        give(conf, 0o600)
        # its own hostname in its own UTS namespace (migration compares them)
        cmd = ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"',
               "pvo-%s" % self.name] + self.as_user(["libvirtd"])
        if self.netns:
            cmd = ["ip", "netns", "exec", self.netns] + cmd
        with open(self.log, "w") as log:
            log.write("# %s\n" % " ".join(shlex.quote(a) for a in cmd))
            log.flush()
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT,
                                         preexec_fn=proc.term_with_parent)
        deadline = time.monotonic() + timeout * timeout_scale()
        while True:
            if self.proc.poll() is not None:
                raise LibvirtError("libvirtd %s exited with status %s (log %s)"
                                   % (self.name, self.proc.returncode, self.log))
            if os.path.exists(self.socket):
                rc, out = self.virsh("list", "--all", check=False)
                if rc == 0:
                    break
            if time.monotonic() > deadline:
                raise LibvirtError("libvirtd %s: not answering after %d s (log %s)"
                                   % (self.name, timeout, self.log))
            time.sleep(0.2)
        return self

    def virsh(self, *args, check=True, timeout=120):
        """virsh -c qemu:///session ARGS as the daemon's user; (exit
        status, output). check: a non-zero status raises LibvirtError."""
        argv = self.as_user(["virsh", "-c", "qemu:///session"] + list(args))
        t0 = time.monotonic()
        try:
            p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=timeout * timeout_scale())
            rc, out = p.returncode, p.stdout.decode(errors="replace")
        except subprocess.TimeoutExpired as err:
            rc, out = None, (err.output or b"").decode(errors="replace") + "\n(timed out)"
        with open(self.virsh_log, "a") as f:
            f.write("$ virsh %s\n%s(exit status %s, %.1f s)\n"
                    % (" ".join(shlex.quote(a) for a in args), out, rc, time.monotonic() - t0))
        if check and rc != 0:
            raise LibvirtError("virsh %s (%s): exit status %s: %s"
                               % (" ".join(args), self.name, rc, out.strip()))
        return rc, out

    def popen_virsh(self, *args):
        """virsh in the background (a migration): a Popen, output in a pipe."""
        with open(self.virsh_log, "a") as f:
            f.write("$ virsh %s &\n" % " ".join(shlex.quote(a) for a in args))
        return subprocess.Popen(self.as_user(["virsh", "-c", "qemu:///session"] + list(args)),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, preexec_fn=proc.term_with_parent)

    def domstate(self, name):
        rc, out = self.virsh("domstate", name, check=False, timeout=30)
        return out.strip() if rc == 0 else None

    def qemu_pid(self, name):
        """The pid of the QEMU running domain name, or None."""
        return _read_pid(os.path.join(self.dir, "run", "libvirt", "qemu", "run",
                                      "%s.pid" % name))

    def domain_log(self, name):
        """libvirt's log of the domain's QEMU (command line and output)."""
        return os.path.join(self.dir, "cache", "libvirt", "qemu", "log", "%s.log" % name)

    def stop(self):
        """Destroys what still runs, stops the daemon, removes its
        directories (their logs copied to logdir first)."""
        if self.dir is None:
            return
        if self.proc is not None and self.proc.poll() is None:
            rc, out = self.virsh("list", "--name", check=False, timeout=30)
            for name in out.split() if rc == 0 else []:
                self.virsh("destroy", name, check=False, timeout=60)
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        # the helper daemons libvirtd spawned for the session (virtlogd
        # writes the QEMU logs) outlive it by a timeout: stop them now
        for helper in ("virtlogd", "virtlockd"):
            pid = _read_pid(os.path.join(self.dir, "run", "libvirt", "%s.pid" % helper))
            if _alive_pid(pid):
                os.kill(pid, signal.SIGTERM)
                for _ in range(100):
                    if not _alive_pid(pid):
                        break
                    time.sleep(0.1)
        logs = os.path.join(self.dir, "cache", "libvirt", "qemu", "log")
        for n in os.listdir(logs) if os.path.isdir(logs) else []:
            with open(os.path.join(logs, n), "rb") as src, \
                    open(os.path.join(self.logdir, "%s.%s" % (self.name, n)), "wb") as dst:
                dst.write(src.read())
        paths.remove_private_dir(self.dir)
        self.dir = self.proc = None
        _daemons.discard(self)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False


def _read_pid(path):
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def _alive_pid(pid):
    if pid is None:
        return False
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(") ", 1)[1][0] not in "ZX"
    except (OSError, IndexError):
        return False


class LibvirtGuest(Guest):
    """A ram-root guest that lv's libvirt runs, from domain_xml (text, e.g.
    pvo-ctl libvirt-xml's output). What the harness needs is set here:
    <os> boots the ram root with the guest's kernel command line, the
    serial console connects to the harness, the NIC is a virtio-net with
    the guest's MAC on nic (XML of an <interface>'s inner elements, e.g.
    mcast_nic(port)), one vCPU of two possible (TCG needs maxcpus >= 2,
    see guest.py). Every start() is a new console log:
    <name>.console.log, then <name>.boot<N>.console.log."""

    def __init__(self, lv, name, domain_xml, nic, logdir=None, ip=None, mac=None,
                 ram_files=None):
        super().__init__(name, logdir=logdir, ip=ip, mac=mac, ram_root=True,
                         ram_files=ram_files)
        self.lv = lv
        self.domain_xml = domain_xml
        self.nic = nic
        self.boots = 0
        self.pid = None
        self.uuid = str(uuid.uuid4())
        self.defined = False

    # -- the domain ---------------------------------------------------------

    def domain(self, console_sock):
        """The domain XML to define (as text)."""
        root = ET.fromstring(self.domain_xml)
        if root.find("name").text != self.name:
            raise ValueError("domain %s for guest %s" % (root.find("name").text, self.name))
        # one UUID: defining the domain again (a new console socket) updates it
        el = root.find("uuid")
        if el is None:
            el = ET.Element("uuid")
            root.insert(1, el)
        el.text = self.uuid
        os_el = root.find("os")
        kernel = reachable_copy(paths.KERNEL, self._image_dir)
        for tag, text in (("kernel", kernel), ("initrd", self.initrd),
                          ("cmdline", self.kernel_cmdline())):
            el = os_el.find(tag)
            if el is None:
                el = ET.SubElement(os_el, tag)
            el.text = text
        vcpu = root.find("vcpu")
        vcpu.text = str(max(2, int(vcpu.text)))
        vcpu.set("current", "1")
        devices = root.find("devices")
        # the generated domain's MAC (the back-end's) stays the NIC's
        mac = devices.find("interface/mac")
        if mac is not None and mac.get("address").lower() != self.mac:
            raise ValueError("%s: the domain's MAC %s is not the guest's %s"
                             % (self.name, mac.get("address"), self.mac))
        for tag in ("interface", "serial", "console"):
            for el in devices.findall(tag):
                devices.remove(el)
        nic = ET.fromstring("<interface type='%s'>%s<mac address='%s'/>"
                            "<model type='virtio'/></interface>" % (
                                self.nic[0], self.nic[1], self.mac))
        devices.append(nic)
        devices.append(ET.fromstring(
            "<serial type='unix'><source mode='connect' path='%s'/>"
            "<target port='0'/></serial>" % console_sock))
        return ET.tostring(root, encoding="unicode")

    def _xml_file(self, text, name):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        with open(os.path.join(self.logdir, "%s.%s" % (self.name, name)), "w") as f:
            f.write(text)
        give(path, 0o644)
        return path

    # -- life cycle ---------------------------------------------------------

    def start(self, timeout=30):
        """virsh define the domain (each time: its console socket is a new
        one), virsh start it, attach the console (does not wait for the
        boot)."""
        missing_files = paths.missing_guest_files(True)
        if missing_files:
            raise GuestError("%s: cannot start, missing: %s" % (self.name,
                                                                "; ".join(missing_files)))
        note = None
        if self._image_dir is None:
            self._image_dir = paths.private_dir(self.name + "-initrd")
            self.initrd, note = ramroot.build_initrd(self._image_dir, self.ram_files)
            give(self._image_dir, 0o755)
            os.chmod(self.initrd, 0o644)
        self.boots += 1
        if self.boots > 1:
            self.console_log = os.path.join(self.logdir, "%s.boot%d.console.log"
                                            % (self.name, self.boots))
        self.dir = paths.private_dir(self.name)
        give(self.dir, 0o755)
        self.console_sock = os.path.join(self.dir, "console.sock")
        self.console = Console(self.console_sock, self.console_log)
        give(self.console_sock, 0o600)
        self._started = time.monotonic()
        try:
            self.lv.virsh("define", self._xml_file(self.domain(self.console_sock), "domain.xml"))
            self.defined = True
            self.lv.virsh("start", self.name)
        except Exception as err:
            self._fail("virsh define / start: %s" % err)
        self.pid = self.lv.qemu_pid(self.name)
        self.qemu_log = self.lv.domain_log(self.name)
        _guest._live.add(self)  # stopped at exit
        try:
            self.console.accept(timeout * timeout_scale(), self.alive)
        except ConsoleError as err:
            self._fail("start: %s" % err)
        if note:
            self.console.note(note)
        self.console.note("virsh start %s (libvirtd %s): QEMU pid %s"
                          % (self.name, self.lv.name, self.pid))
        return self

    def alive(self):
        return _alive_pid(self.pid)

    def _close_console(self, what):
        if self.console is not None:
            self.console.note(what)
            self.console.close()
            self.console = None
        if self.dir is not None:
            paths.remove_private_dir(self.dir)
            self.dir = None

    def shutdown(self, timeout=60):
        """virsh shutdown (the ACPI power button); waits until the domain
        is shut off. Returns the seconds that took."""
        t0 = time.monotonic()
        self.lv.virsh("shutdown", self.name)
        deadline = t0 + timeout * timeout_scale()
        while True:
            state = self.lv.domstate(self.name)
            if state == "shut off" and not self.alive():
                break
            if time.monotonic() > deadline:
                self._fail("virsh shutdown: still %r after %d s" % (state, timeout))
            time.sleep(0.2)
        took = time.monotonic() - t0
        self._close_console("virsh shutdown: shut off after %.1f s" % took)
        return took

    def destroy(self):
        """virsh destroy: QEMU killed, as pulling the plug."""
        self.lv.virsh("destroy", self.name)
        self._close_console("virsh destroy")
        if self.alive():
            raise GuestError("%s: QEMU pid %d still runs after virsh destroy"
                             % (self.name, self.pid))

    def stop(self):
        """Destroy (if running) and undefine; releases sockets and the
        initrd. Safe to call twice."""
        if self.lv is not None and self.lv.proc is not None and self.defined:
            if self.alive():
                self.lv.virsh("destroy", self.name, check=False)
            self.lv.virsh("undefine", self.name, check=False)
            self.defined = False
        self._close_console("stopped")
        if self._image_dir is not None:
            paths.remove_private_dir(self._image_dir)
            self._image_dir = None
        _guest._live.discard(self)

    def _fail(self, what):
        exited = not self.alive()
        self.stop()
        where = "console log: %s" % self.console_log
        if exited:
            where += ", libvirt's QEMU log: %s" % self.qemu_log
        raise GuestError("%s: %s (%s)" % (self.name, what, where))

    def try_qmp(self, command, **arguments):
        """QMP through libvirt (virsh qemu-monitor-command)."""
        cmd = {"execute": command}
        if arguments:
            cmd["arguments"] = arguments
        rc, out = self.lv.virsh("qemu-monitor-command", self.name, json.dumps(cmd),
                                check=False)
        if rc != 0:
            raise OSError("virsh qemu-monitor-command %s: %s" % (command, out.strip()))
        answer = json.loads(out)
        if "error" in answer:
            raise OSError("%s: %s" % (command, answer["error"].get("desc")))
        return answer.get("return")

    # -- live migration -----------------------------------------------------

    def migrate(self, dest, port=49152, timeout=300, options=()):
        """virsh migrate --live to the libvirtd dest (migration stream on
        tcp:127.0.0.1:port); the destination's serial console connects to
        a new socket of the harness (virsh migrate --xml), and the console
        switches to it as with Guest.migrate(). Returns the seconds the
        migration took; MigrationError if it failed (the guest stays on
        its source)."""
        t0 = time.monotonic()
        new_dir = paths.private_dir(self.name)
        give(new_dir, 0o755)
        new_sock = os.path.join(new_dir, "console.sock")
        rc, xml = self.lv.virsh("dumpxml", "--migratable", self.name)
        root = ET.fromstring(xml)
        src = root.find("devices/serial/source")
        src.set("path", new_sock)
        old_dir = self.dir
        self.dir = new_dir
        xml_path = self._xml_file(ET.tostring(root, encoding="unicode"), "migrate.xml")
        self.dir = old_dir
        self.console.listen_next(new_sock)
        give(new_sock, 0o600)
        args = ["migrate", "--live", "--persistent", "--undefinesource", "--xml", xml_path,
                *options, self.name, dest.uri, "tcp://127.0.0.1:%d" % port]
        p = self.lv.popen_virsh(*args)
        self.console.note("virsh %s" % " ".join(args))
        try:
            self.console.accept_next(60 * timeout_scale(), lambda: p.poll() is None)
            # libvirt stops the source QEMU itself once the migration
            # completes: its console's end must not close the console
            self.console.begin_switch()
            out, _ = p.communicate(timeout=timeout * timeout_scale())
        except (ConsoleError, subprocess.TimeoutExpired) as err:
            if p.poll() is None:
                self.lv.virsh("domjobabort", self.name, check=False)
                p.kill()
            out = p.communicate()[0] if p.stdout else b""
            self.console.abandon_next()
            paths.remove_private_dir(new_dir)
            raise MigrationError("%s: virsh migrate: %s; %s"
                                 % (self.name, err, out.decode(errors="replace").strip()))
        out = out.decode(errors="replace")
        with open(self.lv.virsh_log, "a") as f:
            f.write("%s(exit status %s)\n" % (out, p.returncode))
        if p.returncode != 0:
            self.console.abandon_next()
            paths.remove_private_dir(new_dir)
            raise MigrationError("%s: virsh migrate exited with status %d: %s"
                                 % (self.name, p.returncode, out.strip()))
        old_pid, old_lv = self.pid, self.lv
        self.lv = dest
        self.pid = dest.qemu_pid(self.name)
        self.qemu_log = dest.domain_log(self.name)
        took = time.monotonic() - t0
        self.console.finish_switch(
            "virsh migrate completed in %.1f s: libvirtd %s (QEMU pid %s) -> libvirtd %s "
            "(QEMU pid %s); console of the destination from here"
            % (took, old_lv.name, old_pid, dest.name, self.pid))
        paths.remove_private_dir(old_dir)
        self.dir = new_dir
        self.migrations += 1
        return took


def mcast_nic(port, group="239.255.77.1"):
    """nic= for LibvirtGuest: QEMU's multicast socket netdev. Every guest
    on the same group and port shares one Ethernet; unlike a unicast UDP
    NIC it can be opened twice (a migration's source and destination)."""
    return ("mcast", "<source address='%s' port='%d'/>" % (group, port))

