"""-netdev back-ends for test guests (without the id=, which Guest adds)."""

import os

USER = "user"


def dgram_pair(directory):
    """Two netdevs that join two guests by one virtual Ethernet cable: each
    guest sends datagrams to the other's unix socket in directory. No TCP
    ports, so tests can run in parallel; no start-up order between the
    guests."""
    a = os.path.join(directory, "net-a.sock")
    b = os.path.join(directory, "net-b.sock")
    spec = "dgram,local.type=unix,local.path=%s,remote.type=unix,remote.path=%s"
    return spec % (a, b), spec % (b, a)
