#!/usr/bin/python3
"""avocado-tap.py RESULTS_JSON FIRST [EXPECT]: avocado's results.json as TAP
lines numbered from FIRST, one per test: "ok" when its status is EXPECT
(default PASS), with the fail reason and the test's log as a comment
otherwise."""

import json
import sys


def main():
    path, first = sys.argv[1], int(sys.argv[2])
    expect = sys.argv[3] if len(sys.argv) > 3 else "PASS"
    with open(path) as f:
        tests = json.load(f).get("tests", [])
    n = first
    for t in tests:
        name = t.get("name", "?").split("-", 1)[-1]
        status = t.get("status", "?")
        line = "%s %d - avocado-vt %s: %s (%.1f s)" % (
            "ok" if status == expect else "not ok", n, name, status,
            t.get("time_elapsed") or 0)
        print(line)
        if status != "PASS" or expect != "PASS":
            for text in str(t.get("fail_reason") or "").splitlines()[:40]:
                print("# " + text)
            print("# log: %s" % t.get("logfile", "?"))
        n += 1


main()
