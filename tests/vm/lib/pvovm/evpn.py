"""An EVPN fabric over namespace hosts (hosts.py), as an operator's hosts
run it with FRR (docs/overlay.md, "EVPN"): on every host, per tenant VNI,
a bridge (the SVI, with an address of the tenant's subnet) and a VXLAN
device on the kernel's own port 4789 (no learning, ARP suppression), and
FRR's zebra and bgpd in iBGP EVPN full mesh with advertise-all-vni.
Guests plug into a host's bridge with a tap device; the host's bridge
learns their MAC and its SVI their IP from what they send, zebra
advertises both as type-2 routes, and every other host's zebra installs
them in its kernel, where the back-ends read them.

    fab = Fabric(hs, [100], logdir).start()   # waits for the BGP sessions
    netdev = fab.plug(0, 100, "g1")           # -netdev for QEMU in host 0
    ...
    fab.unplug(0, "g1")                       # a destroyed guest's tap goes
    fab.stop()                                # FRR stops; hs.close() does the rest

Each FRR instance has its own config, pid files, zserv socket and vty
directory under the test's private directory, and logs to
<logdir>/frr-h<i>.log.
"""

import os
import shutil
import subprocess
import time

from . import paths

FRR = "/usr/lib/frr"
# The kernel's VXLAN devices use 4789: the back-ends take another port.
BACKEND_VXLAN_PORT = 4790


def missing():
    """Why FRR cannot run here (make deps installs it), or None."""
    for d in ("zebra", "bgpd"):
        if not os.access(os.path.join(FRR, d), os.X_OK):
            return "%s/%s missing (Debian's frr package: make deps)" % (FRR, d)
    return None


def announce(node):
    """A gratuitous ARP from node's NIC (busybox arping -U), as a guest's
    network stack sends when its address comes up: its host's bridge
    learns the MAC and the SVI the IP, which zebra then advertises."""
    node.check("busybox arping -U -c 2 -I %s %s" % (node.nic, node.ip), timeout=30)


class FabricError(Exception):
    pass


