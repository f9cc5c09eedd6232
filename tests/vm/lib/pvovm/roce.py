"""RoCEv2-in-VXLAN packets in a pcap file, parsed without Wireshark: for
checks tshark does not make (the ICRC).

    for p in roce.read_vxlan_roce("x.pcap"):
        p.vni, p.opcode, p.dest_qp, p.psn, p.icrc_ok()

Layout (docs/overlay.md): outer Ethernet / IPv4 / UDP (dst 4789) / VXLAN /
inner Ethernet / IPv4 / UDP (dst 4791) / BTH ... payload, pad / ICRC.
"""

import struct
import subprocess
import zlib

VXLAN_PORT = 4789
ROCE_PORT = 4791

# RC opcodes (IBTA 9.2; UC and UD are RC + 0x20 and + 0x60)
RC_SEND_FIRST = 0x00
RC_SEND_MIDDLE = 0x01
RC_SEND_LAST = 0x02
RC_SEND_LAST_IMM = 0x03
RC_SEND_ONLY = 0x04
RC_SEND_ONLY_IMM = 0x05
RC_WRITE_FIRST = 0x06
RC_WRITE_MIDDLE = 0x07
RC_WRITE_LAST = 0x08
RC_WRITE_LAST_IMM = 0x09
RC_WRITE_ONLY = 0x0a
RC_WRITE_ONLY_IMM = 0x0b
RC_READ_REQUEST = 0x0c
RC_READ_RESPONSE_FIRST = 0x0d
RC_READ_RESPONSE_MIDDLE = 0x0e
RC_READ_RESPONSE_LAST = 0x0f
RC_READ_RESPONSE_ONLY = 0x10
RC_ACK = 0x11
RC_ATOMIC_ACK = 0x12
RC_CMP_SWAP = 0x13
RC_FETCH_ADD = 0x14
RC_SEND_LAST_INV = 0x16
RC_SEND_ONLY_INV = 0x17

RC_SENDS = {RC_SEND_FIRST, RC_SEND_MIDDLE, RC_SEND_LAST, RC_SEND_LAST_IMM, RC_SEND_ONLY,
            RC_SEND_ONLY_IMM, RC_SEND_LAST_INV, RC_SEND_ONLY_INV}
RC_WRITES = {RC_WRITE_FIRST, RC_WRITE_MIDDLE, RC_WRITE_LAST, RC_WRITE_LAST_IMM,
             RC_WRITE_ONLY, RC_WRITE_ONLY_IMM}
RC_RESPONSES = {RC_READ_RESPONSE_FIRST, RC_READ_RESPONSE_MIDDLE, RC_READ_RESPONSE_LAST,
                RC_READ_RESPONSE_ONLY, RC_ACK, RC_ATOMIC_ACK}


def is_rc_request(opcode):
    return opcode < 0x20 and opcode not in RC_RESPONSES


def read_pcap(path):
    """Yields (frame number from 1, bytes) of a classic pcap file
    (Ethernet)."""
    with open(path, "rb") as f:
        head = f.read(24)
        if len(head) < 24:
            return
        magic = struct.unpack("<I", head[:4])[0]
        if magic in (0xa1b2c3d4, 0xa1b23c4d):
            endian = "<"
        elif magic in (0xd4c3b2a1, 0x4d3cb2a1):
            endian = ">"
        else:
            raise ValueError("%s: not a pcap file (magic 0x%08x)" % (path, magic))
        n = 0
        while True:
            rec = f.read(16)
            if len(rec) < 16:
                return
            _, _, incl, _ = struct.unpack(endian + "IIII", rec)
            data = f.read(incl)
            n += 1
            yield n, data


