"""Guests with an RDMA device of the kind under test, for data-path tests.

The device is a parameter, so one test proves itself on a known-good device
and then checks ours:

    PVO_TEST_DEVICE=pvo (default)  pvrdma-overlay on one pvrdma-overlayd (the
                                   ASan/UBSan build, configured from a file
                                   with each guest's tenant and quotas)
    PVO_TEST_DEVICE=rxe            Linux rdma_rxe on each guest's NIC: a real
                                   RDMA device with the semantics we copy

Either way the guests share one Ethernet (a dgram pair for two guests, a hub
otherwise): TCP for the tools' out-of-band exchange, ARP for RoCE addresses,
and for rxe the RoCE packets themselves.

Nodes with a host index (Node(..., host=1)) put pvo on several hosts: the
hosts are network namespaces joined by a veth underlay (hosts.py), each runs
its own back-end inside its namespace with [daemon] vtep = that host's
underlay address, its own guests as [vm] sections and the other hosts'
guests as [remote] sections, so RoCE between guests of different hosts
crosses the underlay as RoCEv2 in VXLAN (docs/overlay.md). QEMU and the
guests' Ethernet stay in the root namespace as above. rg.backends lists the
back-ends (rg.backend_of(node) is a node's), rg.hosts the hosts.

A guest that will migrate between hosts (docs/migration.md, "Between
hosts") needs a [vm] on its destinations' back-ends too:
Node(..., host=0, also_on=[2]) configures it as a [vm] on host 2 as well,
with a socket of its own there (node.sock_on(2), for
Guest.migrate(extra_args=devices.with_socket(...))); every host but its
home (node.host) has a [remote] for it behind its home host, so that
its peers there reach it until it moves in.
[daemon] keys that differ per host (peers) are daemon_options values that
are functions of the host index.

    nodes = [Node("g1", "10.0.31.1"), Node("g2", "10.0.31.2")]
    with RdmaGuests(nodes) as rg:
        a, b = rg.nodes
        r = rg.pair(b, "ibv_rc_pingpong -d %s" % b.ibdev, a, "...", "rc", ready=tcp(18515))
        tap.ok(r.ok, "ibv_rc_pingpong", diag=r.diag())
        rg.dmesg_checks()
    # leaving: guests stop; with pvo, the back-end stops and must exit 0 with
    # quiet sanitizers (two TAP lines)
"""

import os
import re

from . import backend, devices, evpn, hosts, netdev, paths, tap
from .guest import Guest, timeout_scale

KINDS = ("pvo", "rxe")
PROGS = os.path.join(paths.BUILD, "plain", "tests", "vm", "progs")


def device_kind():
    """The device under test: $PVO_TEST_DEVICE, default pvo."""
    kind = os.environ.get("PVO_TEST_DEVICE", "pvo")
    if kind not in KINDS:
        tap.bail_out("PVO_TEST_DEVICE=%s: expected one of %s" % (kind, ", ".join(KINDS)))
    return kind


def prog(name):
    """Path of one of our test programs (tests/vm/progs, built by make)."""
    return os.path.join(PROGS, name)


def missing(kind, programs=(), ram_root=False, image=False):
    """Build outputs this test needs that do not exist (image: guests of
    the Debian 13 image, whose driver is its package's)."""
    out = paths.missing_guest_files(ram_root, image)
    if kind == "pvo":
        why = backend.missing()
        if why:
            out.append(why)
        ko = os.path.join(paths.REPO, "guest-driver", "pvrdma_overlay.ko")
        if not image and not os.path.exists(ko):
            out.append("%s (make driver guest)" % ko)
    for p in programs:
        if not os.access(prog(p), os.X_OK):
            out.append("%s (make test-programs)" % prog(p))
    return out


def tcp(port):
    """ready= for servers that listen on a TCP port."""
    return ("tcp", port)


def rdma_cm(port):
    """ready= for servers that listen with rdma_cm."""
    return ("rdma_cm", port)


