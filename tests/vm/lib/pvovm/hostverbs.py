"""Two TCG guests as hosts with RDMA devices (rdma_rxe), for the
host-verbs transport's tests and benchmark: tenants on VXLAN netdevs
carrying rxe, GID look-ups, and t-hostverbs-xhost runs between the two.

    with RdmaGuests([Node("h1", ...), Node("h2", ...)], kind="rxe") as rg:
        tenant_netdevs(rg)
        res = xhost(rg, exe, build, ("vm", "rxe_blue", "vxlan100", "10.1.0.9"),
                    ("plain", "rxe_blue", "vxlan100", "10.1.0.1"), "name")
"""

import os

from . import paths

# tenant -> (VXLAN netdev, VNI, rxe device); VM addresses on each host
TENANTS = {"blue": ("vxlan100", 100, "rxe_blue"), "red": ("vxlan200", 200, "rxe_red")}
ADDRS = {"h1": {"blue": "10.1.0.1", "red": "10.1.0.2"},
         "h2": {"blue": "10.1.0.9", "red": "10.1.0.9"}}


def tenant_netdevs(rg, tenants=("blue", "red")):
    """The tenants on both host guests, as a multi-tenant RoCE host has
    them: a VXLAN netdev per tenant (VNI 100 blue, 200 red) with rdma_rxe
    on it, and the same subnet in each (10.1.0.0/24)."""
    h1, h2 = rg.nodes
    for me, other in ((h1, h2), (h2, h1)):
        for t in tenants:
            name, vni, dev = TENANTS[t]
            me.check("ip link add {n} type vxlan id {v} local {me} remote {o} dstport 4789 "
                     "dev {nic} && ip link set {n} up && ip addr add {ip}/24 dev {n} && "
                     "rdma link add {d} type rxe netdev {n}"
                     .format(n=name, v=vni, me=me.ip, o=other.ip, nic=me.nic,
                             ip=ADDRS[me.name][t], d=dev))


def datapath_addresses(h):
    """The addresses of t-datapath's VMs (a 10.0.0.1, b 10.0.0.2) on h's
    NIC, whose rxe0 carries the suite's back-ends: returned once rxe0 has
    their GIDs (it learns them from netdev events)."""
    h.check("ip addr add 10.0.0.1/24 dev {n} && ip addr add 10.0.0.2/24 dev {n}"
            .format(n=h.nic))
    h.check("for t in $(seq 1 100); do "
            "n=$(grep -lE '0000:0000:0000:0000:0000:ffff:0a00:000[12]$' "
            "/sys/class/infiniband/rxe0/ports/1/gids/* | wc -l); "
            "[ $n -ge 2 ] && exit 0; sleep 0.1; done; exit 1", timeout=30)


PLACE = os.path.join(paths.REPO, "tests", "vm", "lib", "pvo-hv-place")
LINK = os.path.join(paths.REPO, "tests", "vm", "lib", "pvo-hv-link")


def datapath_devices(h):
    """t-datapath's host devices in host guest h, as two hosts' NICs on
    one link: rdma_rxe on each end of a veth pair, rxe_h1 on pv1 (the
    suite's hosts 1 and 2) and rxe_h3 on pv3 (host 3, a migration's
    destination). Both ends' addresses are this kernel's own, which it
    would loop back (rdma_rxe takes a packet only on its own netdev): what
    an end sends to an address on the other end leaves by that end
    instead (a table per sending interface, looked up before the local
    one; addresses of our own accepted as sources on arrival). The VMs'
    addresses (a 10.0.0.1, b 10.0.0.2) start on pv1; pvo-hv-place moves
    one with its VM (the other stays: secondaries are promoted), and
    pvo-hv-link drops what one end sends, as answers a switch-over
    loses. Returns t-datapath's environment for them."""
    h.check("ip link add pv1 type veth peer name pv3 && "
            "for i in all default pv1 pv3; do "
            "sysctl -qw net.ipv4.conf.$i.accept_local=1 net.ipv4.conf.$i.rp_filter=0 "
            "net.ipv4.conf.$i.promote_secondaries=1; "
            "done && ip link set pv1 up && ip link set pv3 up && "
            "ip rule add pref 10 oif pv1 lookup 101 && "
            "ip rule add pref 11 oif pv3 lookup 103 && "
            "ip rule add pref 100 lookup local && ip rule del pref 0 lookup local && "
            "rdma link add rxe_h1 type rxe netdev pv1 && "
            "rdma link add rxe_h3 type rxe netdev pv3")
    for ip in ("10.0.0.1", "10.0.0.2"):
        h.check("%s %s pv1" % (PLACE, ip), timeout=30)
    # the back-ends' logs stay in the guest: their tails reach the test's
    # output if a check fails
    return ("T_DATAPATH_HOSTVERBS=rxe_h1:pv1 T_DATAPATH_HOSTVERBS3=rxe_h3:pv3 "
            "T_DATAPATH_HV_PLACE=%s T_DATAPATH_HV_LINK=%s "
            "T_DATAPATH_DUMP_LOGS=150" % (PLACE, LINK))


def end(kind, host, tenant="blue"):
    """An end of t-hostverbs-xhost: (KIND, DEV, NETDEV, IP) of tenant on
    host ("h1" / "h2"); kind "vm" (a simulated VM behind a back-end) or
    "plain" (libibverbs on the device)."""
    name, _, dev = TENANTS[tenant]
    return (kind, dev, name, ADDRS[host][tenant])


def gid_index(node, dev, ip):
    """The RoCE v2 GID index of an IPv4 address on node's dev."""
    tail = "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x" % tuple(
        int(x) for x in ip.split("."))
    return node.check("p=/sys/class/infiniband/{d}/ports/1; for t in $(seq 1 100); do "
                      "for f in $(grep -l '{g}$' $p/gids/*); do i=${{f##*/}}; "
                      "[ \"$(cat $p/gid_attrs/types/$i)\" = 'RoCE v2' ] && echo $i && exit 0; "
                      "done; sleep 0.1; done; exit 1".format(d=dev, g=tail),
                      timeout=30).split()[0]


def xhost(rg, exe, build, server, client, name, cases=None, timeout=600, port=18600,
          env="", server_env="", client_env=""):
    """t-hostverbs-xhost (exe, with build's back-end) between the host
    guests: server end on h2, the agent; client end on h1, which drives
    the cases and prints the TAP. env goes to both, server_env and
    client_env to one. Returns rg.pair()'s PairResult (logs:
    <logdir>/xhost-<name>.{server,client}.log)."""
    h1, h2 = rg.nodes
    common = ("PVO_BUILD={b} PVO_BACKEND={b}/backend/pvrdma-overlayd T_XHOST_PORT={p} "
              # module+offset stack frames: no symbolizer in the guests
              "ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:symbolize=0 "
              "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 {e}"
              ).format(b=build, p=port, e=env)
    if cases:
        common += " T_XHOST_CASES=" + cases
    return rg.pair(h2, "env %s %s T_XHOST=server:%s %s"
                   % (common, server_env, ":".join(server), exe),
                   h1, "env %s %s T_XHOST=client:%s:%s %s"
                   % (common, client_env, ":".join(client), h2.ip, exe),
                   name="xhost-" + name, timeout=timeout, ready=("tcp", port))
