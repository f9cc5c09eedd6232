"""Unmodified rdma-core and perftest applications between the first two
guests (pvo_workload): rc_pingpong (ibv_rc_pingpong), rping (rdma_cm,
SEND, READ and WRITE, payloads verified), perftest (ib_write_bw and
ib_send_lat, short runs: a smoke test, not a benchmark).
"""

import re

from avocado.core import exceptions

from provider import pvo_rdma
from provider.pvo_rdma import require


def rc_pingpong(a, b, params):
    iters = int(params.get("pvo_pingpong_iters", 200))
    port = int(params.get("pvo_port", 18515))
    common = "-p %d -n %d -s 4096" % (port, iters)
    r = pvo_rdma.pair(b, "ibv_rc_pingpong -d %s -g %d %s" % (b.ibdev, b.gid_index, common),
                      a, "ibv_rc_pingpong -d %s -g %d %s %s" % (a.ibdev, a.gid_index, common,
                                                               b.ip),
                      "rc_pingpong", ready=("tcp", port))
    want = "%d iters in" % iters
    require(r.ok and want in r.server_out and want in r.client_out,
            "ibv_rc_pingpong: exit 0 on both sides, %d iterations" % iters, r.diag())


def rping(a, b, params):
    count = int(params.get("pvo_rping_count", 5))
    port = int(params.get("pvo_port", 18520))
    opts = "-v -V -C %d -S 64 -p %d" % (count, port)
    r = pvo_rdma.pair(b, "rping -s -a %s %s" % (b.ip, opts), a,
                      "rping -c -a %s %s" % (b.ip, opts), "rping", ready=("rdma_cm", port))
    client = re.findall(r"^ping data: rdma-ping-(\d+): ", r.client_out, re.M)
    server = re.findall(r"^server ping data: rdma-ping-(\d+): ", r.server_out, re.M)
    want = [str(i) for i in range(count)]
    require(r.ok and client == want and server == want and "mismatch" not in r.client_out,
            "rping: exit 0 on both sides, %d pings verified" % count, r.diag())


def perftest(a, b, params):
    iters = int(params.get("pvo_perftest_iters", 200))
    port = int(params.get("pvo_port", 18530))
    for tool, extra, kind in (("ib_write_bw", "-s 65536", "bw"), ("ib_send_lat", "-s 64", "lat")):
        common = "-F -n %d -p %d %s" % (iters, port, extra)
        r = pvo_rdma.pair(b, "%s -d %s -x %d %s" % (tool, b.ibdev, b.gid_index, common),
                          a, "%s -d %s -x %d %s %s" % (tool, a.ibdev, a.gid_index, common, b.ip),
                          tool, ready=("tcp", port))
        line = pvo_rdma.perftest_line(kind, iters, r.client_out)
        require(r.ok and line, "%s %s: exit 0 on both sides, result: %s" % (tool, extra, line),
                r.diag())
        port += 1


WORKLOADS = {"rc_pingpong": rc_pingpong, "rping": rping, "perftest": perftest}


def run(test, params, env):
    workload = params.get("pvo_workload")
    if workload not in WORKLOADS:
        raise exceptions.TestError("pvo_workload = %r: one of %s" % (workload, " ".join(WORKLOADS)))
    a, b = pvo_rdma.nodes(params, env)[:2]
    WORKLOADS[workload](a, b, params)
