"""Several "hosts" on one machine: Linux network namespaces joined by an
underlay Ethernet, for tests of the inter-host overlay transport.

    with Hosts(2, logdir) as hs:           # namespaces pvo<pid>h0, pvo<pid>h1
        hs.vtep(0), hs.vtep(1)             # "10.X.Y.1", "10.X.Y.2"
        hs.run(0, "ip -br addr")           # (exit status, output) inside host 0
        hs.netem(0, "loss 1% delay 1ms")   # on host 0's underlay NIC
        cap = hs.capture(1, "overlay")     # dumpcap on host 1's NIC ->
        ...                                #   <logdir>/overlay.h1.pcap
        cap.stop()
    # leaving (or at exit, or on SIGTERM): captures stop, whatever still
    # runs inside the namespaces is killed, the namespaces are deleted

Hosts(n, shared=True) is one namespace with n addresses instead: n
back-end processes on one machine, each with a VTEP of its own.

Two hosts are joined by one veth pair; more hosts by veths to a bridge in
a "switch" namespace (pvo<pid>sw). Host i's underlay address (its VTEP) is
.(i+1) of a /24 derived from the test's pid, so tests run in parallel (each
namespace has its own routing anyway). The underlay MTU is 9000: a 4 KiB
RoCE MTU plus the VXLAN, UDP, IP and Ethernet headers fits.

QEMU and the guests stay in the root namespace; only processes started with
run()/popen()/command() (e.g. a back-end) live in a host.
"""

import atexit
import os
import re
import shlex
import signal
import subprocess
import time

from . import paths, proc

IP = "ip"
UNDERLAY_MTU = 9000
# Names of namespaces this harness creates: pvo<pid>h<i>, pvo<pid>sw.
NS_NAME = re.compile(r"^pvo(\d+)(?:h\d+|sw)$")

_live = set()


class HostsError(Exception):
    pass


class Unsupported(HostsError):
    """A prerequisite of the machine is missing (no permission for network
    namespaces, no netem, no dumpcap): a test skips on it."""


