"""-netdev back-ends for test guests (without the id=, which Guest adds)."""

import collections
import os
import re
import select
import socket
import threading

USER = "user"
# A migration's destination QEMU binds PATH.mig<N> and takes over PATH when
# the guest switches (migration.py); the socket keeps its bound name.
MIGRATED_PATH = re.compile(r"^(.*)\.mig\d+$")


def dgram_pair(directory):
    """Two netdevs that join two guests by one virtual Ethernet cable: each
    guest sends datagrams to the other's unix socket in directory. No TCP
    ports, so tests can run in parallel; no start-up order between the
    guests."""
    a = os.path.join(directory, "net-a.sock")
    b = os.path.join(directory, "net-b.sock")
    spec = "dgram,local.type=unix,local.path=%s,remote.type=unix,remote.path=%s"
    return spec % (a, b), spec % (b, a)


class Hub:
    """An Ethernet hub for more than two guests: each guest's dgram netdev
    sends to the hub's unix socket, and a thread in the test process floods
    every frame to the other guests. No TCP ports, no start-up order.

        hub = Hub(directory, 3)
        Guest(..., netdev=hub.netdevs[i])
        ...
        hub.close()     # hub.stats() says what it forwarded and dropped

    A guest that migrated sends from PATH.mig<N> (migration.py renamed it
    over its member path): frames from there count as that member's.

    A unix datagram socket queues only net.unix.max_dgram_qlen (10) frames,
    so a guest busy under TCG soon refuses more: frames wait in a queue per
    guest (up to QUEUE) instead of stalling the hub, and beyond that they
    are dropped, as a congested switch would.
    """

    QUEUE = 2048

    def __init__(self, directory, count):
        self.path = os.path.join(directory, "hub.sock")
        self.members = [os.path.join(directory, "net-%d.sock" % i) for i in range(count)]
        spec = "dgram,local.type=unix,local.path=%s,remote.type=unix,remote.path=%s"
        self.netdevs = [spec % (m, self.path) for m in self.members]
        self.received = 0
        self.sent = 0
        self.dropped = 0
        self.error = None
        self._queues = {m: collections.deque() for m in self.members}
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sock.bind(self.path)
        self._sock.setblocking(False)
        self._closed = False
        self._thread = threading.Thread(target=self._run, daemon=True, name="ethernet-hub")
        self._thread.start()

    def _run(self):
        try:
            self._loop()
        except Exception as err:  # noqa: B902 - keep it for stats(); the guests see silence
            self.error = "%s: %s" % (type(err).__name__, err)

    def _loop(self):
        while not self._closed:
            waiting = any(self._queues.values())
            readable, _, _ = select.select([self._sock], [], [], 0.005 if waiting else 0.2)
            while readable:
                try:
                    frame, sender = self._sock.recvfrom(65536)
                except (BlockingIOError, InterruptedError):
                    break
                self.received += 1
                if sender not in self._queues:
                    m = MIGRATED_PATH.match(sender or "")
                    if m and m.group(1) in self._queues:
                        sender = m.group(1)
                for member, queue in self._queues.items():
                    if member == sender:
                        continue
                    if len(queue) >= self.QUEUE:
                        self.dropped += 1
                    else:
                        queue.append(frame)
            for member, queue in self._queues.items():
                while queue:
                    try:
                        self._sock.sendto(queue[0], socket.MSG_DONTWAIT, member)
                    except (BlockingIOError, InterruptedError):
                        break  # that guest's queue is full: later
                    except OSError:
                        # not up (yet) or gone: nobody to deliver to
                        self.dropped += len(queue)
                        queue.clear()
                        break
                    queue.popleft()
                    self.sent += 1

    def stats(self):
        return ("hub: %d frames in, %d out, %d dropped%s"
                % (self.received, self.sent, self.dropped,
                   "; the hub thread died: %s" % self.error if self.error else ""))

    def close(self):
        self._closed = True
        self._thread.join(timeout=2)
        self._sock.close()
