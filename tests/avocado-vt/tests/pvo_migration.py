"""Live migration during RDMA traffic: pvo_migrate_vm (the first VM)
migrates to a new QEMU process on the same host with avocado-vt's
vm.migrate() while ib_write_bw (-D, duration mode) and rping -v -V run
from it to the second VM. The new QEMU opens its own connection to the
same back-end socket, which takes the VM's state from the migration
stream. Both programs must exit 0 on both sides with every rping
payload verified and perftest's result line, and ibv_rc_pingpong must
run between the two afterwards.
"""

import re
import time

from provider import pvo_rdma
from provider.pvo_rdma import require


def run(test, params, env):
    seconds = int(params.get("pvo_migration_traffic_seconds", 20))
    count = int(params.get("pvo_migration_rping_count", 1000))
    settle = float(params.get("pvo_migration_settle", 3))
    port = int(params.get("pvo_port", 19000))
    a, b = pvo_rdma.nodes(params, env)[:2]
    vm = env.get_vm(params.get("pvo_migrate_vm", a.name))
    if vm.name != a.name:
        a, b = b, a

    # the servers on b, the clients on the migrating VM, all in the
    # background with their output in files in the guests
    bw = "-F -D %d -s 65536 -p %d" % (seconds, port)
    pvo_rdma.start_background(b, "ib_write_bw -d %s -x %d %s" % (b.ibdev, b.gid_index, bw),
                              "/tmp/pvo-mig-bw-server", seconds + 120)
    opts = "-v -V -C %d -S 200 -p %d" % (count, port + 1)
    pvo_rdma.start_background(b, "rping -s -a %s %s" % (b.ip, opts), "/tmp/pvo-mig-rping-server",
                              240)
    for ready in (("tcp", port), ("rdma_cm", port + 1)):
        b.check("end=$((SECONDS + 20)); while [ $SECONDS -lt $end ]; do %s && exit 0; "
                "sleep 0.1; done; exit 1" % pvo_rdma.ready_check(b, ready), timeout=40,
                what="server listening on %s port %d" % ready)
    pvo_rdma.start_background(a, "ib_write_bw -d %s -x %d %s %s" % (a.ibdev, a.gid_index, bw, b.ip),
                              "/tmp/pvo-mig-bw-client", seconds + 120)
    pvo_rdma.start_background(a, "stdbuf -oL rping -c -a %s %s" % (b.ip, opts),
                              "/tmp/pvo-mig-rping-client", 240)
    time.sleep(settle)
    a.check("grep -q . /tmp/pvo-mig-rping-client.out", what="rping running before the migration")

    started = time.monotonic()
    vm.migrate(timeout=int(params.get("mig_timeout", 300)),
               protocol=params.get("migration_protocol", "unix"), env=env)
    pvo_rdma.LOG.info("PASS: %s migrated in %.1f s (wall), traffic running",
                      vm.name, time.monotonic() - started)
    a.vm = env.get_vm(vm.name)
    a.login(recreate=True)

    results = {}
    for name, node in (("bw-client", a), ("bw-server", b), ("rping-client", a),
                       ("rping-server", b)):
        results[name] = pvo_rdma.collect_background(node, "/tmp/pvo-mig-" + name, 240)
    diag = "\n".join("--- %s: exit %s\n%s" % (k, rc, out[-2000:]) for k, (rc, out)
                     in results.items())
    m = re.search(r"^\s*65536\s+\d+\s+[\d.]+\s+([\d.]+)\s+[\d.]+\s*$", results["bw-client"][1],
                  re.M)
    require(results["bw-client"][0] == 0 and results["bw-server"][0] == 0 and m,
            "ib_write_bw -D %d across the migration: exit 0 on both sides, %s MB/s"
            % (seconds, m.group(1) if m else "no result line"), diag)
    pings = re.findall(r"^ping data: rdma-ping-(\d+): ", results["rping-client"][1], re.M)
    served = re.findall(r"^server ping data: rdma-ping-(\d+): ", results["rping-server"][1], re.M)
    want = [str(i) for i in range(count)]
    require(results["rping-client"][0] == 0 and results["rping-server"][0] == 0
            and pings == want and served == want
            and "mismatch" not in results["rping-client"][1],
            "rping -v -V across the migration: exit 0 on both sides, %d pings verified" % count,
            diag)

    a.setup_rdma()
    iters = 100
    common = "-p %d -n %d -s 4096" % (port + 2, iters)
    r = pvo_rdma.pair(b, "ibv_rc_pingpong -d %s -g %d %s" % (b.ibdev, b.gid_index, common),
                      a, "ibv_rc_pingpong -d %s -g %d %s %s" % (a.ibdev, a.gid_index, common,
                                                               b.ip),
                      "mig-rc_pingpong", ready=("tcp", port + 2))
    require(r.ok and "%d iters in" % iters in r.client_out,
            "ibv_rc_pingpong after the migration: exit 0 on both sides", r.diag())
