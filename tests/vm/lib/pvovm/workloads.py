"""RDMA workloads between two guests of an RdmaGuests, shared by the tests
that run them on one host (t-verbs-examples, t-perftest, t-integrity) and
across hosts (t-overlay-*). Each function runs one server/client pair, emits
its TAP line(s) through rg.label() and returns the PairResult (and what it
parsed), so a caller can look further (QPNs, byte counts).

    from pvovm import workloads
    for tool, extra in workloads.PINGPONGS:
        workloads.pingpong(rg, tool, extra, events=False, port=18600)
"""

import re

from . import rdma, tap

# -- rdma-core examples (ibv_*_pingpong, rping) ------------------------------

PINGPONG_ITERS = 100
PINGPONGS = [
    # tool, extra arguments
    ("ibv_rc_pingpong", "-s 4096"),      # 4 packets per message at MTU 1024
    ("ibv_uc_pingpong", "-s 4096"),
    ("ibv_ud_pingpong", "-s 512"),       # UD messages fit in the path MTU
    ("ibv_srq_pingpong", "-s 4096 -q 8"),
]
RPING_COUNT = 5
RPING_SIZE = 200


def pingpong_result_lines(iters):
    return (re.compile(r"^\d+ bytes in [\d.]+ seconds = [\d.]+ Mbit/sec$", re.M),
            re.compile(r"^%d iters in [\d.]+ seconds = [\d.]+ usec/iter$" % iters, re.M))


# "  local address:  LID 0x0000, QPN 0x000011, PSN 0x6b3c2a, GID ::ffff:10.0.32.1"
PINGPONG_ADDRESS = re.compile(r"^\s*(local|remote) address:\s+LID \S+ QPN (0x[0-9a-fA-F]+), "
                              r"PSN (0x[0-9a-fA-F]+)", re.M)


def pingpong_qpns(out):
    """{"local": [QPN, ...], "remote": [...]} as ints, from a pingpong's
    output (ibv_srq_pingpong prints one line per QP)."""
    res = {"local": [], "remote": []}
    for m in PINGPONG_ADDRESS.finditer(out):
        res[m.group(1)].append(int(m.group(2), 16))
    return res


def pingpong(rg, tool, extra, events, port, iters=PINGPONG_ITERS, timeout=90, nodes=None):
    """tool (an ibv_*_pingpong) between the first two nodes (or nodes =
    (client, server)), -c (buffers validated), with -e if events. One TAP
    line: both exit 0 and print their result lines."""
    a, b = nodes or rg.nodes[:2]
    opts = "-n %d -c %s%s -p %d" % (iters, extra, " -e" if events else "", port)
    server = "%s -d %s -g %d %s" % (tool, b.ibdev, b.gid_index, opts)
    client = "%s -d %s -g %d %s %s" % (tool, a.ibdev, a.gid_index, opts, b.ip)
    name = "%s%s" % (tool, "-e" if events else "")
    r = rg.pair(b, server, a, client, name, timeout=timeout, ready=rdma.tcp(port))
    lines_ok = all(p.search(out) for p in pingpong_result_lines(iters)
                   for out in (r.server_out, r.client_out))
    tap.ok(r.ok and lines_ok, rg.label("%s %s: exit 0 on both sides, result lines" % (tool, opts)),
           diag=r.diag())
    return r


def rping(rg, port, count=RPING_COUNT, size=RPING_SIZE, timeout=90, nodes=None):
    """rping -v -V (rdma_cm; SEND, RDMA READ and WRITE, the client verifies)
    between the first two nodes. One TAP line: both exit 0, every ping
    printed on both sides, no mismatch."""
    a, b = nodes or rg.nodes[:2]
    opts = "-v -V -C %d -S %d -p %d" % (count, size, port)
    r = rg.pair(b, "rping -s -a %s %s" % (b.ip, opts), a, "rping -c -a %s %s" % (b.ip, opts),
                "rping", timeout=timeout, ready=rdma.rdma_cm(port))
    # The client prints the data it read back after the server's RDMA WRITE;
    # the server prints what its RDMA READ fetched. -V compares on the client.
    client_pings = re.findall(r"^ping data: rdma-ping-(\d+): ", r.client_out, re.M)
    server_pings = re.findall(r"^server ping data: rdma-ping-(\d+): ", r.server_out, re.M)
    want = [str(i) for i in range(count)]
    tap.ok(r.ok and client_pings == want and server_pings == want
           and "mismatch" not in r.client_out,
           rg.label("rping %s: exit 0 on both sides, %d pings verified" % (opts, count)),
           diag=r.diag())
    return r


# -- UD multicast ------------------------------------------------------------

def _mckey_receiver(node, group, count, secs):
    # line-buffered: a receiver killed by its timeout still shows its join
    return ("timeout -k 2 %d stdbuf -oL mckey -m %s -b %s -C %d -S 512"
            % (secs, group, node.ip, count))