class Node:
    """One guest: its name, address (/24), tenant (pvo) and quota keys for
    the back-end config (pvo), the index of the host whose back-end serves
    it (pvo; None: the one back-end of a single host), whether it boots the
    ram root (ram_root=True: migratable, see migration.py), the other hosts
    whose back-ends also configure it as a local [vm] (also_on=[i, ...]:
    where it may migrate to; pvo with hosts only), filled in by RdmaGuests
    with .guest, .ibdev, .nic and .gid_index (the RoCE v2 GID of ip), and
    with pvo .sock (its socket on its home back-end) and .socks ({host:
    socket} of every back-end that serves it)."""

    def __init__(self, name, ip, tenant="blue", quotas=None, memory=1024, host=None,
                 ram_root=False, also_on=(), smp=1, image=False):
        self.name = name
        # boot the Debian 13 image (Guest(image=True))
        self.image = image
        self.smp = smp  # vCPUs
        self.also_on = [h for h in also_on if h != host]
        # boot the ram root (migratable: Guest(ram_root=True))
        self.ram_root = ram_root
        self.host = host
        self.ip = ip
        self.tenant = tenant
        self.quotas = dict(quotas or {})
        self.memory = memory
        a, b, c, d = (int(x) for x in ip.split("."))
        self.mac = "52:54:00:%02x:%02x:%02x" % (b, c, d)
        self.gid = "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x" % (a, b, c, d)
        self.guest = None
        self.ibdev = None
        self.nic = None
        self.gid_index = None
        self.sock = None
        self.socks = {}

    def served_on(self, host):
        """Whether host's back-end configures this node as a [vm] (its home
        host or one of also_on); host None: the one back-end."""
        return host is None or host == self.host or host in self.also_on

    def sock_on(self, host):
        """This node's socket on host's back-end (the home host's: .sock)."""
        if host is None or host == self.host:
            return self.sock
        return self.socks[host]

    def run(self, cmd, timeout=60):
        return self.guest.run(cmd, timeout)

    def check(self, cmd, timeout=60):
        return self.guest.check(cmd, timeout)


class PairResult:
    """Exit status and output of a server and its client (None: no status,
    the command was killed)."""

    def __init__(self, name, server_rc, server_out, client_rc, client_out):
        self.name = name
        self.server_rc = server_rc
        self.server_out = server_out
        self.client_rc = client_rc
        self.client_out = client_out

    @property
    def ok(self):
        return self.server_rc == 0 and self.client_rc == 0

    def diag(self):
        return ("server exit status %s, output:\n%s\nclient exit status %s, output:\n%s"
                % (self.server_rc, self.server_out[-4000:], self.client_rc,
                   self.client_out[-4000:]))