def _sh(cmd, timeout=30, check=True):
    """Runs argv cmd; returns (exit status, stdout + stderr)."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL, timeout=timeout)
    except FileNotFoundError as err:
        raise Unsupported("%s: %s" % (cmd[0], err)) from err
    except subprocess.TimeoutExpired as err:
        raise HostsError("%s: no exit within %d s" % (" ".join(cmd), timeout)) from err
    out = p.stdout.decode(errors="replace")
    if check and p.returncode != 0:
        raise HostsError("%s: exit status %d: %s" % (" ".join(shlex.quote(c) for c in cmd),
                                                    p.returncode, out.strip()))
    return p.returncode, out


def _stop_all():
    for h in list(_live):
        h.close()


atexit.register(_stop_all)


def remove_stale():
    """Deletes namespaces an earlier test run of this harness left behind
    (it was SIGKILLed): pvo<pid>... whose pid no longer runs."""
    try:
        names = os.listdir("/run/netns")
    except OSError:
        return
    for name in names:
        m = NS_NAME.match(name)
        if m and not os.path.exists("/proc/%s" % m.group(1)):
            _sh([IP, "netns", "del", name], check=False)


def unsupported_reason():
    """Why this machine cannot run namespace hosts, or None: tries to
    create and delete a namespace with a veth pair."""
    if os.geteuid() != 0:
        return "network namespaces need root (running as uid %d)" % os.geteuid()
    probe = "pvo%dprobe" % os.getpid()
    try:
        rc, out = _sh([IP, "netns", "add", probe], check=False)
        if rc != 0:
            return "ip netns add not permitted: %s" % out.strip()
        rc, out = _sh([IP, "-n", probe, "link", "add", "pvoprobe0", "type", "veth", "peer",
                       "name", "pvoprobe1"], check=False)
        if rc != 0:
            return "cannot create a veth pair in a namespace: %s" % out.strip()
    except Unsupported as err:
        return str(err)
    finally:
        try:
            _sh([IP, "netns", "del", probe], check=False)
        except HostsError:
            pass
    return None


def _vxlan_random_bpf(picks, otherwise=0):
    """Classic BPF for cls_bpf (tc "bytecode"): for IPv4 UDP to port 4789
    (not fragments), a random number picks classid c with probability p for
    each (p, c) in picks in turn, else otherwise; any other packet: 0 (no
    match). Returns the "N,code jt jf k,..." string."""
    rand = 0xfffff000 + 56          # SKF_AD_OFF + SKF_AD_RANDOM
    ins = []
    # header checks; the "no match" target is patched in below
    hdr = [(0x28, 0, 0, 12),         # ldh [12]          ethertype
           (0x15, 0, "N", 0x0800),   # jeq IPv4
           (0x30, 0, 0, 23),         # ldb [23]          IP protocol
           (0x15, 0, "N", 17),       # jeq UDP
           (0x28, 0, 0, 20),         # ldh [20]          fragment offset
           (0x45, "N", 0, 0x1fff),   # jset -> no match
           (0xb1, 0, 0, 14),         # ldxb 4*([14]&0xf) IP header length
           (0x48, 0, 0, 16),         # ldh [x+16]        UDP destination port
           (0x15, 0, "N", 4789),     # jeq 4789
           (0x20, 0, 0, rand)]       # ld rand
    ins += hdr
    limit = 0
    for p, classid in picks:
        limit = min(limit + int(p * 2 ** 32), 2 ** 32 - 1)
        ins.append((0x35, 1, 0, limit))   # jge limit -> skip the ret
        ins.append((0x06, 0, 0, classid))
    ins.append((0x06, 0, 0, otherwise))
    ins.append((0x06, 0, 0, 0))           # no match
    nomatch = len(ins) - 1
    out = []
    for n, (code, jt, jf, k) in enumerate(ins):
        jt = nomatch - n - 1 if jt == "N" else jt
        jf = nomatch - n - 1 if jf == "N" else jf
        out.append("%d %d %d %d" % (code, jt, jf, k))
    return "%d,%s" % (len(out), ",".join(out))


class Capture:
    """dumpcap on one host's underlay NIC, writing a pcap file."""

    def __init__(self, hosts, i, path, filt=None, timeout=10):
        self.path = path
        self.host = i
        self.log_path = path + ".dumpcap.log"
        cmd = ["dumpcap", "-q", "-i", hosts.dev(i), "-w", path, "-P", "-s", "262144"]
        if filt:
            cmd += ["-f", filt]
        if os.path.exists(path):
            os.unlink(path)
        self._log = open(self.log_path, "w")
        self.proc = hosts.popen(i, cmd, stdout=self._log, stderr=subprocess.STDOUT)
        hosts._procs.append(self.proc)
        # dumpcap writes the pcap header once it captures
        deadline = time.monotonic() + timeout
        while not (os.path.exists(path) and os.path.getsize(path) >= 24):
            if self.proc.poll() is not None:
                self._log.close()
                raise HostsError("dumpcap on %s exited with status %s: %s"
                                 % (hosts.dev(i), self.proc.returncode, self.text()))
            if time.monotonic() > deadline:
                self.stop()
                raise HostsError("dumpcap on %s did not start within %d s: %s"
                                 % (hosts.dev(i), timeout, self.text()))
            time.sleep(0.05)
        # the file exists a moment before the socket filter is live
        time.sleep(0.3)

    def text(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def stop(self):
        """SIGTERM (dumpcap flushes and closes the file); returns the path."""
        if self.proc.poll() is None:
            time.sleep(0.3)   # packets still in flight to the socket
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not self._log.closed:
            self._log.close()
        return self.path


class Hosts:
    """count namespace hosts on one underlay; see the module docstring.

    logdir: where capture files go (default build/test-logs/<test>/)."""

    def __init__(self, count=2, logdir=None, mtu=UNDERLAY_MTU, shared=False):
        if count < 1:
            raise ValueError("count %d" % count)
        self.count = count
        self.mtu = mtu
        self.logdir = logdir or paths.test_log_dir()
        pid = os.getpid()
        self.prefix = "pvo%d" % pid
        # shared: every "host" is one namespace with an address each (two
        # back-end processes on one machine), no underlay between them
        self.shared = shared
        self.names = ["%sh%d" % (self.prefix, i) for i in range(1 if shared else count)]
        self.switch = "%ssw" % self.prefix if count > 2 and not shared else None
        # a /24 of 10.0.0.0/8 from the pid: 10.(128 + (pid >> 8) % 120).(pid & 0xff)
        self.subnet = "10.%d.%d" % (128 + (pid >> 8) % 120, pid & 0xff)
        self._devs = ["%sv%d" % (self.prefix, i) for i in range(count)]
        self._procs = []
        self._created = []
        self._captures = []
        self._closed = False

    # -- life cycle ---------------------------------------------------------

    def start(self):
        remove_stale()
        _live.add(self)
        try:
            self._setup()
        except BaseException:
            self.close()
            raise
        return self

    def _add_ns(self, name):
        rc, out = _sh([IP, "netns", "add", name], check=False)
        if rc != 0:
            raise Unsupported("ip netns add %s: %s" % (name, out.strip()))
        self._created.append(name)
        _sh([IP, "-n", name, "link", "set", "lo", "up"])
        # IPv4 only on the underlay: no IPv6 neighbour discovery in captures
        _sh(self.command_ns(name, ["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                                   "net.ipv6.conf.default.disable_ipv6=1"]), check=False)

    def _setup(self):
        for name in self.names:
            self._add_ns(name)
        if self.shared:
            # a veth pair inside the namespace (dummy may not be built):
            # its addresses on one end, the other end only up
            dev, peer = self._devs[0], self._devs[1]
            _sh([IP, "-n", self.names[0], "link", "add", dev, "type", "veth", "peer", "name",
                 peer])
            for d in (dev, peer):
                _sh([IP, "-n", self.names[0], "link", "set", d, "mtu", str(self.mtu), "up"])
            for i in range(self.count):
                _sh([IP, "-n", self.names[0], "addr", "add", "%s/24" % self.vtep(i),
                     "dev", dev, "nodad"])
            return
        if self.count == 2:
            # host 0's NIC <-> host 1's NIC
            _sh([IP, "link", "add", self._devs[0], "netns", self.names[0], "type", "veth",
                 "peer", "name", self._devs[1], "netns", self.names[1]])
        elif self.count > 2:
            self._add_ns(self.switch)
            _sh([IP, "-n", self.switch, "link", "add", "br0", "type", "bridge"])
            _sh([IP, "-n", self.switch, "link", "set", "br0", "mtu", str(self.mtu), "up"])
            for i, name in enumerate(self.names):
                port = "%sp%d" % (self.prefix, i)
                _sh([IP, "link", "add", self._devs[i], "netns", name, "type", "veth",
                     "peer", "name", port, "netns", self.switch])
                _sh([IP, "-n", self.switch, "link", "set", port, "mtu", str(self.mtu),
                     "master", "br0", "up"])
        else:
            _sh([IP, "-n", self.names[0], "link", "add", self._devs[0], "type", "dummy"])
        for i, name in enumerate(self.names):
            dev = self._devs[i]
            _sh([IP, "-n", name, "link", "set", dev, "mtu", str(self.mtu), "up"])
            _sh([IP, "-n", name, "addr", "add", "%s/24" % self.vtep(i), "dev", dev,
                 "nodad"])
        # wait for the links to come up (veth carrier)
        deadline = time.monotonic() + 10
        for i, name in enumerate(self.names):
            while True:
                _, out = _sh([IP, "-n", name, "-br", "link", "show", self._devs[i]])
                if " UP " in out or "UNKNOWN" in out:
                    break
                if time.monotonic() > deadline:
                    raise HostsError("%s in %s not up: %s" % (self._devs[i], name, out))
                time.sleep(0.05)

    def close(self):
        """Stops captures, kills what still runs in the namespaces, deletes
        them. Safe to call twice, and from atexit."""
        if self._closed:
            return
        self._closed = True
        for cap in self._captures:
            try:
                cap.stop()
            except Exception:  # noqa: B902 - teardown goes on
                pass
        for p in self._procs:
            if p.poll() is None:
                p.kill()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
        for name in reversed(self._created):
            # anything else still inside (started through run() and left
            # behind) holds the namespace: kill it by pid
            rc, out = _sh([IP, "netns", "pids", name], check=False)
            if rc == 0:
                for pid in out.split():
                    if pid.isdigit() and int(pid) != os.getpid():
                        try:
                            os.kill(int(pid), signal.SIGKILL)
                        except OSError:
                            pass
            _sh([IP, "netns", "del", name], check=False)
        self._created = []
        _live.discard(self)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()
        return False

    # -- addresses ----------------------------------------------------------

    def name(self, i):
        """Host i's namespace name."""
        return self.names[0 if self.shared else i]

    def dev(self, i):
        """Host i's underlay NIC (inside its namespace)."""
        return self._devs[0 if self.shared else i]

    def vtep(self, i):
        """Host i's underlay IPv4 address, its VTEP."""
        return "%s.%d" % (self.subnet, i + 1)

    # -- running things -----------------------------------------------------

    def command(self, i, argv):
        """argv prefixed so that it runs inside host i."""
        return self.command_ns(self.name(i), argv)

    @staticmethod
    def command_ns(name, argv):
        return [IP, "netns", "exec", name] + list(argv)

    def run(self, i, cmd, timeout=60, check=False):
        """Runs cmd (a shell string or argv) inside host i; returns
        (exit status, output)."""
        argv = ["sh", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        return _sh(self.command(i, argv), timeout=timeout, check=check)

    def popen(self, i, argv, **kwargs):
        """subprocess.Popen of argv inside host i (ip netns exec execs it:
        the process's pid is the program's; it gets SIGTERM if the test
        process dies)."""
        kwargs.setdefault("preexec_fn", proc.term_with_parent)
        return subprocess.Popen(self.command(i, argv), stdin=subprocess.DEVNULL, **kwargs)

    # -- impairments --------------------------------------------------------

    def netem(self, i, spec):
        """tc netem on host i's underlay NIC (egress), e.g.
        "loss 1% delay 1ms reorder 25% 50% duplicate 1%". Unsupported if
        the kernel has no netem."""
        argv = ["tc", "qdisc", "replace", "dev", self.dev(i), "root", "netem"] + spec.split()
        rc, out = self.run(i, argv)
        if rc != 0:
            if "unknown" in out.lower() or "not supported" in out.lower() or \
                    "No such file" in out:
                raise Unsupported("tc netem on %s: %s" % (self.dev(i), out.strip()))
            raise HostsError("%s: exit status %d: %s" % (" ".join(argv), rc, out.strip()))

    def clear_netem(self, i):
        """Removes the root qdisc of host i's underlay NIC (no error if none)."""
        self.run(i, ["tc", "qdisc", "del", "dev", self.dev(i), "root"])

    def qdisc_stats(self, i):
        """Queueing statistics of host i's underlay NIC: `tc -s` qdisc,
        class and filter show (what netem or its emulation did), and the
        counters of the NICs."""
        d = self.dev(i)
        return self.run(i, "tc -s qdisc show dev {d}; tc -s class show dev {d}; "
                        "tc -s filter show dev {d}; ip -s link".format(d=d))[1]

    def netem_supported(self):
        """None if netem works here, else why not (tried on host 0's NIC)."""
        try:
            self.netem(0, "delay 1ms")
        except Unsupported as err:
            return str(err)
        finally:
            self.clear_netem(0)
        return None

    def impair(self, i, loss=0.01, delay_ms=1, reorder=0.25, duplicate=0.01):
        """Loss, reordering and duplication of the VXLAN packets host i
        sends (fractions, e.g. loss=0.01 for 1 %). With netem:
        "loss 1% delay 1ms reorder 25% 50% duplicate 1%". Without netem in
        the kernel (two hosts only), an emulation from what tc offers (see
        _emulate): the same loss and duplication, and reordering of the
        same share of packets by a second path, but no fixed delay.
        Returns a description of what was set up."""
        spec = "loss %g%% delay %gms reorder %g%% 50%% duplicate %g%%" % (
            loss * 100, delay_ms, reorder * 100, duplicate * 100)
        try:
            self.netem(i, spec)
            return "netem " + spec
        except Unsupported as err:
            if self.count != 2:
                raise
            why = str(err)
        cpus = self._emulate(i, loss, reorder, duplicate)
        return ("netem is not available here (%s); emulated with tc htb + classic BPF + mirred: "
                "loss %g%%, duplicate %g%%, %g%% of the packets sent by a second path%s "
                "(reordering without a fixed delay)"
                % (why, loss * 100, duplicate * 100, reorder * 100,
                   " processed on another CPU" if cpus > 1 else
                   " (one CPU: little reordering)"))

    def _side_link(self, i):
        """A second veth pair from host i to the other host whose far end has
        the MAC of the other host's NIC, so a frame sent into it arrives
        there as if it came over the underlay. Returns the near end."""
        j = 1 - i
        near, far = "%sx%d" % (self.prefix, i), "%sy%d" % (self.prefix, i)
        rc, _ = self.run(i, ["ip", "link", "show", near])
        if rc == 0:
            return near
        _sh(self.command(i, ["ip", "link", "add", near, "type", "veth", "peer", "name", far,
                             "netns", self.names[j]]))
        _, mac = self.run(j, ["cat", "/sys/class/net/%s/address" % self.dev(j)], check=True)
        _sh(self.command(j, ["ip", "link", "set", far, "address", mac.strip(), "mtu",
                             str(self.mtu), "up"]))
        # the copy arrives on a NIC without the address: no reverse-path drop
        _sh(self.command(j, ["sysctl", "-qw", "net.ipv4.conf.all.rp_filter=0",
                             "net.ipv4.conf.%s.rp_filter=0" % far]))
        # receive processing of the two paths on different CPUs (RPS), so
        # that packets of the second path race those of the first
        ncpu = os.cpu_count() or 1
        if ncpu > 1:
            for dev, cpu in ((self.dev(j), 0), (far, 1)):
                self.run(j, "echo %x > /sys/class/net/%s/queues/rx-0/rps_cpus"
                         % (1 << cpu, dev))
        _sh(self.command(i, ["ip", "link", "set", near, "mtu", str(self.mtu), "up"]))
        return near

    def _emulate(self, i, loss, reorder, duplicate):
        """netem's loss, duplication and reordering from tc htb, cls_bpf
        with classic BPF (whose random number picks packets) and mirred:
        a VXLAN packet host i sends is, by chance, copied (duplicate) or
        moved (reorder) to a second veth pair to the other host, whose far
        end is received on another CPU than the underlay NIC, or put into
        an HTB class whose FIFO holds 0 packets (loss). Returns the number
        of CPUs."""
        dev = self.dev(i)
        side = self._side_link(i)
        self.clear_netem(i)
        steps = [
            ["qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "10",
             "r2q", "100000"],
            ["class", "add", "dev", dev, "parent", "1:", "classid", "1:10", "htb",
             "rate", "10gbit"],
            # loss: a FIFO of length 0 refuses everything
            ["class", "add", "dev", dev, "parent", "1:", "classid", "1:30", "htb",
             "rate", "10gbit"],
            ["qdisc", "add", "dev", dev, "parent", "1:30", "handle", "30:", "pfifo",
             "limit", "0"],
        ]
        # first loss (of every packet, as netem), then of the others the
        # duplicates, then those for the second path
        if loss > 0:
            steps.append(["filter", "add", "dev", dev, "parent", "1:", "prio", "1", "bpf",
                          "bytecode", _vxlan_random_bpf([(loss, 0x10030)])])
        if duplicate > 0:
            steps.append(["filter", "add", "dev", dev, "parent", "1:", "prio", "2", "bpf",
                          "bytecode", _vxlan_random_bpf([(duplicate, 0x10010)]),
                          "action", "mirred", "egress", "mirror", "dev", side])
        if reorder > 0:
            steps.append(["filter", "add", "dev", dev, "parent", "1:", "prio", "3", "bpf",
                          "bytecode", _vxlan_random_bpf([(reorder, 0x10010)]),
                          "action", "mirred", "egress", "redirect", "dev", side])
        for step in steps:
            _sh(self.command(i, ["tc"] + step))
        return os.cpu_count() or 1

    # -- captures -----------------------------------------------------------

    def capture(self, i, name, filt=None):
        """Starts dumpcap on host i's underlay NIC into
        <logdir>/<name>.h<i>.pcap; returns a Capture (stop() it). filt is a
        capture filter, e.g. "udp port 4789"."""
        if not any(os.access(os.path.join(d, "dumpcap"), os.X_OK)
                   for d in os.environ.get("PATH", "/usr/bin").split(":")):
            raise Unsupported("dumpcap not installed (apt-get install tshark)")
        cap = Capture(self, i, os.path.join(self.logdir, "%s.h%d.pcap" % (name, i)), filt)
        self._captures.append(cap)
        return cap
