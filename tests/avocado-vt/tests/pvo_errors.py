"""Error paths a verbs user sees: tests/vm/progs/pvo-errors between the
first two guests (client on the first). Its checks must all pass, and
an RDMA WRITE with a bad rkey must complete with IBV_WC_REM_ACCESS_ERR,
the responder's QP in ERR and its memory untouched.

pvo_errors_prog: the program's path in the guest (built by `make
test-programs` into build/plain/tests/vm/progs/pvo-errors).
"""

import re

from avocado.core import exceptions

from provider import pvo_rdma
from provider.pvo_rdma import require


def run(test, params, env):
    prog = params.get("pvo_errors_prog", "pvo-errors")
    port = int(params.get("pvo_port", 18810))
    a, b = pvo_rdma.nodes(params, env)[:2]
    if a.run("command -v %s" % prog)[0] != 0:
        raise exceptions.TestSkipError("%s: %s is not in the guest" % (a.name, prog))
    r = pvo_rdma.pair(b, "%s -d %s -g %d -p %d" % (prog, b.ibdev, b.gid_index, port),
                      a, "%s -d %s -g %d -p %d %s" % (prog, a.ibdev, a.gid_index, port, b.ip),
                      "errors", ready=("tcp", port), timeout=300)
    bad_rkey = re.findall(r"^(ok|not ok) \d+ - bad rkey: (.*)$", r.client_out, re.M)
    require(bad_rkey and all(s == "ok" for s, _ in bad_rkey)
            and any("remote access error" in text for _, text in bad_rkey),
            "bad rkey: REM_ACCESS_ERR, responder QP in ERR, memory untouched (%d checks)"
            % len(bad_rkey), r.diag())
    failed = re.findall(r"^not ok .*$", r.client_out, re.M)
    require(r.ok and re.search(r"^pvo-errors: passed=\d+ failed=0 ", r.client_out, re.M),
            "pvo-errors: every check passed", "\n".join(failed) + "\n" + r.diag())
