"""Crafted RoCEv2-in-VXLAN datagrams for tests that attack a back-end's
VTEP from the underlay (t-overlay-tenants): build the VXLAN payload of a
UDP datagram (the kernel adds the outer IPv4 / UDP headers) and send it
from inside a namespace host.

    pkt = inject.roce_packet(vni=100, smac=..., dmac=..., sip="10.0.0.2",
                             dip="10.0.0.1", opcode=roce.RC_SEND_ONLY,
                             dest_qp=0xabcdef, psn=1, payload=b"x" * 16)
    inject.send(hs, 1, hs.vtep(0), [pkt, inject.corrupt_icrc(pkt)])

Layout (docs/overlay.md): VXLAN (I flag, VNI) | Ethernet | IPv4 (correct
header checksum) | UDP (dst 4791, checksum 0) | BTH [payload] [pad] | ICRC.
The ICRC comes from roce.Packet.expected_icrc(), the project's independent
Python ICRC (checked against rdma_rxe's packets), not from the back-end's
code.
"""

import ipaddress
import struct
import subprocess

from . import roce

VXLAN_FLAG_I = 0x08
BTH_LEN = 12
AETH_LEN = 4
ICRC_LEN = 4


def mac_bytes(mac):
    return bytes(int(x, 16) for x in mac.split(":"))


def ip_bytes(ip):
    return ipaddress.IPv4Address(ip).packed


def ip4_checksum(hdr):
    """The IPv4 header checksum of hdr (its checksum field taken as 0)."""
    hdr = bytearray(hdr)
    hdr[10:12] = b"\0\0"
    s = sum(struct.unpack(">10H", bytes(hdr[:20])))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def vxlan_header(vni):
    return struct.pack(">B3xI", VXLAN_FLAG_I, vni << 8)


def _fake_outer(inner_len):
    """Outer Ethernet / IPv4 / UDP (dst 4789) headers, only so that
    roce.parse_vxlan_roce() reads a datagram we built."""
    eth = b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00"
    ip = bytearray(struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + 8 + inner_len, 0, 0x4000, 64,
                               17, 0, b"\x0a\0\0\x01", b"\x0a\0\0\x02"))
    ip[10:12] = struct.pack(">H", ip4_checksum(ip))
    udp = struct.pack(">HHHH", 49152, roce.VXLAN_PORT, 8 + inner_len, 0)
    return eth + bytes(ip) + udp


OUTER_LEN = len(_fake_outer(0))


def parse(datagram):
    """roce.Packet of a VXLAN payload (as sent on a UDP socket), or None."""
    return roce.parse_vxlan_roce(0, _fake_outer(len(datagram)) + datagram)


def icrc_of(datagram):
    """The ICRC a datagram of ours should carry (its last 4 bytes are the
    ICRC field, whatever they hold now), by roce.py."""
    p = parse(datagram)
    if p is None:
        raise ValueError("not a RoCEv2-in-VXLAN datagram")
    return p.expected_icrc()


def roce_packet(vni, smac, dmac, sip, dip, opcode, dest_qp, psn, payload=b"",
                pkey=0xffff, ack_req=True, sport=0xc123, tos=0, ttl=64, ip_id=0x1234,
                extra_headers=b""):
    """One VXLAN datagram carrying a RoCEv2 packet with a correct inner IPv4
    checksum and a correct ICRC. extra_headers go between the BTH and the
    payload (e.g. an AETH for an ACK)."""
    body = extra_headers + payload
    pad = (4 - len(payload) % 4) % 4
    body += b"\0" * pad
    bth = struct.pack(">BBHII", opcode, pad << 4, pkey, dest_qp & 0xffffff,
                      (0x80000000 if ack_req else 0) | (psn & 0xffffff))
    roce_len = BTH_LEN + len(body) + ICRC_LEN
    udp = struct.pack(">HHHH", sport, roce.ROCE_PORT, 8 + roce_len, 0)
    ip = bytearray(struct.pack(">BBHHHBBH4s4s", 0x45, tos, 20 + 8 + roce_len, ip_id, 0x4000,
                               ttl, 17, 0, ip_bytes(sip), ip_bytes(dip)))
    ip[10:12] = struct.pack(">H", ip4_checksum(ip))
    eth = mac_bytes(dmac) + mac_bytes(smac) + b"\x08\x00"
    dgram = vxlan_header(vni) + eth + bytes(ip) + udp + bth + body + b"\0" * ICRC_LEN
    return dgram[:-ICRC_LEN] + icrc_of(dgram)


def ack_packet(vni, smac, dmac, sip, dip, dest_qp, psn, msn=0, **kw):
    """An RC ACK (opcode 0x11, AETH syndrome 0 = ACK)."""
    aeth = struct.pack(">I", (0x00 << 24) | (msn & 0xffffff))
    return roce_packet(vni, smac, dmac, sip, dip, roce.RC_ACK, dest_qp, psn,
                       extra_headers=aeth, ack_req=False, **kw)


def corrupt_icrc(dgram):
    """The same datagram with one bit of its ICRC flipped."""
    b = bytearray(dgram)
    b[-1] ^= 0x01
    return bytes(b)


def corrupt_ip_checksum(dgram):
    """The same datagram with a wrong inner IPv4 header checksum."""
    b = bytearray(dgram)
    off = 8 + 14 + 10
    b[off] ^= 0xff
    return bytes(b)


def check(dgram):
    """(inner IPv4 checksum right, ICRC right) of a datagram of ours, by
    this module and roce.py: a self-check before sending."""
    ipoff = 8 + 14
    ip = dgram[ipoff:ipoff + 20]
    csum_ok = struct.unpack(">H", ip[10:12])[0] == ip4_checksum(ip)
    p = parse(dgram)
    return csum_ok, p is not None and p.icrc_ok()


SENDER = r"""
import socket, sys
dst, port = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
n = 0
for h in sys.argv[3:]:
    n += s.sendto(bytes.fromhex(h), (dst, port)) > 0
print("sent %d datagrams to %s:%d from %s:%d" % ((n, dst, port) + s.getsockname()))
"""


def send(hosts, i, dst, datagrams, port=roce.VXLAN_PORT, timeout=30):
    """Sends each datagram (bytes) as one UDP datagram from inside host i
    (an ordinary UDP socket, source address picked by host i's routing) to
    dst:port. Returns the sender's output; raises on failure."""
    argv = ["python3", "-c", SENDER, dst, str(port)] + [d.hex() for d in datagrams]
    p = subprocess.run(hosts.command(i, argv), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=timeout)
    out = p.stdout.decode(errors="replace")
    if p.returncode != 0 or ("sent %d datagrams" % len(datagrams)) not in out:
        raise RuntimeError("sending %d datagrams from host %d to %s:%d: exit status %d: %s"
                           % (len(datagrams), i, dst, port, p.returncode, out.strip()))
    return out.strip()