class Fabric:
    def __init__(self, hosts, vnis, logdir=None, svi_net=None):
        """vnis: the tenants' VNIs; svi_net(vni) -> "10.0.53" gives the
        /24 of a tenant's guests (host i's SVI is .(250 + i))."""
        self.hosts = hosts
        self.vnis = list(vnis)
        self.logdir = logdir or paths.test_log_dir()
        self.svi_net = svi_net
        self.work = None
        self.procs = []
        self.taps = {}   # (host, name) -> tap device

    def _ip(self, i, *args):
        rc, out = self.hosts.run(i, ["ip"] + list(args))
        if rc != 0:
            raise FabricError("host %d: ip %s: %s" % (i, " ".join(args), out.strip()))

    def start(self):
        self.work = paths.private_dir("%s-frr" % paths.test_name())
        os.chmod(self.work, 0o755)
        for i in range(self.hosts.count):
            self._tenant_devices(i)
            self._frr(i)
        self._wait_sessions()
        return self

    def _tenant_devices(self, i):
        vtep = self.hosts.vtep(i)
        for vni in self.vnis:
            br, vx = "br%d" % vni, "vxlan%d" % vni
            self._ip(i, "link", "add", br, "type", "bridge")
            self._ip(i, "link", "add", vx, "type", "vxlan", "id", str(vni), "local", vtep,
                     "dstport", "4789", "nolearning")
            self._ip(i, "link", "set", vx, "mtu", "1500", "master", br)
            self._ip(i, "link", "set", vx, "type", "bridge_slave", "neigh_suppress", "on",
                     "learning", "off")
            self._ip(i, "link", "set", vx, "up")
            self._ip(i, "link", "set", br, "up")
            if self.svi_net:
                self._ip(i, "addr", "add", "%s.%d/24" % (self.svi_net(vni), 250 + i),
                         "dev", br)
            # a guest's gratuitous ARP (its own at boot, or the one
            # QEMU's self-announce asks of it after a migration) teaches
            # the SVI its address, which zebra then advertises
            self.hosts.run(i, ["sysctl", "-qw", "net.ipv4.conf.%s.arp_accept=1" % br])

    def _frr(self, i):
        vtep = self.hosts.vtep(i)
        peers = [self.hosts.vtep(k) for k in range(self.hosts.count) if k != i]
        conf = ["frr defaults datacenter", "hostname h%d" % i,
                "log file %s" % os.path.join(self.logdir, "frr-h%d.log" % i),
                "router bgp 65000", " bgp router-id %s" % vtep, " no bgp default ipv4-unicast"]
        conf += [" neighbor %s remote-as 65000" % p for p in peers]
        conf += [" address-family l2vpn evpn"]
        conf += ["  neighbor %s activate" % p for p in peers]
        conf += ["  advertise-all-vni", " exit-address-family"]
        cfg = os.path.join(self.work, "frr-h%d.conf" % i)
        with open(cfg, "w") as f:
            f.write("\n".join(conf) + "\n")
        run = os.path.join(self.work, "run-h%d" % i)
        os.makedirs(run, exist_ok=True)
        shutil.chown(run, "frr", "frr")
        # FRR writes its log as user frr
        log = os.path.join(self.logdir, "frr-h%d.log" % i)
        open(log, "a").close()
        shutil.chown(log, "frr", "frr")
        zserv = os.path.join(run, "zserv.api")
        for d in ("zebra", "bgpd"):
            p = self.hosts.popen(i, [os.path.join(FRR, d), "-f", cfg,
                                     "-i", os.path.join(run, "%s.pid" % d), "-z", zserv,
                                     "--vty_socket", run],
                                 stdout=open(os.path.join(self.logdir, "frr-h%d.%s.out" % (i, d)),
                                             "w"),
                                 stderr=subprocess.STDOUT)
            self.procs.append(p)
            if d == "zebra":
                deadline = time.monotonic() + 10
                while not os.path.exists(zserv):
                    if p.poll() is not None or time.monotonic() > deadline:
                        raise FabricError("host %d: zebra did not start (%s)" % (i, log))
                    time.sleep(0.1)

    def _wait_sessions(self, timeout=60):
        """Every host has every other's VTEP in its flood list: the BGP
        sessions are up and the VNIs' type-3 routes went round."""
        want = self.hosts.count - 1
        deadline = time.monotonic() + timeout
        for i in range(self.hosts.count):
            for vni in self.vnis:
                while True:
                    rc, out = self.hosts.run(i, ["bridge", "fdb", "show", "dev",
                                                 "vxlan%d" % vni])
                    if out.count("00:00:00:00:00:00 ") >= want:
                        break
                    if time.monotonic() > deadline:
                        raise FabricError("host %d: VNI %d's flood list after %d s:\n%s"
                                          % (i, vni, timeout, out))
                    time.sleep(0.2)

    def plug(self, i, vni, name):
        """A tap device on host i's bridge of vni for a guest called name;
        the -netdev (without id=) that opens it, for a QEMU in host i
        (the same tap again for a guest that comes back to host i)."""
        tap = "tap-%s" % name[:10]
        if (i, name) in self.taps:
            return "tap,ifname=%s,script=no,downscript=no" % tap
        self._ip(i, "tuntap", "add", "dev", tap, "mode", "tap")
        self._ip(i, "link", "set", tap, "mtu", "1500", "master", "br%d" % vni, "up")
        self.taps[(i, name)] = tap
        return "tap,ifname=%s,script=no,downscript=no" % tap

    def unplug(self, i, name):
        """Removes the tap plug(i, ..., name) made (a destroyed guest's)."""
        tap = self.taps.pop((i, name), None)
        if tap:
            self.hosts.run(i, ["ip", "link", "del", tap])

    def fdb(self, i, vni):
        """Host i's forwarding entries of vni's VXLAN device (text)."""
        return self.hosts.run(i, ["bridge", "fdb", "show", "dev", "vxlan%d" % vni])[1]

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        self.procs = []
        if self.work:
            paths.remove_private_dir(self.work)
            self.work = None
