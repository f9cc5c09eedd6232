#!/usr/bin/env python3
"""Checks of the pvrdma-overlay QEMU device that need no guest.

QEMU runs under its qtest accelerator; this script plays the guest driver
with port I/O and MMIO commands: it enumerates the device, negotiates
features, reads the config space the back-end serves, sets the queues up,
sets DRIVER_OK (vhost starts) and writes doorbell pages. A doorbell write
must signal the same host-notifier eventfd as the queue's virtio notify
register; the eventfd counters are read from /proc/<qemu>/fdinfo. A write
to a context slot page must append the slot to the right notify ring in
guest memory (once until the back-end consumes it) and kick that ring's
queue. It also checks the realize error messages, the migration blocker
and migration itself: between two QEMU processes over a unix socket (QMP),
with the back-end state handed over through the fake back-ends, and
refused at either end.

usage: device-qtest.py [--qemu PATH] [--backend PATH]

Prints TAP and a closing '# N passed, N failed' comment; exits 1 if a check
failed, 77 if QEMU or the back-end is not built.
"""

import argparse
import base64
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

PCI_SLOT = 4
# BARs at naturally aligned addresses in the 32-bit PCI hole
BAR4_ADDR = 0xC0000000      # virtio-pci modern BAR (8 MiB with page-per-vq)
BAR1_ADDR = 0xC0800000      # MSI-X
BAR2_ADDR = 0xC2000000      # doorbell BAR (32 MiB)
RING_BASE = 0x1000000       # guest RAM used for the rings
NOTIFY_BASE = 0x3000000     # guest RAM used for the notify area
PAGE = 4096
MAC = "52:54:00:12:34:56"

with open(os.path.join(ROOT, "include/pvo-device.h")) as _f:
    HEADER = _f.read()


def header_define(name):
    m = re.search(r"#define " + name + r"\s+(0x[0-9a-fA-F]+|\d+)\b", HEADER)
    return int(m.group(1), 0)


IFACE_VERSION = header_define("PVO_INTERFACE_VERSION")
DB_SLOT_PAGE0 = header_define("PVO_DB_SLOT_PAGE0")
MAX_DB_SLOTS = header_define("PVO_MAX_DB_SLOTS")
DB_BAR_PAGES = DB_SLOT_PAGE0 + MAX_DB_SLOTS
DB_BAR_SIZE = 1 << (DB_BAR_PAGES * PAGE - 1).bit_length()   # pow2ceil
DBREG_NOTIFY_LO = header_define("PVO_DBREG_NOTIFY_LO")
DBREG_NOTIFY_HI = header_define("PVO_DBREG_NOTIFY_HI")
NOTIFY_ENTRY_OFF = header_define("PVO_NOTIFY_RING_ENTRY_OFF")
NOTIFY_CONS_OFF = 64
VQ_DB_KERNEL = header_define("PVO_VQ_DB_KERNEL")
VQ_DB_FIRST_USER = header_define("PVO_VQ_DB_FIRST_USER")


# The notify ring layout, as include/pvo-device.h's helpers compute it.
def notify_first(nq):
    return VQ_DB_FIRST_USER if nq > VQ_DB_FIRST_USER else VQ_DB_KERNEL


def notify_rings(nq):
    return nq - notify_first(nq)


def slot_queue(nq, slot):
    return notify_first(nq) + slot % notify_rings(nq)


def notify_ring_entries(nq):
    per = -(-MAX_DB_SLOTS // notify_rings(nq))
    n = 1
    while n < per:
        n <<= 1
    return n


def notify_ring_off(nq, q):
    return (q - notify_first(nq)) * (NOTIFY_ENTRY_OFF +
                                     4 * notify_ring_entries(nq))


def notify_area_size(nq):
    n = notify_rings(nq) * (NOTIFY_ENTRY_OFF + 4 * notify_ring_entries(nq))
    return (n + PAGE - 1) & ~(PAGE - 1)

# struct pvo_config: the field the VMM fills
CFG_BACKEND = 20

# virtio-pci common config offsets
CC_DFSELECT, CC_DF, CC_GFSELECT, CC_GF = 0x00, 0x04, 0x08, 0x0C
CC_NUMQ, CC_STATUS, CC_QSELECT, CC_QSIZE = 0x12, 0x14, 0x16, 0x18
CC_QENABLE, CC_QDESC, CC_QAVAIL, CC_QUSED = 0x1C, 0x20, 0x28, 0x30
ST_ACK, ST_DRIVER, ST_DRIVER_OK, ST_FEATURES_OK = 1, 2, 4, 8


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, name, detail=""):
        self.n += 1
        if not cond:
            self.failed += 1
        print(f"{'ok' if cond else 'not ok'} {self.n} - {name}")
        if not cond and detail:
            for line in str(detail).splitlines():
                print(f"# {line}")
        sys.stdout.flush()
        return cond


def run(cmd, timeout=20):
    """Run QEMU to completion; return (exit status, stderr+stdout)."""
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, timeout=timeout)
        return p.returncode, p.stderr + p.stdout
    except subprocess.TimeoutExpired:
        return None, "timed out after %d s" % timeout