class Packet:
    """One RoCEv2 packet out of a VXLAN frame."""

    def __init__(self, frame, data, outer_ip, vxlan, inner_ip, inner_ihl):
        self.frame = frame
        self.data = data
        self.outer_ip = outer_ip          # offset of the outer IPv4 header
        self.vni = struct.unpack(">I", data[vxlan + 4:vxlan + 8])[0] >> 8
        self.inner_ip = inner_ip          # offset of the inner IPv4 header
        ip_len = struct.unpack(">H", data[inner_ip + 2:inner_ip + 4])[0]
        self.inner_end = inner_ip + ip_len  # end of the inner IP packet
        self.udp = inner_ip + inner_ihl
        self.bth = self.udp + 8
        b = data[self.bth:self.bth + 12]
        self.opcode = b[0]
        self.pad = (b[1] >> 4) & 3
        self.dest_qp = struct.unpack(">I", b[4:8])[0] & 0xffffff
        self.ack_req = bool(b[8] & 0x80)
        self.psn = struct.unpack(">I", b[8:12])[0] & 0xffffff
        self.outer_dscp = data[outer_ip + 1] >> 2
        self.inner_src = ".".join(str(x) for x in data[inner_ip + 12:inner_ip + 16])
        self.inner_dst = ".".join(str(x) for x in data[inner_ip + 16:inner_ip + 20])

    def icrc(self):
        """The ICRC on the wire (the last 4 bytes of the inner IP packet)."""
        return self.data[self.inner_end - 4:self.inner_end]

    def expected_icrc(self):
        """The ICRC computed as IBTA Annex A17 (and rdma_rxe) do for IPv4:
        CRC-32 over 8 bytes of 1s (the masked LRH), the inner IPv4 header
        with TOS, TTL and checksum all 1s, the UDP header with the checksum
        all 1s, the BTH with its reserved byte all 1s, and everything after
        it up to the ICRC; stored least significant byte first."""
        ip = bytearray(self.data[self.inner_ip:self.udp])
        ip[1] = 0xff             # TOS
        ip[8] = 0xff             # TTL
        ip[10:12] = b"\xff\xff"  # header checksum
        udp = bytearray(self.data[self.udp:self.bth])
        udp[6:8] = b"\xff\xff"   # checksum
        bth = bytearray(self.data[self.bth:self.bth + 12])
        bth[4] = 0xff            # reserved 8 bits before the destination QP
        rest = self.data[self.bth + 12:self.inner_end - 4]
        crc = zlib.crc32(b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(bth) + rest)
        return struct.pack("<I", crc)

    def icrc_ok(self):
        return self.icrc() == self.expected_icrc()


def _udp_to(data, ip, port):
    """Offset of the UDP header behind the IPv4 header at ip if it goes to
    port, else None."""
    if data[ip + 9] != 17:
        return None
    udp = ip + (data[ip] & 0xf) * 4
    if struct.unpack(">H", data[udp + 2:udp + 4])[0] != port:
        return None
    return udp


def parse_vxlan_roce(frame, data):
    """A Packet if data is Ethernet/IPv4/UDP:4789/VXLAN/Ethernet/IPv4/
    UDP:4791/BTH, else None."""
    try:
        if struct.unpack(">H", data[12:14])[0] != 0x0800:
            return None
        oip = 14
        oudp = _udp_to(data, oip, VXLAN_PORT)
        if oudp is None:
            return None
        vx = oudp + 8
        ieth = vx + 8
        if struct.unpack(">H", data[ieth + 12:ieth + 14])[0] != 0x0800:
            return None
        iip = ieth + 14
        iihl = (data[iip] & 0xf) * 4
        iudp = _udp_to(data, iip, ROCE_PORT)
        if iudp is None:
            return None
        if len(data) < iudp + 8 + 12 + 4:
            return None
        return Packet(frame, data, oip, vx, iip, iihl)
    except (IndexError, struct.error):
        return None


def read_vxlan_roce(path):
    """The RoCEv2-in-VXLAN packets of a pcap file, in order."""
    out = []
    for n, data in read_pcap(path):
        p = parse_vxlan_roce(n, data)
        if p is not None:
            out.append(p)
    return out


# -- tshark ------------------------------------------------------------------

TSHARK_FIELDS = ("frame.number", "frame.protocols", "vxlan.vni", "infiniband.bth.opcode",
                 "infiniband.bth.destqp", "infiniband.bth.psn", "ip.dst")


def tshark_rows(path, fields=TSHARK_FIELDS, display_filter=None, timeout=120):
    """Runs `tshark -r path -d udp.port==4789,vxlan -T fields -e ...`;
    returns (rows, command, stderr): each row a dict field -> string (all
    occurrences joined by ",", "" if absent)."""
    cmd = ["tshark", "-n", "-r", path, "-d", "udp.port==%d,vxlan" % VXLAN_PORT, "-T", "fields",
           "-E", "separator=/t", "-E", "occurrence=a", "-E", "aggregator=,"]
    for f in fields:
        cmd += ["-e", f]
    if display_filter:
        cmd += ["-Y", display_filter]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       stdin=subprocess.DEVNULL, timeout=timeout)
    rows = []
    for line in p.stdout.decode(errors="replace").splitlines():
        values = line.split("\t")
        values += [""] * (len(fields) - len(values))
        rows.append(dict(zip(fields, values)))
    err = p.stderr.decode(errors="replace")
    if p.returncode != 0:
        raise RuntimeError("%s: exit status %d: %s" % (" ".join(cmd), p.returncode, err))
    # tshark warns about running as root; keep only other complaints
    err = "\n".join(ln for ln in err.splitlines() if "could be dangerous" not in ln)
    return rows, " ".join(cmd), err