class RdmaGuests:
    """Boots the nodes' guests on one Ethernet with the device under test
    and sets the device up in each. kind defaults to device_kind()."""

    def __init__(self, nodes, kind=None, subnet_bits=24, vni_base=100,
                 daemon_options=None, reconnect_ms=None, shared_host=False,
                 guest_factory=None, qemu_args=(), evpn_fabric=False, evpn_tenants=None):
        self.nodes = list(nodes)
        # pvo on several hosts with the map from EVPN (evpn.py): FRR on
        # every host, each tenant on control-plane = evpn without [remote]
        # sections, every guest's NIC a tap on its host's tenant bridge
        # (QEMU runs in the host's namespace): the guests' Ethernet is the
        # fabric's VXLAN, their RDMA the back-ends' (on another port)
        self.evpn_fabric = evpn_fabric
        # ... the tenants on control-plane = evpn (default: all); the others
        # keep [remote] sections (and announcements, with a migration-key)
        self.evpn_tenants = evpn_tenants
        self.fabric = None
        # a function (rg, node) -> an unstarted guest in place of Guest,
        # e.g. a libvirt.LibvirtGuest; with pvo, node.sock is set by then
        self.guest_factory = guest_factory
        # pvo on several hosts: the back-ends all run on one machine (one
        # namespace, a VTEP address each; hosts.Hosts(shared=True))
        self.shared_host = shared_host
        # more QEMU arguments for every guest (and so for the destinations
        # of their migrations), e.g. trace events
        self.qemu_args = list(qemu_args)
        # pvo: the devices' chardevs reconnect to a back-end that went
        # away (restart_backend())
        self.reconnect_ms = reconnect_ms
        # extra [daemon] keys of every back-end of an overlay set-up, e.g.
        # {"udp-gso": "no"}; a value that is a function of the host index
        # gives each back-end its own, e.g. {"peers": lambda h: ...}; a
        # None result leaves the key out
        self.daemon_options = dict(daemon_options or {})
        self.kind = kind or device_kind()
        self.subnet_bits = subnet_bits
        self.vni_base = vni_base
        # the rxe run of a test keeps its own logs: both can run at once
        self.logdir = paths.test_log_dir(paths.test_name() +
                                         ("-rxe" if self.kind == "rxe" else ""))
        self.work = None
        self.hub = None
        self.backend = None       # the first (with one host: the only) back-end
        self.backends = []
        self.hosts = None
        # pvo on several hosts: every node names its host
        with_host = [n for n in self.nodes if n.host is not None]
        self.overlay = self.kind == "pvo" and bool(with_host)
        if self.overlay and len(with_host) != len(self.nodes):
            raise ValueError("either every node has a host or none: %s"
                             % ", ".join("%s host=%s" % (n.name, n.host) for n in self.nodes))
        if not self.overlay and any(n.also_on for n in self.nodes):
            raise ValueError("also_on needs pvo on several hosts (Node(..., host=))")
        self.host_count = max([n.host for n in self.nodes] +
                              [h for n in self.nodes for h in n.also_on]) + 1 \
            if self.overlay else 0
        self._seq = 0

    # -- life cycle ---------------------------------------------------------

    def tenants(self):
        """Tenant names in order of first use; tenant i has VNI vni_base + i
        (on every host)."""
        tenants = []
        for n in self.nodes:
            if n.tenant not in tenants:
                tenants.append(n.tenant)
        return tenants

    def vni(self, tenant):
        return self.vni_base + self.tenants().index(tenant)

    def backend_config(self, host=None):
        """The back-end's config; with host, that host's in an overlay
        set-up (its VTEP and management socket, its VMs, the others as
        [remote])."""
        text = "# written by %s (%s)\n" % (paths.test_name(), __name__)
        if host is not None:
            text += "\n[daemon]\nvtep = %s\nmanagement-socket = %s\n" % (
                self.hosts.vtep(host), self.mgmt_socket(host))
            for key, value in self.daemon_options.items():
                if callable(value):
                    value = value(host)
                if value is not None:
                    text += "%s = %s\n" % (key, value)
            if self.evpn_fabric:
                text += "vxlan-port = %d\n" % evpn.BACKEND_VXLAN_PORT
        for i, t in enumerate(self.tenants()):
            text += "\n[tenant %s]\nvni = %d\nmtu = 1500\n" % (t, self.vni_base + i)
            if self._on_evpn(t):
                text += ("control-plane = evpn\nevpn-netdev = vxlan%d\nevpn-svi = br%d\n"
                         % (self.vni_base + i, self.vni_base + i))
        for n in self.nodes:
            if not n.served_on(host):
                continue
            text += "\n[vm %s]\ntenant = %s\nmac = %s\nips = %s\nsocket = %s\n" % (
                n.name, n.tenant, n.mac, n.ip, n.sock_on(host))
            for key, value in n.quotas.items():
                text += "%s = %s\n" % (key, value)
        if host is not None:
            # a [remote] behind its home host on every other host, also
            # where it is a [vm] too (for while it runs elsewhere)
            for n in self.nodes:
                if n.host != host and not self._on_evpn(n.tenant):
                    text += "\n[remote %s]\ntenant = %s\nmac = %s\nips = %s\nvtep = %s\n" % (
                        n.name, n.tenant, n.mac, n.ip, self.hosts.vtep(n.host))
        return text

    def _on_evpn(self, tenant):
        return self.evpn_fabric and (self.evpn_tenants is None or tenant in self.evpn_tenants)

    def _subnet_of(self, vni):
        """The /24 ("10.0.53") of the first guest of the tenant of vni."""
        n = next(n for n in self.nodes if self.vni(n.tenant) == vni)
        return n.ip.rsplit(".", 1)[0]

    def mgmt_socket(self, host):
        return os.path.join(self.work, "host%d.mgmt" % host)

    def backend_of(self, node):
        """The back-end serving node."""
        return self.backends[node.host] if self.overlay else self.backend

    def start(self):
        self.work = paths.private_dir(paths.test_name())
        if self.evpn_fabric:
            nets = [None] * len(self.nodes)  # taps, below
        elif len(self.nodes) == 2:
            nets = netdev.dgram_pair(self.work)
        else:
            self.hub = netdev.Hub(self.work, len(self.nodes))
            nets = self.hub.netdevs
        if self.kind == "pvo":
            for n in self.nodes:
                n.sock = os.path.join(self.work, "%s.sock" % n.name)
                n.socks = {n.host: n.sock}
                for h in n.also_on:
                    n.socks[h] = os.path.join(self.work, "%s-h%d.sock" % (n.name, h))
        if self.overlay:
            self.hosts = hosts.Hosts(self.host_count, self.logdir,
                                     shared=self.shared_host).start()
            if self.evpn_fabric:
                self.fabric = evpn.Fabric(
                    self.hosts, [self.vni(t) for t in self.tenants()], self.logdir,
                    svi_net=lambda vni: self._subnet_of(vni)).start()
                nets = [self.fabric.plug(n.host, self.vni(n.tenant), n.name)
                        for n in self.nodes]
            for h in range(self.host_count):
                self.backends.append(backend.Backend(
                    self.backend_config(h), self.logdir, self.work,
                    sockets=[n.sock_on(h) for n in self.nodes if n.served_on(h)],
                    name="backend-h%d" % h, netns=self.hosts.name(h)))
            self.backend = self.backends[0]
        elif self.kind == "pvo":
            self.backend = backend.Backend(self.backend_config(), self.logdir, self.work,
                                           sockets=[n.sock for n in self.nodes])
            self.backends = [self.backend]
        for n, net in zip(self.nodes, nets):
            extra = devices.pvrdma_overlay(n.sock, reconnect_ms=self.reconnect_ms) \
                if self.kind == "pvo" else []
            extra += self.qemu_args
            if self.guest_factory is not None:
                n.guest = self.guest_factory(self, n)
            else:
                n.guest = Guest(n.name, logdir=self.logdir,
                                ip="%s/%d" % (n.ip, self.subnet_bits), mac=n.mac, netdev=net,
                                extra_args=extra, memory=n.memory, ram_root=n.ram_root,
                                smp=n.smp, image=n.image,
                                netns=self.hosts.name(n.host) if self.evpn_fabric else None)
            n.guest.start()
        for n in self.nodes:
            n.guest.wait_boot()
        for n in self.nodes:
            self._setup_device(n)
        return self

    def device_ready(self, n):
        """Waits until n's RDMA device is there with its port ACTIVE and
        the RoCE v2 GID of n's IP (again, e.g. after restart_backend());
        sets n.gid_index."""
        self._setup_device(n)

    def _setup_device(self, n):
        n.nic = n.check("for d in /sys/class/net/*; do [ \"$(cat $d/address)\" = %s ] && "
                        "echo ${d##*/}; done; true" % n.mac).strip()
        if not n.nic:
            raise RuntimeError("%s: no NIC with MAC %s" % (n.name, n.mac))
        if self.kind == "rxe":
            n.ibdev = "rxe0"
            n.check("modprobe rdma_rxe && rdma link add rxe0 type rxe netdev %s" % n.nic,
                    timeout=120)
        else:
            n.ibdev = "pvrdma_overlay0"
            n.check("modprobe pvrdma_overlay", timeout=120)
        # The port goes ACTIVE and the GIDs of the NIC's addresses appear
        # from netdev events, shortly after the device registers.
        # Absolute paths on every try: a device that re-registers (after a
        # back-end restart) replaces its sysfs directory under a shell
        # that had entered it.
        sysfs = "/sys/class/infiniband/%s/ports/1" % n.ibdev
        script = ("p={p}; for t in $(seq 1 100); do "
                  "  if grep -qs ACTIVE $p/state; then "
                  "    for f in $(grep -lx {g} $p/gids/* 2>/dev/null); do i=${{f##*/}}; "
                  "      [ \"$(cat $p/gid_attrs/types/$i 2>/dev/null)\" = 'RoCE v2' ] && "
                  "        echo $i && exit 0; "
                  "    done; "
                  "  fi; sleep 0.1; "
                  "done; echo 'no ACTIVE port with the RoCE v2 GID {g}:'; cat $p/state; "
                  "grep -H . $p/gids/* | grep -v ':0000:0000:0000:0000:0000:0000:0000:0000$'; "
                  "exit 1".format(p=sysfs, g=n.gid))
        out = n.check(script, timeout=60)
        n.gid_index = int(out.split()[0])
        n.guest.console.note("%s: %s port active, GID index %d = %s" % (n.name, n.ibdev,
                                                                        n.gid_index, n.gid))

    def kill_backend(self):
        """SIGKILL the back-end of a one-host pvo set-up, as a crash would;
        returns its exit status. It is not reported by stop()."""
        be = self.backend
        be.proc.kill()
        status = be.stop()
        self.backends.remove(be)
        self.backend = None
        return status

    def restart_backend(self):
        """A new back-end with the same config after kill_backend(): the
        killed one's sockets are removed first, so that waiting for them
        waits for the new one."""
        for n in self.nodes:
            if os.path.exists(n.sock):
                os.unlink(n.sock)
        self.backend = backend.Backend(self.backend_config(), self.logdir, self.work,
                                       sockets=[n.sock for n in self.nodes],
                                       name="backend-restarted")
        self.backends = [self.backend]
        return self.backend

    def stop(self):
        """Stops the guests, then the back-end; with pvo, reports the
        back-end's exit status and sanitizer findings as two TAP lines."""
        for n in self.nodes:
            if n.guest is not None:
                n.guest.stop()
        if self.hub is not None:
            self.hub.close()
            with open(os.path.join(self.logdir, "hub.log"), "w") as f:
                f.write(self.hub.stats() + "\n")
            self.hub = None
        if self.overlay:
            # what the back-ends counted, for the logs (best effort)
            for be in self.backends:
                if be.alive() and not backend.missing_ctl():
                    try:
                        with open(os.path.join(self.logdir, "%s.show.txt" % be.name), "w") as f:
                            f.write(be.ctl("show", check=False, wait=0, timeout=10))
                    except OSError:
                        pass
        for be in self.backends:
            status = be.stop()
            be.tap_checks(status)
        self.backends = []
        self.backend = None
        if self.fabric is not None:
            self.fabric.stop()
            self.fabric = None
        if self.hosts is not None:
            self.hosts.close()
            self.hosts = None
        if self.work is not None:
            paths.remove_private_dir(self.work)
            self.work = None

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        self.stop()
        return False

    # -- running things -----------------------------------------------------

    def label(self, what):
        """A test name that says which device ran it."""
        return "[%s] %s" % ("pvo-overlay" if self.overlay else self.kind, what)

    def pair(self, server, server_cmd, client, client_cmd, name=None, timeout=60, ready=None,
             grace=10):
        """Runs server_cmd in the background on server, waits until it is
        ready (tcp(port), rdma_cm(port) or None: one second), runs client_cmd
        on client, then waits for the server (only grace seconds if the
        client failed). Each side runs under the guest's `timeout`, so a hang
        kills the program, not the guest. Outputs also go to
        <logdir>/<name>.server.log / .client.log."""
        self._seq += 1
        name = name or "pair%d" % self._seq
        if not re.fullmatch(r"[A-Za-z0-9_.+-]+", name):
            raise ValueError("pair name %r: use letters, digits and _.+- (it names files)" % name)
        t = int(timeout * timeout_scale())
        base = "/tmp/pvo-%s" % name
        ready_out = self._start_server(server, base, t, server_cmd, ready)
        if ready_out is not None:
            server_rc, server_out = self._collect(server, base, 10)
            res = PairResult(name, server_rc, ready_out + server_out, None,
                             "(not started: the server did not become ready)")
        else:
            client_rc, client_out = client.run("timeout -k 5 %d %s" % (t, client_cmd),
                                               timeout=t + 30)
            if client_rc in (124, 137):
                client_out += "\n(killed by timeout after %d s)" % t
            server_rc, server_out = self._collect(server, base,
                                                  t + 10 if client_rc == 0 else grace)
            res = PairResult(name, server_rc, server_out, client_rc, client_out)
        for side, text in (("server", res.server_out), ("client", res.client_out)):
            with open(os.path.join(self.logdir, "%s.%s.log" % (name, side)), "w") as f:
                f.write(text)
        return res

    def start_pair(self, server, server_cmd, client, client_cmd, name, timeout=60, ready=None):
        """As pair(), but the client runs in the background as well, its
        output to a file in the guest: for work that must span something
        the harness does meanwhile (a migration). finish_pair() waits and
        returns the PairResult."""
        if not re.fullmatch(r"[A-Za-z0-9_.+-]+", name):
            raise ValueError("pair name %r: use letters, digits and _.+- (it names files)" % name)
        t = int(timeout * timeout_scale())
        sbase, cbase = "/tmp/pvo-%s" % name, "/tmp/pvo-%s-client" % name
        job = {"name": name, "server": server, "client": client, "t": t,
               "sbase": sbase, "cbase": cbase, "failed": None}
        job["failed"] = self._start_server(server, sbase, t, server_cmd, ready)
        if job["failed"] is None:
            # line-buffered: what a killed client printed is still seen
            client.check("rm -f {b}.status {b}.log {b}.pid; ( timeout -k 5 {t} stdbuf -oL "
                         "{cmd} & echo $! >{b}.pid; wait $!; echo $? >{b}.status ) "
                         ">{b}.log 2>&1 </dev/null &".format(b=cbase, t=t, cmd=client_cmd))
        return job

    def still_running(self, jobs, what):
        """One TAP line: no client of these start_pair() jobs has exited
        yet, i.e. the work spans what the harness did meanwhile (e.g. a
        migration's switch-over), not just its start."""
        out = []
        for j in jobs:
            rc, o = j["client"].run("[ -s {b}.status ] && echo \"{n}: client exited with "
                                    "status $(cat {b}.status)\"; true"
                                    .format(b=j["cbase"], n=j["name"]))
            out.append(o.strip() if rc == 0 else "%s: cannot look (%s)" % (j["name"], o))
        tap.ok(not any(out), self.label("the traffic still runs after %s" % what),
               diag="\n".join(o for o in out if o))

    def finish_pair(self, job):
        """Waits for a start_pair() job (client, then server) and returns
        its PairResult; outputs also in <logdir>/<name>.{server,client}.log."""
        if job["failed"] is not None:
            server_rc, server_out = self._collect(job["server"], job["sbase"], 10)
            res = PairResult(job["name"], server_rc, job["failed"] + server_out, None,
                             "(not started: the server did not become ready)")
        else:
            client_rc, client_out = self._collect(job["client"], job["cbase"], job["t"] + 10)
            server_rc, server_out = self._collect(job["server"], job["sbase"],
                                                  job["t"] + 10 if client_rc == 0 else 10)
            res = PairResult(job["name"], server_rc, server_out, client_rc, client_out)
        for side, text in (("server", res.server_out), ("client", res.client_out)):
            with open(os.path.join(self.logdir, "%s.%s.log" % (job["name"], side)), "w") as f:
                f.write(text)
        return res

    def _start_server(self, server, base, t, cmd, ready):
        """Starts cmd in the background and waits until it is ready, in one
        guest command. None when ready, else the reason."""
        script = ("rm -f {b}.status {b}.log {b}.pid; "
                  "( timeout -k 5 {t} {cmd} & echo $! >{b}.pid; wait $!; echo $? >{b}.status ) "
                  ">{b}.log 2>&1 </dev/null & ".format(b=base, t=t, cmd=cmd))
        if ready is None:
            script += ("sleep 1; [ -s {b}.status ] || exit 0; "
                       "echo '(server exited at once)'; exit 1".format(b=base))
        else:
            if ready[0] == "tcp":
                check = "ss -Hltn 'sport = :%d' | grep -q ." % ready[1]
            elif ready[0] == "rdma_cm":
                # rdma_listen() shows LISTEN a moment before the IB CM
                # listener exists (a REQ then gets REJ "invalid service
                # ID"): wait for the device's listener, then a little more.
                check = ("rdma resource show cm_id 2>/dev/null | "
                         "grep -q 'link %s/. .*state LISTEN.*:%d\\b' && sleep 0.5"
                         % (server.ibdev, ready[1]))
            else:
                raise ValueError("ready=%r" % (ready,))
            script += ("end=$((SECONDS + 20)); while [ $SECONDS -lt $end ]; do {c} && exit 0; "
                       "[ -s {b}.status ] && break; sleep 0.1; done; "
                       "echo '(server not ready: exited, or not listening after 20 s)'; exit 1"
                       .format(c=check, b=base))
        rc, out = server.run(script, timeout=60)
        return None if rc == 0 else out

    def _collect(self, server, base, grace):
        """Waits up to grace seconds for the server to exit (then kills it);
        returns (exit status or None, output)."""
        rc, out = server.run(
            "end=$((SECONDS + {n})); while [ $SECONDS -lt $end ] && ! [ -s {b}.status ]; do "
            "sleep 0.1; done; "
            "if ! [ -s {b}.status ]; then kill $(cat {b}.pid) 2>/dev/null; sleep 1; "
            "echo killed >{b}.status; fi; cat {b}.log; echo \"@@status=$(cat {b}.status)\""
            .format(n=int(grace), b=base), timeout=grace + 30)
        m = re.search(r"@@status=(\S+)\s*$", out)
        body = out[:m.start()] if m else out
        status = m.group(1) if m else "?"
        if status.isdigit():
            return int(status), body
        return None, body + "\n(server killed: still running %d s after the client)" % grace

    def dmesg_checks(self):
        """One TAP line per guest: no kernel BUG/Oops/WARNING."""
        for n in self.nodes:
            # ("traps: prog[pid] general protection fault ..." is a user
            # program's crash: the test that ran it reports it)
            rc, out = n.run("dmesg | grep -E 'BUG|Oops|WARNING|general protection|"
                            "UBSAN|KASAN|refcount_t' | grep -v ' traps: ' ; true")
            tap.ok(out.strip() == "", self.label("%s: guest kernel log has no BUG/Oops/WARNING"
                                                 % n.name), diag=out)


TAP_LINE = re.compile(r"^(ok|not ok) \d+ - (.*?)(?: # SKIP (.*))?$")


def forward_tap(label, text):
    """Re-emits the TAP lines a test program printed ("ok N - name", with
    the "# ..." lines after a failure as its diagnostics) as our own, each
    name passed through label(); returns how many there were."""
    lines = text.splitlines()
    count = 0
    for i, line in enumerate(lines):
        m = TAP_LINE.match(line)
        if not m:
            continue
        count += 1
        if m.group(3):
            tap.skip(label(m.group(2)), m.group(3))
            continue
        detail = []
        for follow in lines[i + 1:]:
            if not follow.startswith("# "):
                break
            detail.append(follow[2:])
        tap.ok(m.group(1) == "ok", label(m.group(2)), diag="\n".join(detail))
    return count