class Backend:
    """pvrdma-overlayd serving one VM on a temporary socket."""

    count = 0

    def __init__(self, path, tmp, *extra, sock=None):
        Backend.count += 1
        self.sock = sock or os.path.join(tmp, f"vm{Backend.count}.sock")
        self.log = open(os.path.join(tmp, f"backend{Backend.count}.log"), "w+")
        self.proc = subprocess.Popen(
            [path, "--socket", self.sock, "--name", "qtest", "--vni", "100",
             "--mac", MAC, "--ip", "10.0.0.1", "--verbose", *extra],
            stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(100):
            if os.path.exists(self.sock) or self.proc.poll() is not None:
                break
            time.sleep(0.05)
        if not os.path.exists(self.sock):
            raise RuntimeError("back-end did not create its socket: "
                               + self.output())

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class QTest:
    """A QEMU process driven through the qtest protocol on stdin/stdout."""

    def __init__(self, qemu_cmd, tmp):
        self.errfile = tempfile.TemporaryFile(mode="w+", dir=tmp)
        self.proc = subprocess.Popen(
            qemu_cmd + ["-accel", "qtest", "-qtest", "stdio",
                        "-qtest-log", "/dev/null"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.errfile)
        self.buf = b""

    def stderr(self):
        self.errfile.flush()
        self.errfile.seek(0)
        return self.errfile.read()

    def _line(self, timeout=10):
        end = time.time() + timeout
        while b"\n" not in self.buf:
            left = end - time.time()
            if left <= 0:
                raise RuntimeError("qtest: no answer")
            r, _, _ = select.select([self.proc.stdout], [], [], left)
            if r:
                data = os.read(self.proc.stdout.fileno(), 4096)
                if not data:
                    raise RuntimeError("qtest: QEMU exited: " +
                                       self.stderr())
                self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()

    def cmd(self, text):
        self.proc.stdin.write(text.encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            line = self._line()
            if line.startswith("IRQ"):
                continue
            if not line.startswith("OK"):
                raise RuntimeError(f"qtest: {text}: {line}")
            return line.split()[1:]

    def read(self, width, addr):
        return int(self.cmd(f"read{width} {addr:#x}")[0], 16)

    def write(self, width, addr, val):
        self.cmd(f"write{width} {addr:#x} {val:#x}")

    def cfg_read32(self, reg):
        self.cmd(f"outl 0xcf8 {0x80000000 | PCI_SLOT << 11 | reg & 0xfc:#x}")
        return int(self.cmd("inl 0xcfc")[0], 16)

    def cfg_read8(self, reg):
        return self.cfg_read32(reg) >> 8 * (reg & 3) & 0xFF

    def cfg_write32(self, reg, val):
        self.cmd(f"outl 0xcf8 {0x80000000 | PCI_SLOT << 11 | reg & 0xfc:#x}")
        self.cmd(f"outl 0xcfc {val:#x}")

    def bar_size(self, reg):
        """Probe a 32-bit memory BAR: (low flag bits, size)."""
        self.cfg_write32(reg, 0xFFFFFFFF)
        bar = self.cfg_read32(reg)
        return bar & 0xF, (~(bar & 0xFFFFFFF0) & 0xFFFFFFFF) + 1

    def memread(self, addr, size):
        return base64.b64decode(self.cmd(f"b64read {addr:#x} {size:#x}")[0])

    def memset(self, addr, size, val=0):
        self.cmd(f"memset {addr:#x} {size:#x} {val:#x}")

    def eventfd_counts(self):
        counts = {}
        fddir = f"/proc/{self.proc.pid}/fd"
        for fd in os.listdir(fddir):
            try:
                if "eventfd" not in os.readlink(f"{fddir}/{fd}"):
                    continue
                with open(f"/proc/{self.proc.pid}/fdinfo/{fd}") as f:
                    m = re.search(r"eventfd-count:\s*([0-9a-f]+)", f.read())
                counts[int(fd)] = int(m.group(1), 16)
            except (OSError, AttributeError):
                pass
        return counts

    def signalled_by(self, width, addr, val=1):
        """Eventfds whose counter moved when the guest wrote addr."""
        before = self.eventfd_counts()
        self.write(width, addr, val)
        time.sleep(0.05)
        after = self.eventfd_counts()
        return sorted(fd for fd, c in after.items() if c != before.get(fd, 0))

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def base_cmd(qemu):
    return [qemu, "-machine", "q35", "-nodefaults", "-display", "none",
            "-L", "/usr/share/seabios", "-L", "/usr/share/qemu",
            "-object", "memory-backend-memfd,id=mem,size=256M,share=on",
            "-machine", "memory-backend=mem", "-m", "256M"]


def check_cli(t, qemu):
    rc, out = run([qemu, "-device", "help"])
    t.ok(rc == 0 and 'name "pvrdma-overlay", bus PCI' in out,
         "-device help lists pvrdma-overlay", out[-2000:])
    rc, out = run([qemu, "-device", "pvrdma-overlay,help"])
    t.ok(rc == 0 and all(f"{p}=" in out for p in
                         ("chardev", "doorbells", "queue-size", "vectors")),
         "-device pvrdma-overlay,help lists its properties", out)

    cmd = base_cmd(qemu) + ["-S"]
    rc, out = run(cmd + ["-device", "pvrdma-overlay"])
    t.ok(rc == 1 and "property 'chardev' is required" in out,
         "no chardev=: realize fails naming the property", out)
    rc, out = run(cmd + ["-chardev", "null,id=c0",
                         "-device", "pvrdma-overlay,chardev=c0"])
    t.ok(rc == 1 and "chardev 'c0' is not a unix socket" in out,
         "non-socket chardev is refused", out)
    rc, out = run(cmd + ["-chardev", "socket,id=c0,path=/nonexistent/pvo.sock",
                         "-device", "pvrdma-overlay,chardev=c0"])
    t.ok(rc == 1 and "/nonexistent/pvo.sock" in out,
         "missing back-end socket: the chardev error names the path", out)
    rc, out = run(cmd + ["-chardev", "socket,id=c0,path=/nonexistent/pvo.sock,"
                         "reconnect-ms=500",
                         "-device", "pvrdma-overlay,chardev=c0"], timeout=15)
    t.ok(rc == 1 and "no vhost-user back-end is listening on chardev 'c0'"
         in out and "start pvrdma-overlayd" in out,
         "reconnect-ms= without a back-end fails instead of hanging", out)
    for prop, text in (("doorbells=0", "doorbells=0 is out of range"),
                       ("doorbells=65", "doorbells=65 is out of range"),
                       ("queue-size=100", "must be a power of 2"),
                       ("iommu_platform=on", "iommu_platform=on is not")):
        rc, out = run(cmd + ["-chardev", "null,id=c0", "-device",
                             f"pvrdma-overlay,chardev=c0,{prop}"])
        t.ok(rc == 1 and text in out, f"{prop} is refused", out)


class Device:
    """The device as the guest driver sees it, set up through qtest."""

    def __init__(self, q):
        self.q = q
        q.cfg_write32(0x20, BAR4_ADDR)
        q.cfg_write32(0x24, 0)
        q.cfg_write32(0x18, BAR2_ADDR)
        q.cfg_write32(0x14, BAR1_ADDR)
        q.cfg_write32(0x04, 0x6)            # memory space + bus master
        caps = {}
        ptr = q.cfg_read8(0x34)
        while ptr:
            if q.cfg_read8(ptr) == 0x09:     # vendor-specific: virtio
                caps.setdefault(q.cfg_read8(ptr + 3),
                                (q.cfg_read32(ptr + 8), q.cfg_read32(ptr + 16)))
            ptr = q.cfg_read8(ptr + 1)
        self.common = BAR4_ADDR + caps[1][0]
        self.notify = BAR4_ADDR + caps[2][0]
        self.notify_mult = caps[2][1]
        self.isr = BAR4_ADDR + caps[3][0]
        self.devcfg = BAR4_ADDR + caps[4][0]

    def status(self):
        return self.q.read("b", self.common + CC_STATUS)

    def set_status(self, val):
        self.q.write("b", self.common + CC_STATUS, val)

    def features(self):
        q, c = self.q, self.common
        q.write("l", c + CC_DFSELECT, 0)
        feats = q.read("l", c + CC_DF)
        q.write("l", c + CC_DFSELECT, 1)
        return feats | q.read("l", c + CC_DF) << 32

    def negotiate(self):
        q, c = self.q, self.common
        self.set_status(0)
        self.set_status(ST_ACK | ST_DRIVER)
        feats = self.features()
        q.write("l", c + CC_GFSELECT, 1)
        q.write("l", c + CC_GF, 1)           # VERSION_1 only
        q.write("l", c + CC_GFSELECT, 0)
        q.write("l", c + CC_GF, 0)
        self.set_status(ST_ACK | ST_DRIVER | ST_FEATURES_OK)
        return feats

    def num_queues(self):
        return self.q.read("w", self.common + CC_NUMQ)

    def config(self):
        q, d = self.q, self.devcfg
        mac = ":".join(f"{q.read('b', d + 8 + i):02x}" for i in range(6))
        return q.read("l", d), q.read("w", d + 4), mac

    def backend(self):
        """The config's backend field: (connected, connection count)."""
        v = self.q.read("l", self.devcfg + CFG_BACKEND)
        return bool(v & 0x80000000), v & 0x7fffffff

    def start(self):
        q, c = self.q, self.common
        for n in range(self.num_queues()):
            ring = RING_BASE + n * 0x4000
            q.write("w", c + CC_QSELECT, n)
            q.write("w", c + CC_QSIZE, 16)
            q.write("q", c + CC_QDESC, ring)
            q.write("q", c + CC_QAVAIL, ring + 0x1000)
            q.write("q", c + CC_QUSED, ring + 0x2000)
            q.write("w", c + CC_QENABLE, 1)
        self.set_status(ST_ACK | ST_DRIVER | ST_FEATURES_OK | ST_DRIVER_OK)

    def kick_notify(self, n):
        return self.q.signalled_by("w", self.notify + n * self.notify_mult, n)

    def kick_doorbell(self, n, offset=0, width="l"):
        return self.q.signalled_by(width, BAR2_ADDR + n * PAGE + offset)

    def kick_slot(self, slot, offset=0, width="l"):
        return self.kick_doorbell(DB_SLOT_PAGE0 + slot, offset, width)

    def queue_notifiers(self, queues):
        """The host-notifier eventfd of each queue. QEMU's own eventfds
        (main loop, timers) may move at any time: retry until the notify
        register moves exactly one."""
        fds = {}
        for n in queues:
            for _ in range(20):
                fds[n] = self.kick_notify(n)
                if len(fds[n]) == 1:
                    break
        return fds

    def set_notify_area(self, gpa):
        self.q.write("l", BAR2_ADDR + DBREG_NOTIFY_LO, gpa & 0xFFFFFFFF)
        self.q.write("l", BAR2_ADDR + DBREG_NOTIFY_HI, gpa >> 32)

    def notify_regs(self):
        return (self.q.read("l", BAR2_ADDR + DBREG_NOTIFY_LO),
                self.q.read("l", BAR2_ADDR + DBREG_NOTIFY_HI))


def device_cmd(qemu, sock, chardev_opts="", device_opts=""):
    return base_cmd(qemu) + [
        "-chardev", f"socket,id=c0,path={sock}{chardev_opts}",
        "-device", f"pvrdma-overlay,chardev=c0,addr={PCI_SLOT:#x}{device_opts}"]


def check_device(t, qemu, backend, tmp):
    be = Backend(backend, tmp)
    q = QTest(device_cmd(qemu, be.sock), tmp)
    try:
        ids = q.cfg_read32(0)
        t.ok(ids == 0x106A1AF4, "PCI ID 1af4:106a", hex(ids))

        flags, size = q.bar_size(0x18)
        t.ok(flags == 0 and size == 32 << 20 == DB_BAR_SIZE,
             "BAR 2: 32-bit non-prefetchable memory, 32 MiB",
             f"flags {flags:#x}, size {size:#x}")

        dev = Device(q)
        t.ok(dev.notify_mult == PAGE,
             "page-per-vq: notify_off_multiplier is 4096", dev.notify_mult)
        feats = dev.negotiate()
        t.ok(feats >> 32 & 1 and not feats >> 33 & 1,
             "offers VIRTIO_F_VERSION_1, not VIRTIO_F_ACCESS_PLATFORM",
             hex(feats))
        t.ok(dev.status() & ST_FEATURES_OK, "FEATURES_OK accepted",
             dev.status())
        nq = dev.num_queues()
        t.ok(nq == 18, "18 virtqueues (control, event, 16 doorbells)", nq)
        version, cfg_nq, mac = dev.config()
        t.ok(version == IFACE_VERSION and cfg_nq == 18 and mac == MAC,
             f"config space from the back-end: version {IFACE_VERSION}, "
             "num_queues 18, the VM's MAC", f"version {version} num_queues {cfg_nq} "
             f"mac {mac}")

        dev.start()
        t.ok(dev.status() == 0xF, "DRIVER_OK: vhost started", dev.status())
        time.sleep(0.3)
        log = be.output()
        t.ok("GET_CONFIG" in log, "the back-end was asked for the config",
             log[-2000:])
        kicks = log.count("SET_VRING_KICK")
        t.ok(kicks == 18, "the back-end got a kick fd for all 18 queues",
             f"{kicks} SET_VRING_KICK messages")
    finally:
        q.close()
        be.stop()


def check_doorbells(t, qemu, fake, tmp):
    """The fake back-end leaves the kick eventfds alone: their counters
    show which queue a guest write kicked."""
    be = FakeBackend(fake, tmp, IFACE_VERSION, 66)
    q = QTest(device_cmd(qemu, be.sock), tmp)
    try:
        dev = Device(q)
        dev.negotiate()
        dev.start()
        time.sleep(0.3)
        t.ok(be.kicks() == 18, "fake back-end: all 18 kick fds handed over",
             f"{be.kicks()} SET_VRING_KICK")
        for n in (2, 3, 17):
            via_notify = dev.kick_notify(n)
            via_doorbell = dev.kick_doorbell(n)
            t.ok(len(via_notify) == 1 and via_doorbell == via_notify,
                 f"doorbell page {n} kicks queue {n}'s host notifier",
                 f"notify register -> {via_notify}, "
                 f"doorbell -> {via_doorbell}")
        fb = dev.kick_doorbell(3, offset=8)
        ref = dev.kick_notify(3)
        t.ok(fb == ref and len(fb) == 1,
             "a write elsewhere in the page kicks too (MMIO handler)",
             f"{fb} vs {ref}")
        wide = dev.kick_doorbell(17, width="q")
        t.ok(len(wide) == 1, "an 8-byte doorbell write kicks once", wide)
        for n in (1, 18, DB_SLOT_PAGE0 - 1):
            t.ok(dev.kick_doorbell(n) == [], f"doorbell page {n} is ignored")
        t.ok(q.read("l", BAR2_ADDR + 2 * PAGE) == 0, "doorbell reads are 0")

        dev.set_status(0)
        time.sleep(0.2)
        t.ok(dev.kick_doorbell(2) == [],
             "after a device reset the doorbell eventfds are unwired")
    finally:
        q.close()
        be.stop()


def check_reconnect(t, qemu, fake, tmp):
    sock = os.path.join(tmp, "reconnect.sock")
    be = FakeBackend(fake, tmp, IFACE_VERSION, 66, sock=sock)
    q = QTest(device_cmd(qemu, sock, ",reconnect-ms=200"), tmp)
    be2 = None
    try:
        dev = Device(q)
        dev.negotiate()
        dev.start()
        time.sleep(0.3)
        first = dev.kick_doorbell(2)
        t.ok(len(first) == 1, "reconnect: doorbell works", first)
        t.ok(dev.backend() == (True, 1),
             "config backend: connected, first connection", dev.backend())
        q.read("b", dev.isr)                    # clear
        be.stop()
        time.sleep(1)
        t.ok("disconnected" in q.stderr(),
             "reconnect: QEMU reports the lost back-end", q.stderr()[-2000:])
        isr = q.read("b", dev.isr)
        t.ok(isr & 2 and dev.backend() == (False, 1),
             "the lost back-end raises a config interrupt; config backend: "
             "not connected", f"isr {isr} backend {dev.backend()}")
        be2 = FakeBackend(fake, tmp, IFACE_VERSION, 66, sock=sock)
        for _ in range(50):
            if be2.kicks() >= 18:
                break
            time.sleep(0.1)
        t.ok(be2.kicks() == 18 and "GET_CONFIG" in be2.output(),
             "reconnect: config re-read, running rings handed to the new "
             "back-end", be2.output()[-1000:])
        isr = q.read("b", dev.isr)
        t.ok(isr & 2 and dev.backend() == (True, 2),
             "the new back-end raises a config interrupt; config backend: "
             "connected, second connection (the guest re-creates its "
             "objects)", f"isr {isr} backend {dev.backend()}")
        # Other eventfds may still move while the new back-end's rings
        # start (QEMU's own notifiers, first kicks): sample until a write
        # moves exactly one, on a loaded machine too.
        for _ in range(30):
            via_notify = dev.kick_notify(2)
            via_doorbell = dev.kick_doorbell(2)
            if len(via_notify) == 1 and via_doorbell == via_notify:
                break
            time.sleep(0.1)
        t.ok(len(via_notify) == 1 and via_doorbell == via_notify,
             "reconnect: the doorbell is wired to the new kick fd",
             f"{via_notify} vs {via_doorbell}")
    finally:
        q.close()
        be.stop()
        if be2:
            be2.stop()


class NotifyArea:
    """The notify area in guest memory and what it should hold."""

    def __init__(self, q, nq, gpa=NOTIFY_BASE):
        self.q, self.nq, self.gpa = q, nq, gpa
        self.size = notify_area_size(nq)
        self.clear()

    def moved_to(self, q):
        """The same area in the guest memory of a migration destination."""
        other = NotifyArea.__new__(NotifyArea)
        other.__dict__.update(self.__dict__)
        other.q, other.expect = q, bytearray(self.expect)
        return other

    def clear(self):
        self.q.memset(self.gpa, self.size, 0)
        self.expect = bytearray(self.size)

    def ring(self, queue):
        return self.gpa + notify_ring_off(self.nq, queue)

    def _put32(self, off, val):
        self.expect[off:off + 4] = val.to_bytes(4, "little")

    def _get32(self, off):
        return int.from_bytes(self.expect[off:off + 4], "little")

    def expect_append(self, slot):
        """Expect slot at the end of its ring, as the device must add it."""
        off = notify_ring_off(self.nq, slot_queue(self.nq, slot))
        prod = self._get32(off)
        self._put32(off + NOTIFY_ENTRY_OFF +
                    4 * (prod % notify_ring_entries(self.nq)), slot)
        self._put32(off, prod + 1)

    def consume(self, queue, cons):
        """Play the back-end: move the ring's cons."""
        self._put32(notify_ring_off(self.nq, queue) + NOTIFY_CONS_OFF, cons)
        self.q.write("l", self.ring(queue) + NOTIFY_CONS_OFF, cons)

    def matches(self):
        return self.q.memread(self.gpa, self.size) == self.expect

    def diff(self):
        got = self.q.memread(self.gpa, self.size)
        out = []
        for off in range(0, self.size, 4):
            if got[off:off + 4] != self.expect[off:off + 4]:
                out.append(f"+{off:#x}: got {got[off:off + 4].hex()} "
                           f"expected {self.expect[off:off + 4].hex()}")
        return "\n".join(out[:20]) or "equal"


def check_notify_rings(t, qemu, fake, tmp):
    """Slot doorbell pages against notify rings in guest memory. The fake
    back-end is never sent PVO_CMD_SET_NOTIFY_AREA and does not read the
    rings: only this script moves their cons."""
    be = FakeBackend(fake, tmp, IFACE_VERSION, 66)
    q = QTest(device_cmd(qemu, be.sock), tmp)
    try:
        dev = Device(q)
        dev.negotiate()
        dev.start()
        time.sleep(0.3)
        nq = dev.num_queues()
        area = NotifyArea(q, nq)
        low = q.memread(0, area.size)
        kick_fd = dev.queue_notifiers(range(2, nq))
        t.ok(all(len(fds) == 1 for fds in kick_fd.values()) and
             len({fds[0] for fds in kick_fd.values()}) == nq - 2,
             "every doorbell queue has a host notifier of its own", kick_fd)
        notifiers = {fd for fds in kick_fd.values() for fd in fds}

        def kick_slot(slot, offset=0, width="l"):
            """The doorbell queues a slot write kicked."""
            return [fd for fd in dev.kick_slot(slot, offset, width)
                    if fd in notifiers]

        def kick_page(page, offset, width):
            return [fd for fd in dev.kick_doorbell(page, offset, width)
                    if fd in notifiers]

        moved = kick_slot(5)
        t.ok(moved == [] and area.matches() and
             q.memread(0, area.size) == low and dev.notify_regs() == (0, 0),
             "no notify area: a slot doorbell changes nothing",
             f"moved {moved}; {area.diff()}")

        dev.set_notify_area(NOTIFY_BASE)
        t.ok(dev.notify_regs() == (NOTIFY_BASE & 0xFFFFFFFF,
                                   NOTIFY_BASE >> 32),
             "the notify registers read back", dev.notify_regs())

        slot, queue = 5, slot_queue(nq, 5)
        moved = kick_slot(slot)
        area.expect_append(slot)
        ring = q.memread(area.ring(queue), NOTIFY_ENTRY_OFF + 4)
        t.ok(int.from_bytes(ring[0:4], "little") == 1 and
             int.from_bytes(ring[NOTIFY_ENTRY_OFF:], "little") == slot and
             area.matches(),
             f"slot {slot}: appended to the ring of queue {queue} "
             f"(+{notify_ring_off(nq, queue):#x}), prod 1, entry 0, "
             "nothing else written", area.diff())
        t.ok(moved == kick_fd[queue],
             f"slot {slot} kicks queue {queue}'s host notifier",
             f"moved {moved}, queue {queue}: {kick_fd[queue]}")

        moved = kick_slot(slot, offset=0x10, width="q")
        t.ok(area.matches() and moved == [],
             "slot not consumed yet: a second doorbell appends nothing",
             f"moved {moved}; {area.diff()}")

        area.consume(queue, 1)
        moved = kick_slot(slot)
        area.expect_append(slot)
        t.ok(area.matches() and moved == kick_fd[queue],
             "after cons passed it, the slot is appended again "
             "(prod 2, entry 1) and kicks", f"moved {moved}; {area.diff()}")

        a, b = 7, 7 + notify_rings(nq)
        qa = slot_queue(nq, a)
        moved_a = kick_slot(a)
        moved_b = kick_slot(b)
        area.expect_append(a)
        area.expect_append(b)
        t.ok(slot_queue(nq, b) == qa and area.matches() and
             moved_a == moved_b == kick_fd[qa],
             f"slots {a} and {b} share queue {qa}: both appended, "
             "both kick",
             f"moved {moved_a} {moved_b}; {area.diff()}")

        last = MAX_DB_SLOTS - 1
        ql = slot_queue(nq, last)
        moved = kick_slot(last)
        area.expect_append(last)
        t.ok(area.matches() and moved == kick_fd[ql],
             f"the last slot {last} goes to queue {ql}",
             f"moved {moved}; {area.diff()}")

        regs = dev.notify_regs()
        for what, page, off, width in (
                ("a write past the last slot", DB_BAR_PAGES, 0, "l"),
                ("a write to the BAR's last page", DB_BAR_SIZE // PAGE - 1,
                 0, "l"),
                ("a write to page 1", 1, 0, "l"),
                ("a write to page 0 off the registers", 0, 8, "l"),
                ("a 1-byte write to NOTIFY_HI", 0, DBREG_NOTIFY_HI, "b")):
            moved = kick_page(page, off, width)
            t.ok(moved == [] and area.matches() and
                 dev.notify_regs() == regs,
                 f"{what} is ignored", f"moved {moved}; {area.diff()}")
        t.ok(q.read("l", BAR2_ADDR + 2 * PAGE) == 0 and
             q.read("l", BAR2_ADDR + (DB_SLOT_PAGE0 + slot) * PAGE) == 0,
             "QEMU alive; queue and slot pages read 0")

        dev.set_notify_area(0xFFFFFFFFFFFFF000)
        moved = kick_slot(slot)
        t.ok(moved == [] and area.matches() and
             q.memread(0, area.size) == low,
             "a notify area that wraps around is refused",
             f"moved {moved}; {area.diff()}")

        # A new NOTIFY_HI starts the rings over.
        area.clear()
        dev.set_notify_area(NOTIFY_BASE)
        moved = kick_slot(slot)
        area.expect_append(slot)
        t.ok(area.matches() and moved == kick_fd[queue],
             "writing NOTIFY_HI again resets the producers and slots",
             area.diff())

        dev.set_status(0)
        time.sleep(0.2)
        area.clear()
        t.ok(dev.notify_regs() == (0, 0), "a device reset clears the "
             "notify registers", dev.notify_regs())
        moved = kick_slot(slot)
        t.ok(moved == [] and area.matches(),
             "after a device reset slot doorbells are off",
             f"moved {moved}; {area.diff()}")
    finally:
        q.close()
        be.stop()

    # One doorbell queue: slots go to the kernel's queue, the BAR keeps
    # its size.
    be = FakeBackend(fake, tmp, IFACE_VERSION, 66)
    q = QTest(device_cmd(qemu, be.sock, device_opts=",doorbells=1"), tmp)
    try:
        flags, size = q.bar_size(0x18)
        t.ok(size == DB_BAR_SIZE, "doorbells=1: BAR 2 is 32 MiB too",
             f"size {size:#x}")
        dev = Device(q)
        dev.negotiate()
        dev.start()
        time.sleep(0.3)
        nq = dev.num_queues()
        kick = dev.queue_notifiers([2])[2]
        area = NotifyArea(q, nq)
        dev.set_notify_area(NOTIFY_BASE)
        moved = [[fd for fd in dev.kick_slot(s) if fd in kick]
                 for s in (9, 4000)]
        area.expect_append(9)
        area.expect_append(4000)
        t.ok(nq == 3 and notify_rings(nq) == 1 and area.matches() and
             moved == [kick, kick] and len(kick) == 1,
             "doorbells=1: slots 9 and 4000 go to the kernel queue's ring",
             f"nq {nq}, moved {moved} vs {kick}; {area.diff()}")
    finally:
        q.close()
        be.stop()


def build_fake_backend(tmp):
    """Compile fake-backend.c against libvhost-user of the QEMU source."""
    tree = subprocess.run([os.path.join(ROOT, "scripts/unpack.sh"), "qemu"],
                          capture_output=True, text=True, check=True)
    lvu = os.path.join(tree.stdout.strip(), "subprojects/libvhost-user")
    glib = subprocess.run(["pkg-config", "--cflags", "--libs", "glib-2.0"],
                          capture_output=True, text=True, check=True)
    out = os.path.join(tmp, "fake-backend")
    cc = subprocess.run(
        ["cc", "-O1", "-D_GNU_SOURCE", "-I", lvu,
         "-I", os.path.join(ROOT, "include"), "-o", out,
         os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      "fake-backend.c"),
         os.path.join(lvu, "libvhost-user.c"),
         os.path.join(lvu, "libvhost-user-glib.c"),
         *glib.stdout.split(), "-lpthread"],
        capture_output=True, text=True)
    if cc.returncode:
        raise RuntimeError("cannot build fake-backend: " + cc.stderr[-2000:])
    return out


class FakeBackend:
    count = 0

    def __init__(self, exe, tmp, version, num_queues, *opts, sock=None):
        FakeBackend.count += 1
        self.sock = sock or os.path.join(tmp, f"fake{FakeBackend.count}.sock")
        self.log = tempfile.TemporaryFile(mode="w+", dir=tmp)
        self.proc = subprocess.Popen([exe, self.sock, str(version),
                                      str(num_queues), *opts], stdout=self.log,
                                     stderr=subprocess.STDOUT)
        for _ in range(100):
            if os.path.exists(self.sock):
                break
            time.sleep(0.05)

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def kicks(self):
        return self.output().count("request 12\n")   # SET_VRING_KICK

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def check_config_handling(t, qemu, fake, tmp):
    cmd = base_cmd(qemu) + ["-S"]

    other = IFACE_VERSION + 1
    be = FakeBackend(fake, tmp, other, 66)
    rc, out = run(cmd + ["-chardev", f"socket,id=c0,path={be.sock}",
                         "-device", "pvrdma-overlay,chardev=c0"])
    be.stop()
    t.ok(rc == 1 and f"speaks device interface version {other}" in out,
         "a back-end of another interface version is refused", out)

    be = FakeBackend(fake, tmp, IFACE_VERSION, 10)
    rc, out = run(cmd + ["-chardev", f"socket,id=c0,path={be.sock}",
                         "-device", "pvrdma-overlay,chardev=c0"])
    be.stop()
    t.ok(rc == 1 and "supports at most 10" in out and "doorbells=8" in out,
         "a back-end with fewer queues is refused, naming doorbells=", out)

    be = FakeBackend(fake, tmp, IFACE_VERSION, 66)
    q = QTest(device_cmd(qemu, be.sock), tmp)
    try:
        dev = Device(q)
        dev.negotiate()
        dev.start()             # config interrupts need DRIVER_OK
        time.sleep(0.3)
        q.read("b", dev.isr)                    # clear
        gen = q.read("b", dev.common + 0x15)
        be.proc.send_signal(signal.SIGUSR1)     # new MAC
        time.sleep(0.5)
        isr = q.read("b", dev.isr)
        version, nq, mac = dev.config()
        t.ok(isr & 2 and q.read("b", dev.common + 0x15) != gen and
             mac.endswith(":11") and nq == 18,
             "back-end config change: re-read, config interrupt raised, "
             "num_queues still ours", f"isr {isr} mac {mac} nq {nq}")
        be.proc.send_signal(signal.SIGUSR2)     # bad version
        time.sleep(0.5)
        version, nq, mac = dev.config()
        t.ok(version == IFACE_VERSION and
             "keeps the old config" in q.stderr(),
             "a bad config change is reported and not shown to the guest",
             f"version {version}; {q.stderr()[-1000:]}")
    finally:
        q.close()
        be.stop()


# The state the fake back-end saves and expects: state_byte() in
# fake-backend.c.
def fake_state(seed, size):
    return bytes((i * 131 + (i >> 10) * 7 + seed * 29) & 0xFF
                 for i in range(size))


STATE_SIZE = 300000     # more than a pipe holds: the save is asynchronous


def read_bytes(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


class Qmp:
    """A minimal QMP client on a unix socket; events are kept aside."""

    def __init__(self, path, timeout=20):
        end = time.time() + timeout
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.time() > end:
                    raise RuntimeError(f"QMP socket {path} does not answer")
                time.sleep(0.1)
        self.sock.settimeout(60)
        self.f = self.sock.makefile("rw")
        self.events = []
        json.loads(self.f.readline())           # greeting
        self.cmd("qmp_capabilities")

    def cmd(self, name, **args):
        msg = {"execute": name}
        if args:
            msg["arguments"] = args
        self.f.write(json.dumps(msg) + "\n")
        self.f.flush()
        while True:
            line = self.f.readline()
            if not line:
                raise RuntimeError(f"QMP: {name}: QEMU closed the socket")
            r = json.loads(line)
            if "event" in r:
                self.events.append(r)
                continue
            return r

    def status(self):
        return self.cmd("query-status")["return"]["status"]

    def wait_migration(self, timeout=120):
        """query-migrate until the migration ended; its last answer."""
        end = time.time() + timeout
        while True:
            r = self.cmd("query-migrate")["return"]
            if r.get("status") in ("completed", "failed", "cancelled"):
                return r
            if time.time() > end:
                r["status"] = f"still {r.get('status')} after {timeout} s"
                return r
            time.sleep(0.2)

    def wait_status(self, want, timeout=30):
        end = time.time() + timeout
        while True:
            st = self.status()
            if st == want or time.time() > end:
                return st
            time.sleep(0.1)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class Vm:
    """QEMU under qtest with a QMP socket, on a fake back-end."""

    count = 0

    def __init__(self, qemu, tmp, be, *extra, chardev_opts="",
                 device_opts=""):
        Vm.count += 1
        self.qmp_path = os.path.join(tmp, f"qmp{Vm.count}.sock")
        self.q = QTest(device_cmd(qemu, be.sock, chardev_opts, device_opts) +
                       ["-qmp", f"unix:{self.qmp_path},server=on,wait=off",
                        *extra], tmp)
        try:
            self.qmp = Qmp(self.qmp_path)
        except Exception:
            self.q.close()
            raise

    def close(self):
        self.qmp.close()
        self.q.close()


def check_migration_blocker(t, qemu, fake, tmp):
    """The blocker follows the back-end: set while it cannot transfer its
    state, decided again on every disconnect and reconnect."""
    cmd = base_cmd(qemu) + ["-S"]
    be = FakeBackend(fake, tmp, IFACE_VERSION, 66)
    rc, out = run(cmd + ["-only-migratable",
                         "-chardev", f"socket,id=c0,path={be.sock}",
                         "-device", "pvrdma-overlay,chardev=c0"])
    be.stop()
    t.ok(rc == 1 and "--only-migratable" in out and
         "VHOST_USER_PROTOCOL_F_DEVICE_STATE" in out,
         "-only-migratable: a back-end without device-state transfer "
         "fails realize, saying why", out)

    sock = os.path.join(tmp, "blocker.sock")
    be = FakeBackend(fake, tmp, IFACE_VERSION, 66, sock=sock)
    vm = Vm(qemu, tmp, be, chardev_opts=",reconnect-ms=200")
    dest = "exec:cat >/dev/null"
    try:
        r = vm.qmp.cmd("migrate", uri=dest)
        err = r.get("error", {}).get("desc", "")
        t.ok("back-end on chardev 'c0' cannot transfer its RDMA state" in err
             and "VHOST_USER_PROTOCOL_F_DEVICE_STATE" in err and
             "upgrade pvrdma-overlayd" in err,
             "a back-end without VHOST_USER_PROTOCOL_F_DEVICE_STATE: "
             "migrate is refused with a message that says why", r)

        be.stop()
        for _ in range(50):
            if "disconnected" in vm.q.stderr():
                break
            time.sleep(0.1)
        r = vm.qmp.cmd("migrate", uri=dest)
        err = r.get("error", {}).get("desc", "")
        t.ok("back-end on chardev 'c0' is disconnected" in err,
             "back-end gone: migrate is refused, the back-end is "
             "disconnected", r)

        be = FakeBackend(fake, tmp, IFACE_VERSION, 66, "--device-state",
                         sock=sock)
        for _ in range(50):
            if "GET_CONFIG" in be.output():
                break
            time.sleep(0.1)
        time.sleep(0.2)
        r = vm.qmp.cmd("migrate", uri=dest)
        info = vm.qmp.wait_migration() if "return" in r else r
        t.ok(info.get("status") == "completed" and
             "CHECK save ok" in be.output(),
             "reconnected to a back-end with device-state transfer: the "
             "blocker is gone, the migration saves its state",
             f"{info}\n{be.output()[-1000:]}")
    finally:
        vm.close()
        be.stop()


def check_migration(t, qemu, fake, tmp):
    """Migration between two QEMU processes, each on its fake back-end."""
    mig = f"unix:{os.path.join(tmp, 'mig.sock')}"
    src_dump = os.path.join(tmp, "state-src")
    dst_dump = os.path.join(tmp, "state-dst")
    want = fake_state(7, STATE_SIZE)
    be_src = FakeBackend(fake, tmp, IFACE_VERSION, 66, "--device-state",
                         "--state-seed=7", f"--state-size={STATE_SIZE}",
                         f"--state-dump={src_dump}")
    be_dst = FakeBackend(fake, tmp, IFACE_VERSION, 66, "--device-state",
                         "--state-seed=7", f"--state-size={STATE_SIZE}",
                         f"--state-dump={dst_dump}")
    src = Vm(qemu, tmp, be_src)
    dst = None
    try:
        dev = Device(src.q)
        dev.negotiate()
        dev.start()
        time.sleep(0.3)
        nq = dev.num_queues()
        area = NotifyArea(src.q, nq)
        dev.set_notify_area(NOTIFY_BASE)
        slot, queue = 5, slot_queue(nq, 5)
        dev.kick_slot(slot)
        area.expect_append(slot)                # entry 0
        area.consume(queue, 1)
        dev.kick_slot(slot)
        area.expect_append(slot)                # entry 1, not consumed
        dev.kick_slot(9)
        area.expect_append(9)
        regs = dev.notify_regs()
        src.q.write("l", BAR2_ADDR + DBREG_NOTIFY_LO, 0x12345000)
        regs = (0x12345000, regs[1])            # LO alone latches nothing
        t.ok(area.matches() and dev.notify_regs() == regs,
             "source: notify area set, slots queued", area.diff())

        dst = Vm(qemu, tmp, be_dst, "-incoming", "defer")
        r = dst.qmp.cmd("migrate-incoming", uri=mig)
        t.ok("return" in r, "destination listens", r)
        r = src.qmp.cmd("migrate", uri=mig)
        info = src.qmp.wait_migration() if "return" in r else r
        t.ok(info.get("status") == "completed",
             "migration between two QEMUs completes", info)
        t.ok(dst.qmp.wait_status("running") == "running" and
             src.qmp.status() == "postmigrate",
             "destination runs, source is in postmigrate",
             f"{dst.q.stderr()[-1500:]}\n{src.q.stderr()[-1500:]}")
        t.ok("CHECK save ok, %d bytes" % STATE_SIZE in be_src.output() and
             "CHECK load ok, %d bytes" % STATE_SIZE in be_dst.output(),
             "back-ends: SET_DEVICE_STATE_FD and CHECK_DEVICE_STATE on "
             "both sides", be_src.output()[-800:] + be_dst.output()[-800:])
        got, sent = read_bytes(dst_dump), read_bytes(src_dump)
        t.ok(got == sent == want,
             f"the destination back-end received exactly the source's "
             f"{STATE_SIZE} bytes", f"sent {len(sent)}, got {len(got)}")

        ddev = Device(dst.q)
        darea = area.moved_to(dst.q)
        t.ok(ddev.status() == 0xF and ddev.notify_regs() == regs,
             "destination: DRIVER_OK and the notify registers as the "
             "source left them", f"{ddev.status()} {ddev.notify_regs()}")
        for _ in range(50):
            if be_dst.kicks() >= nq:
                break
            time.sleep(0.1)
        t.ok(be_dst.kicks() == nq,
             "destination: vhost started with the VM, all kick fds handed "
             "over", be_dst.kicks())
        kick = ddev.queue_notifiers([queue])[queue]
        moved = [fd for fd in ddev.kick_slot(slot) if fd in kick]
        t.ok(darea.matches() and moved == [],
             "destination: the slot still queued on the source appends "
             "nothing (slot bookkeeping migrated)",
             f"moved {moved}; {darea.diff()}")
        darea.consume(queue, 2)
        moved = [fd for fd in ddev.kick_slot(slot) if fd in kick]
        darea.expect_append(slot)               # entry 2, prod 3
        t.ok(darea.matches() and moved == kick and len(kick) == 1,
             "destination: after cons moves it is appended at the migrated "
             "producer and kicks the destination's queue",
             f"moved {moved} vs {kick}; {darea.diff()}")
    finally:
        src.close()
        if dst:
            dst.close()
        be_src.stop()
        be_dst.stop()

    # The destination back-end refuses the state at CHECK_DEVICE_STATE:
    # the migration fails at both ends and the source runs on. The source
    # learns of it through the return path.
    for why, opts in (("refuses the state", ["--refuse=load"]),
                      ("finds other data than it expects",
                       ["--state-seed=8"])):
        be_src = FakeBackend(fake, tmp, IFACE_VERSION, 66, "--device-state",
                             "--state-seed=7")
        be_dst = FakeBackend(fake, tmp, IFACE_VERSION, 66, "--device-state",
                             *opts)
        src = Vm(qemu, tmp, be_src)
        dst = None
        try:
            dev = Device(src.q)
            dev.negotiate()
            dev.start()
            dst = Vm(qemu, tmp, be_dst, "-incoming", "defer")
            caps = [{"capability": "return-path", "state": True}]
            for vm in (src, dst):
                vm.qmp.cmd("migrate-set-capabilities", capabilities=caps)
            dst.qmp.cmd("migrate-incoming", uri=mig,
                        **{"exit-on-error": False})
            r = src.qmp.cmd("migrate", uri=mig)
            info = src.qmp.wait_migration() if "return" in r else r
            dinfo = dst.qmp.wait_migration()
            src_status = src.qmp.wait_status("running")
            err = dst.q.stderr()
            t.ok(info.get("status") == "failed" and
                 dinfo.get("status") == "failed",
                 f"a destination back-end that {why}: the migration fails "
                 "at both ends", f"source {info}\ndestination {dinfo}")
            t.ok("back-end on chardev 'c0' did not take the migrated RDMA "
                 "state" in err and "CHECK load failed" in be_dst.output(),
                 "the destination reports the device, the chardev and the "
                 "back-end's refusal; the back-end logs its reason",
                 err[-1500:] + be_dst.output()[-500:])
            t.ok(src_status == "running" and dev.status() == 0xF and
                 "CHECK save ok" in be_src.output(),
                 "the source runs on after the failed migration",
                 f"{src_status}; {src.q.stderr()[-1000:]}")
        finally:
            src.close()
            if dst:
                dst.close()
            be_src.stop()
            be_dst.stop()

    # The source back-end refuses to hand its state over: the source
    # fails the migration itself, naming the device, and runs on.
    be = FakeBackend(fake, tmp, IFACE_VERSION, 66, "--device-state",
                     "--refuse=save")
    src = Vm(qemu, tmp, be)
    try:
        dev = Device(src.q)
        dev.negotiate()
        dev.start()
        time.sleep(0.3)
        kicks = be.kicks()
        r = src.qmp.cmd("migrate", uri="exec:cat >/dev/null")
        info = src.qmp.wait_migration() if "return" in r else r
        t.ok(info.get("status") == "failed" and
             "pvrdma-overlay/backend" in info.get("error-desc", "") and
             "back-end on chardev 'c0' did not hand over its RDMA state" in
             src.q.stderr(),
             "a source back-end that refuses to save: the migration fails "
             "naming the device and the chardev",
             f"{info}\n{src.q.stderr()[-1000:]}")
        st = src.qmp.wait_status("running")
        for _ in range(50):
            if be.kicks() >= 2 * kicks:
                break
            time.sleep(0.1)
        t.ok(st == "running" and be.kicks() == 2 * kicks,
             "the source runs on and its rings restart on the back-end",
             f"{st}, {be.kicks()} SET_VRING_KICK")
    finally:
        src.close()
        be.stop()


def check_migration_after_reconnect(t, qemu, fake, tmp):
    """The back-end connection count migrates: a destination continues
    the source's back-end state, it is not a new connection for the
    guest (subsection pvrdma-overlay-device/backend-conns)."""
    mig = f"unix:{os.path.join(tmp, 'mig-conns.sock')}"
    opts = ("--device-state", "--state-seed=3", f"--state-size={STATE_SIZE}")
    sock = os.path.join(tmp, "conns-src.sock")
    be_src = FakeBackend(fake, tmp, IFACE_VERSION, 66, *opts, sock=sock)
    be_src2 = be_dst = dst = None
    src = Vm(qemu, tmp, be_src, chardev_opts=",reconnect-ms=200")
    try:
        dev = Device(src.q)
        dev.negotiate()
        dev.start()
        time.sleep(0.3)
        be_src.stop()
        time.sleep(0.5)
        be_src2 = FakeBackend(fake, tmp, IFACE_VERSION, 66, *opts, sock=sock)
        for _ in range(50):
            if dev.backend() == (True, 2) and be_src2.kicks() >= 18:
                break
            time.sleep(0.1)
        t.ok(dev.backend() == (True, 2),
             "source: the back-end reconnected (connection 2)", dev.backend())
        be_dst = FakeBackend(fake, tmp, IFACE_VERSION, 66, *opts)
        # (its own back-end connected once: without the subsection it
        # would show connection 1)
        dst = Vm(qemu, tmp, be_dst, "-incoming", "defer")
        dst.qmp.cmd("migrate-incoming", uri=mig)
        r = src.qmp.cmd("migrate", uri=mig)
        info = src.qmp.wait_migration() if "return" in r else r
        got = Device(dst.q).backend() if dst.q.proc.poll() is None else None
        t.ok(info.get("status") == "completed" and got == (True, 2),
             "the destination continues the source's back-end connection "
             "count (2), not its own first connection",
             f"{info.get('status')}: {got}; {dst.q.stderr()[-1000:]}")
    finally:
        src.close()
        if dst:
            dst.close()
        for be in (be_src, be_src2, be_dst):
            if be:
                be.stop()


def check_migration_stream(t, qemu, fake, tmp):
    """The destination treats the stream as untrusted: a saved stream
    loads as is, and is refused with a message once edited."""
    stream = os.path.join(tmp, "stream")
    be = FakeBackend(fake, tmp, IFACE_VERSION, 66, "--device-state",
                     "--state-seed=3", "--state-size=1000")
    src = Vm(qemu, tmp, be)
    try:
        dev = Device(src.q)
        dev.negotiate()
        dev.start()
        dev.set_notify_area(NOTIFY_BASE)
        src.q.write("l", BAR2_ADDR + DBREG_NOTIFY_LO, 0x12345000)
        r = src.qmp.cmd("migrate", uri=f"exec:cat >{stream}")
        info = src.qmp.wait_migration() if "return" in r else r
    finally:
        src.close()
        be.stop()
    data = read_bytes(stream)
    # notify_lo, notify_hi, notify_gpa as the vmstate stores them (BE)
    regs = (0x12345000).to_bytes(4, "big") + bytes(4) + \
        NOTIFY_BASE.to_bytes(8, "big")
    t.ok(info.get("status") == "completed" and data.count(regs) == 1,
         "the device state saved to a file holds the notify registers",
         f"{info}; {data.count(regs)} matches in {len(data)} bytes")
    wrap = (0x12345000).to_bytes(4, "big") + b"\xff" * 4 + \
        (0xFFFFFFFFFFFFF000).to_bytes(8, "big")
    for what, edit, device_opts, want in (
            ("the saved stream loads", None, "", None),
            ("a notify area that wraps around is refused",
             lambda d: d.replace(regs, wrap), "",
             "migrated notify area 0xfffffffffffff000"),
            # Same vectors=: else the PCI config refuses it earlier.
            ("a destination with other doorbells= is refused, naming them",
             None, ",doorbells=8,vectors=19",
             "the migration source has 18 virtqueues (doorbells=16) but "
             "this device has 10 (doorbells=8)")):
        path = stream
        if edit:
            path = stream + ".edited"
            with open(path, "wb") as f:
                f.write(edit(data))
        be = FakeBackend(fake, tmp, IFACE_VERSION, 66, "--device-state",
                         "--state-seed=3", "--state-size=1000")
        dst = Vm(qemu, tmp, be, "-incoming", "defer",
                 device_opts=device_opts)
        try:
            dst.qmp.cmd("migrate-incoming", uri=f"exec:cat {path}",
                        **{"exit-on-error": False})
            dinfo = dst.qmp.wait_migration()
            err = dst.q.stderr()
            if want is None:
                ok = (dinfo.get("status") == "completed" and
                      "CHECK load ok" in be.output())
            else:
                ok = (dinfo.get("status") == "failed" and want in err and
                      "request 42" not in be.output())
            t.ok(ok, what + ("" if want is None else
                             ", before the back-end is asked to load"),
                 f"{dinfo}\n{err[-1500:]}\n{be.output()[-300:]}")
        finally:
            dst.close()
            be.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--qemu", default=os.path.join(
        ROOT, "build/qemu/qemu-system-x86_64"))
    ap.add_argument("--backend", default=os.environ.get(
        "PVO_BACKEND", os.path.join(ROOT, "build/san/backend/pvrdma-overlayd")))
    args = ap.parse_args()
    for path, how in ((args.qemu, "scripts/build-qemu.sh"),
                      (args.backend, "make backend")):
        if not os.access(path, os.X_OK):
            print(f"1..0 # SKIP {path} is not built: run {how}")
            return 77

    t = Tap()
    fake = []
    with tempfile.TemporaryDirectory(prefix="pvo-qtest.") as tmp:
        for check in (lambda: check_cli(t, args.qemu),
                      lambda: check_device(t, args.qemu, args.backend, tmp),
                      lambda: fake.append(build_fake_backend(tmp)),
                      lambda: check_doorbells(t, args.qemu, fake[0], tmp),
                      lambda: check_notify_rings(t, args.qemu, fake[0],
                                                 tmp),
                      lambda: check_reconnect(t, args.qemu, fake[0], tmp),
                      lambda: check_config_handling(t, args.qemu, fake[0],
                                                    tmp),
                      lambda: check_migration_blocker(t, args.qemu, fake[0],
                                                      tmp),
                      lambda: check_migration(t, args.qemu, fake[0], tmp),
                      lambda: check_migration_after_reconnect(
                          t, args.qemu, fake[0], tmp),
                      lambda: check_migration_stream(t, args.qemu, fake[0],
                                                     tmp)):
            try:
                check()
            except Exception as e:      # report, go on with the next group
                t.ok(False, f"{type(e).__name__}: {e}")
    print(f"1..{t.n}")
    print(f"# {t.n - t.failed} passed, {t.failed} failed")
    return 1 if t.failed else 0


if __name__ == "__main__":
    sys.exit(main())
