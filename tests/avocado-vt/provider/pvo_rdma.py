"""Shared steps of the pvrdma-overlay tests: log into a guest, find its
RDMA device and RoCE v2 GID, run a server / client pair of programs.

Only avocado-vt's own interfaces are used (VM objects from env, aexpect
sessions), so the tests run against any guest image that has the
pvrdma_overlay module, rdma-core with our provider and perftest.

Parameters (per VM through avocado-vt's _<vm> suffixes):
  pvo_ip          the guest's address on the NIC the back-end configured
                  (pvo_prefix bits, default 24); set on the NIC if missing
  pvo_mac         that NIC's MAC (the back-end's "mac" for the VM)
  pvo_ibdev       RDMA device name (default pvrdma_overlay0)
  pvo_login       serial (default: the first serial console) or remote
                  (vm.wait_for_login(), e.g. ssh on a cloud image)
  pvo_login_attempt  seconds one serial login attempt waits (default 3;
                  avocado-vt's own default waits 10 s for boot output
                  even when a reused VM's shell is already up)
  pvo_modprobe    load the driver first (default yes)
"""

import logging
import re
import shlex
import time

from avocado.core import exceptions

LOG = logging.getLogger("avocado.test")


class Node:
    """A guest under test: its VM, a shell session and its RDMA identity."""

    def __init__(self, vm, params):
        self.vm = vm
        self.name = vm.name
        self.params = params.object_params(vm.name)
        self.ip = self.params["pvo_ip"]
        self.mac = self.params["pvo_mac"].lower()
        self.ibdev = self.params.get("pvo_ibdev", "pvrdma_overlay0")
        self.session = None
        self.nic = None
        self.gid_index = None

    @property
    def gid(self):
        return "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x" % tuple(
            int(x) for x in self.ip.split("."))

    def login(self, recreate=False):
        """A shell session; recreate: a new serial console first (after the
        VM moved to another QEMU, e.g. a migration)."""
        timeout = int(self.params.get("login_timeout", 360))
        if self.params.get("pvo_login", "serial") == "serial":
            attempt = int(self.params.get("pvo_login_attempt", 3))
            self.session = self.vm.wait_for_serial_login(
                timeout=timeout, internal_timeout=attempt, recreate_serial_console=recreate)
        else:
            self.session = self.vm.wait_for_login(timeout=timeout)
        # no line editing: readline redraws a long command line at the
        # terminal's width and wraps it in bracketed-paste escapes (bash
        # 5.2's default, e.g. Debian 13), an echo the session could not
        # tell from the output; off first (its own output is dropped)
        self.session.cmd_output("set +o emacs; set +o vi")
        # no job-control notices, no pager
        self.session.cmd("set +m; export PAGER=cat SYSTEMD_PAGER=cat")
        return self

    def run(self, cmd, timeout=60):
        """(status, output) of cmd in a subshell of the guest's shell (an
        exit or cd stays in it)."""
        LOG.debug("%s$ %s", self.name, cmd)
        status, out = self.session.cmd_status_output("( %s )" % cmd, timeout=timeout)
        LOG.debug("%s: exit %s\n%s", self.name, status, out)
        return status, out

    def check(self, cmd, timeout=60, what=None):
        status, out = self.run(cmd, timeout)
        if status != 0:
            raise exceptions.TestFail("%s: %s: exit status %s:\n%s"
                                      % (self.name, what or cmd, status, out[-3000:]))
        return out

    def setup_rdma(self):
        """NIC by MAC with its address, driver loaded, port ACTIVE with the
        RoCE v2 GID of pvo_ip; sets nic and gid_index. TestFail otherwise."""
        self.nic = self.check(
            "for d in /sys/class/net/*; do [ \"$(cat $d/address)\" = %s ] && "
            "echo ${d##*/}; done; true" % self.mac).strip()
        if not self.nic:
            raise exceptions.TestFail("%s: no NIC with MAC %s" % (self.name, self.mac))
        prefix = self.params.get("pvo_prefix", "24")
        self.check("ip -4 -br addr show dev {n} | grep -qw {ip} || ip addr add {ip}/{p} dev {n}; "
                   "ip link set {n} up".format(n=self.nic, ip=self.ip, p=prefix))
        if self.params.get("pvo_modprobe", "yes") == "yes":
            self.check("modprobe pvrdma_overlay && modprobe rdma_ucm", timeout=120)
        # The port goes ACTIVE and the GIDs of the NIC's addresses appear
        # from netdev events, shortly after the device registers.
        script = ("cd /sys/class/infiniband/{d}/ports/1 2>/dev/null || "
                  "{{ echo 'no RDMA device {d}'; ls /sys/class/infiniband; exit 1; }}; "
                  "for t in $(seq 1 100); do "
                  "  if grep -q ACTIVE state; then "
                  "    for f in $(grep -lx {g} gids/* 2>/dev/null); do i=${{f##*/}}; "
                  "      [ \"$(cat gid_attrs/types/$i 2>/dev/null)\" = 'RoCE v2' ] && "
                  "        echo $i && exit 0; "
                  "    done; "
                  "  fi; sleep 0.1; "
                  "done; echo 'no ACTIVE port with the RoCE v2 GID {g}:'; cat state; "
                  "grep -H . gids/* | grep -v ':0000:0000:0000:0000:0000:0000:0000:0000$'; "
                  "exit 1".format(d=self.ibdev, g=self.gid))
        out = self.check(script, timeout=60, what="port ACTIVE with the RoCE v2 GID of %s" % self.ip)
        self.gid_index = int(out.split()[-1])
        LOG.info("%s: %s on %s, port ACTIVE, GID index %d = %s", self.name, self.ibdev,
                 self.nic, self.gid_index, self.gid)
        return self


