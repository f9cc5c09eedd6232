"""Tenant isolation on one back-end: the attacker VM (pvo_attacker,
another tenant) knows the victim's QPN, GID, rkey, address and Q_Key
(exchanged over TCP) and still reaches nothing: RC attempts end in
RETRY_EXC_ERR, UD datagrams vanish, the victim's memory is unchanged
(tests/vm/progs/pvo-isolation -e blocked), and rping does not connect.
pvo_expect = reachable runs the same between VMs of one tenant: the
control that shows the attacks are real.
"""

from avocado.core import exceptions

from provider import pvo_rdma
from provider.pvo_rdma import require


def run(test, params, env):
    prog = params.get("pvo_isolation_prog", "pvo-isolation")
    expect = params.get("pvo_expect", "blocked")
    port = int(params.get("pvo_port", 18900))
    names = [params["pvo_attacker"], params["pvo_victim"]]
    attacker, victim = pvo_rdma.nodes(params, env, names)
    if attacker.run("command -v %s" % prog)[0] != 0:
        raise exceptions.TestSkipError("%s: %s is not in the guest" % (attacker.name, prog))
    what = "%s -> %s (%s)" % (attacker.name, victim.name, expect)
    r = pvo_rdma.pair(victim, "%s -d %s -g %d -p %d" % (prog, victim.ibdev, victim.gid_index, port),
                      attacker, "%s -d %s -g %d -p %d -e %s %s" % (
                          prog, attacker.ibdev, attacker.gid_index, port, expect, victim.ip),
                      "isolation", ready=("tcp", port), timeout=180)
    require(r.ok and "pvo-isolation: expect=%s" % expect in r.client_out
            and "failed=0" in r.client_out,
            "pvo-isolation %s: every check passed" % what, r.diag())
    # rdma_cm: the victim listens; from another tenant the connection fails
    opts = "-v -C 2 -S 64 -p %d" % (port + 1)
    wait = int(params.get("pvo_rping_blocked_wait", 15))
    r = pvo_rdma.pair(victim, "rping -s -a %s %s" % (victim.ip, opts), attacker,
                      "rping -c -a %s %s" % (victim.ip, opts), "isolation-rping",
                      ready=("rdma_cm", port + 1),
                      timeout=wait if expect == "blocked" else 60)
    if expect == "blocked":
        require(r.client_rc != 0 and "ping data" not in r.client_out,
                "rping %s: the client does not connect" % what, r.diag())
    else:
        require(r.ok and "ping data: rdma-ping-1" in r.client_out,
                "rping %s: connects, 2 pings" % what, r.diag())
