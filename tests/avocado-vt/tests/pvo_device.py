"""The device in each guest: the virtio device (ID 42) bound to
pvrdma_overlay, its ib_device with port 1 ACTIVE on the NIC of the
VM's MAC, link layer Ethernet, and the RoCE v2 GID of the VM's address.
"""

from provider import pvo_rdma
from provider.pvo_rdma import require


def run(test, params, env):
    for n in pvo_rdma.nodes(params, env):
        out = n.check("for d in /sys/bus/virtio/devices/*; do "
                      "[ \"$(cat $d/device)\" = 0x002a ] && "
                      "echo \"$(cat $d/vendor) $(readlink $d/driver)\"; done; true")
        require(out.strip().endswith("/pvrdma_overlay"),
                "%s: a virtio device 0x002a bound to pvrdma_overlay" % n.name, out)
        out = n.check("ibv_devinfo -d %s" % n.ibdev)
        require("PORT_ACTIVE" in out and "Ethernet" in out,
                "%s: ibv_devinfo: port PORT_ACTIVE, link_layer Ethernet" % n.name, out)
        out = n.check("rdma link show %s/1" % n.ibdev)
        require("state ACTIVE" in out and ("netdev %s" % n.nic) in out,
                "%s: rdma link: ACTIVE on netdev %s" % (n.name, n.nic), out)