def nodes(params, env, names=None):
    """Logged-in Nodes for the VMs names (default: params["vms"]), their
    devices set up."""
    out = []
    for name in (names or params.objects("vms")):
        vm = env.get_vm(name)
        vm.verify_alive()
        out.append(Node(vm, params).login())
    for n in out:
        n.setup_rdma()
    return out


class Pair:
    """Outcome of pair(): exit statuses and outputs of both sides."""

    def __init__(self, name, server_rc, server_out, client_rc, client_out):
        self.name = name
        self.server_rc, self.server_out = server_rc, server_out
        self.client_rc, self.client_out = client_rc, client_out

    @property
    def ok(self):
        return self.server_rc == 0 and self.client_rc == 0

    def diag(self):
        return ("%s: server exit %s, client exit %s\n--- server:\n%s\n--- client:\n%s"
                % (self.name, self.server_rc, self.client_rc, self.server_out[-2500:],
                   self.client_out[-2500:]))


def ready_check(server, ready):
    """A guest command that succeeds once the server listens: ("tcp", port)
    or ("rdma_cm", port)."""
    kind, port = ready
    if kind == "tcp":
        return "ss -Hltn 'sport = :%d' | grep -q ." % port
    # rdma_listen() shows LISTEN a moment before the IB CM listener exists
    return ("rdma resource show cm_id 2>/dev/null | "
            "grep -q 'link %s/. .*state LISTEN.*:%d\\b' && sleep 0.5" % (server.ibdev, port))


def start_background(node, cmd, base, timeout):
    """Start cmd detached (its own session: no job notices), its output in
    base.out and exit status in base.rc."""
    script = "timeout -k 5 %d %s >%s.out 2>&1; echo $? >%s.rc" % (timeout, cmd, base, base)
    node.check("rm -f %s.out %s.rc; setsid -f bash -c %s >/dev/null 2>&1 </dev/null"
               % (base, base, shlex.quote(script)))


def collect_background(node, base, timeout):
    """(status, output) of a start_background() command once it ended."""
    status, out = node.run("for i in $(seq 1 %d); do [ -s %s.rc ] && break; sleep 0.2; done; "
                           "cat %s.rc 2>/dev/null || echo none; cat %s.out"
                           % (timeout * 5, base, base, base), timeout=timeout + 30)
    first, _, rest = out.partition("\n")
    try:
        rc = int(first.strip())
    except ValueError:
        rc = None
    return rc, rest


def pair(server, server_cmd, client, client_cmd, name, ready=None, timeout=120):
    """Run server_cmd on server in the background, wait until it is ready
    (ready_check()), run client_cmd on client; returns a Pair."""
    base = "/tmp/pvo-%s-server" % name
    start_background(server, server_cmd, base, timeout)
    if ready:
        status, out = server.run("end=$((SECONDS + 20)); while [ $SECONDS -lt $end ]; do "
                                 "%s && exit 0; [ -s %s.rc ] && break; sleep 0.1; done; exit 1"
                                 % (ready_check(server, ready), base), timeout=40)
        if status != 0:
            rc, sout = collect_background(server, base, 5)
            return Pair(name, rc, sout + "\n(server not ready: exited, or not listening "
                        "after 20 s)", None, "(not started)")
    else:
        time.sleep(1)
    crc, cout = client.run("timeout -k 5 %d %s 2>&1" % (timeout, client_cmd), timeout=timeout + 30)
    src, sout = collect_background(server, base, timeout)
    return Pair(name, src, sout, crc, cout)


def require(ok, what, diag=""):
    """TestFail naming what, with diag, unless ok; logs a pass otherwise."""
    if not ok:
        raise exceptions.TestFail("%s\n%s" % (what, diag))
    LOG.info("PASS: %s", what)


PERFTEST_BW = r"^\s*(\d+)\s+%d\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$"
PERFTEST_LAT = r"^\s*(\d+)\s+%d\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)"


def perftest_line(kind, iters, out):
    """perftest's result line ("bw" or "lat") in out, or None."""
    m = re.search((PERFTEST_BW if kind == "bw" else PERFTEST_LAT) % iters, out, re.M)
    return m.group(0).strip() if m else None