def _mckey_sender(node, group, count):
    # the receiver must have joined: give it a moment, then send
    return "sleep 3; mckey -m %s -b %s -s -C %d -S 512" % (group, node.ip, count)


def mckey(rg, receiver, sender, group="239.1.2.3", other="239.1.2.4", count=20):
    """rdma-core's mckey (rdma_join_multicast, UD to a group): the
    receiver joins group and gets all count datagrams the sender sends
    there; then a receiver that joined other gets none of them (it times
    out after its join). Two TAP lines."""
    r = rg.pair(receiver, _mckey_receiver(receiver, group, count, 60),
                sender, _mckey_sender(sender, group, count), "mckey", timeout=120,
                ready=None)
    tap.ok(r.server_rc == 0 and r.client_rc == 0
           and "receiving data transfers" in r.server_out
           and "data transfers complete" in r.server_out,
           rg.label("mckey: %s sends %d datagrams of 512 B to %s, %s's member "
                    "receives them all" % (sender.name, count, group, receiver.name)),
           diag=r.diag())
    r = rg.pair(receiver, _mckey_receiver(receiver, other, 1, 15),
                sender, _mckey_sender(sender, group, count), "mckey-other-group",
                timeout=60, ready=None)
    tap.ok(r.client_rc == 0 and r.server_rc not in (0, None)
           and "joined dgid: ::ffff:%s" % other in r.server_out
           and "data transfers complete" not in r.server_out,
           rg.label("a receiver of %s gets none of the datagrams sent to %s "
                    "(it times out)" % (other, group)), diag=r.diag())


# -- perftest ----------------------------------------------------------------

PERFTEST_ITERS = 200
PERFTEST_TOOLS = [
    # tool, extra arguments, kind of result line
    ("ib_send_bw", "-s 65536", "bw"),
    ("ib_write_bw", "-s 65536", "bw"),
    ("ib_read_bw", "-s 65536", "bw"),
    ("ib_atomic_bw", "", "bw"),
    ("ib_send_lat", "-s 64", "lat"),
    ("ib_write_lat", "-s 64", "lat"),
    ("ib_read_lat", "-s 64", "lat"),
    ("ib_atomic_lat", "", "lat"),
]


def perftest_result(kind, iters):
    """The client's result line:
    "#bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]" or
    "#bytes #iterations t_min[usec] t_max[usec] t_typical[usec] t_avg[usec] ..."."""
    if kind == "bw":
        return re.compile(r"^\s*(\d+)\s+%d\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$" % iters, re.M)
    return re.compile(r"^\s*(\d+)\s+%d\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)" % iters,
                      re.M)


# " local address: LID 0000 QPN 0x0005 PSN 0x749269 RKey 0x000104 VAddr ..."
PERFTEST_ADDRESS = re.compile(r"^\s*(local|remote) address: LID \S+ QPN (0x[0-9a-fA-F]+) "
                              r"PSN (0x[0-9a-fA-F]+)", re.M)


def perftest_qpns(out):
    """{"local": [QPN, ...], "remote": [...]} as ints, from perftest output."""
    res = {"local": [], "remote": []}
    for m in PERFTEST_ADDRESS.finditer(out):
        res[m.group(1)].append(int(m.group(2), 16))
    return res


def perftest(rg, tool, extra, result, cm, port, iters=PERFTEST_ITERS, timeout=120, nodes=None):
    """One perftest run between the first two nodes, the QPs connected over
    perftest's TCP exchange (-x GID index) or rdma_cm (cm, -R). One TAP
    line: both exit 0, the client prints its result line (logged)."""
    a, b = nodes or rg.nodes[:2]
    common = "-F -n %d -p %d %s" % (iters, port, extra)
    if cm:
        server = "%s -d %s -R %s" % (tool, b.ibdev, common)
        client = "%s -d %s -R %s %s" % (tool, a.ibdev, common, b.ip)
        ready = rdma.rdma_cm(port)
    else:
        server = "%s -d %s -x %d %s" % (tool, b.ibdev, b.gid_index, common)
        client = "%s -d %s -x %d %s %s" % (tool, a.ibdev, a.gid_index, common, b.ip)
        ready = rdma.tcp(port)
    for attempt in range(1, 4):
        r = rg.pair(b, server, a, client, "%s%s" % (tool, "-R" if cm else ""), timeout=timeout,
                    ready=ready)
        # perftest 4.5 -R: the server listens a second time on the same port
        # for the test QPs; a client that is quicker gets REJ "invalid service
        # ID" (8). Newer perftest (25.01) retries the connect itself; we retry.
        if cm and "RDMA_CM_EVENT_REJECTED; error: 8" in r.client_out:
            tap.diag("%s -R: attempt %d hit perftest's listen race (REJ 8), again"
                     % (tool, attempt))
            continue
        # The latency tools time in CPU cycles and calibrate them against
        # the clock first; a TCG guest on a busy host can fail that fit
        # ("r^2 < 0.9"), and the result line then reads "inf". The run
        # itself is fine; its numbers are not: run it again.
        if r.ok and "Correlation coefficient r^2" in r.client_out:
            tap.diag("%s: attempt %d: perftest's cycle calibration failed "
                     "(guest clock too noisy), again" % (tool, attempt))
            continue
        break
    m = perftest_result(result, iters).search(r.client_out)
    how = "rdma_cm (-R)" if cm else "TCP exchange (-x %d)" % a.gid_index
    tap.ok(r.ok and m is not None,
           rg.label("%s %s over %s: exit 0 on both sides, result line" % (tool, common, how)),
           diag=r.diag())
    if m:
        tap.diag("%s%s: %s" % (tool, " -R" if cm else "", " ".join(m.group(0).split())))
    return r


# -- pvo-integrity -----------------------------------------------------------

INTEGRITY_PROG = rdma.prog("pvo-integrity")
INTEGRITY_OPS = ("SEND", "SEND_WITH_IMM", "RDMA_WRITE", "RDMA_WRITE_WITH_IMM", "RDMA_READ")
INTEGRITY_SIZES = 32     # 21 powers of two 1 B .. 1 MiB and 11 odd sizes
INTEGRITY_BURST = 200
INTEGRITY_SUMMARY = re.compile(r"^pvo-integrity: transfers=(\d+) bytes=(\d+) failures=(\d+) "
                               r"seconds=([\d.]+)$", re.M)


class IntegrityResult:
    """What a pvo-integrity client reported: .pair (PairResult), .transfers,
    .bytes, .failures, .seconds (None if no summary line)."""

    def __init__(self, pair):
        self.pair = pair
        m = INTEGRITY_SUMMARY.search(pair.client_out)
        self.summary = m
        self.transfers, self.bytes, self.failures = (
            (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else (None, None, None))
        self.seconds = float(m.group(4)) if m else None

    @property
    def ok(self):
        return self.pair.ok and self.summary is not None and self.failures == 0


def integrity_job(rg, server, client, port, seconds, prefix="integrity"):
    """pvo-integrity from client to server for seconds, started in the
    background (rg.start_pair; rg.finish_pair collects it), e.g. across a
    migration: the job named PREFIX-CLIENT-SERVER."""
    return rg.start_pair(
        server, "%s -d %s -g %d -p %d" % (INTEGRITY_PROG, server.ibdev, server.gid_index, port),
        client, "%s -d %s -g %d -p %d -n 1 -m %d %s" % (INTEGRITY_PROG, client.ibdev,
                                                       client.gid_index, port, seconds,
                                                       server.ip),
        "%s-%s-%s" % (prefix, client.name, server.name), timeout=400, ready=rdma.tcp(port))


def integrity(rg, server, client, port, label, rounds=1, client_args="", server_args="",
              timeout=300, per_op=True):
    """pvo-integrity (RC; every byte and the guards checked) from client to
    server. TAP lines: exit 0 and no failures; with per_op, one line per
    operation (INTEGRITY_SIZES sizes each per round, all right) and one for
    the burst. Returns an IntegrityResult."""
    server_cmd = " ".join(x for x in (INTEGRITY_PROG, server_args, "-d %s -g %d -p %d" % (
        server.ibdev, server.gid_index, port)) if x)
    client_cmd = " ".join(x for x in (INTEGRITY_PROG, client_args, "-d %s -g %d -p %d" % (
        client.ibdev, client.gid_index, port), "-n %d" % rounds if rounds != 1 else "",
        server.ip) if x)
    r = rg.pair(server, server_cmd, client, client_cmd,
                "integrity-%s" % label.replace("->", "-to-"), timeout=timeout,
                ready=rdma.tcp(port))
    res = IntegrityResult(r)
    out = r.client_out
    tap.ok(res.ok, rg.label("%s: pvo-integrity exits 0 on both sides, no failures" % label),
           diag=r.diag())
    if per_op:
        for op in INTEGRITY_OPS:
            m2 = re.search(r"^%s: (\d+) transfers, (\d+) failed$" % op, out, re.M)
            tap.ok(m2 is not None and int(m2.group(1)) == INTEGRITY_SIZES * rounds
                   and m2.group(2) == "0",
                   rg.label("%s: %s, %d sizes, every byte right" % (label, op, INTEGRITY_SIZES)),
                   diag="\n".join(line for line in out.splitlines()
                                  if line.startswith("FAIL") and " op=%s " % op in line)[:3000]
                   or out[-2000:])
        bursts = re.findall(r"^BURST: %d SENDs, up to \d+ in flight: (\S+)$" % INTEGRITY_BURST,
                            out, re.M)
        tap.ok(len(bursts) == rounds and all(b == "ok" for b in bursts),
               rg.label("%s: burst of %d SENDs through the rings" % (label, INTEGRITY_BURST)),
               diag=out[-2000:])
    if res.summary:
        tap.diag("%s: %s bytes in %s s" % (label, res.bytes, res.seconds))
    return res
