"""TAP (Test Anything Protocol) output for prove.

    from pvovm import tap
    tap.plan(2)                     # or tap.done() at the end without a plan
    tap.ok(rc == 0, "modprobe rdma_rxe", diag=output)
    tap.not_ok("guest did not boot", diag=str(err))
    tap.skip("ibv_devinfo from the stage", "build/rdma-core-stage missing")
    sys.exit(tap.done())
"""

import sys
import traceback

_count = 0
_failed = 0
_planned = None
_plain = None


def plain(prefix):
    """For programs that are not tests (make demo): checks the library
    makes on its own (back-end exit status, sanitizers, guest kernel logs)
    print nothing when they pass and "PREFIX: NAME failed" with their
    details when they fail; failed() still counts them."""
    global _plain
    _plain = prefix


def _emit(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def plan(n):
    """Declare the number of tests up front."""
    global _planned
    _planned = n
    _emit("1..%d" % n)


def skip_all(reason):
    """Plan no tests and exit: the whole test does not apply."""
    _emit("1..0 # SKIP %s" % reason)
    sys.exit(0)


def _comment(msg):
    for line in str(msg).rstrip("\n").split("\n"):
        _emit("# " + line)


def diag(msg):
    """Comment lines (prove shows them with -v, and stderr-free)."""
    _comment(msg)


def ok(cond, name, diag=None):  # pylint: disable=redefined-outer-name
    """One test: passes if cond is true. On failure, diag text is printed."""
    global _count, _failed
    _count += 1
    if _plain is not None:
        if not cond:
            _failed += 1
            _emit("%s: %s failed" % (_plain, name))
            if diag:
                _emit(str(diag).rstrip("\n"))
        return bool(cond)
    if cond:
        _emit("ok %d - %s" % (_count, name))
    else:
        _failed += 1
        _emit("not ok %d - %s" % (_count, name))
        if diag:
            _comment(diag)
    return bool(cond)


def not_ok(name, diag=None):
    """A test that failed outright."""
    return ok(False, name, diag=diag)


def skip(name, reason):
    global _count
    _count += 1
    if _plain is not None:
        return
    _emit("ok %d - %s # SKIP %s" % (_count, name, reason))


def bail_out(reason):
    """Stop the whole run: nothing further can be tested."""
    _emit("Bail out! %s" % reason)
    sys.exit(255)


def failed():
    return _failed


def done():
    """Close the run; returns the exit status for sys.exit()."""
    if _planned is None:
        _emit("1..%d" % _count)
    elif _planned != _count:
        _comment("planned %d tests but ran %d" % (_planned, _count))
        return 255
    return 1 if _failed else 0


def main(body):
    """Run body(); an exception becomes a failed test with its traceback, so
    a broken test still reports and exits non-zero."""
    try:
        body()
    except SystemExit:
        raise
    except BaseException as err:  # noqa: B902 - report anything, then fail
        not_ok("test died: %s" % (str(err).split("\n")[0] or type(err).__name__),
               diag=traceback.format_exc())
    sys.exit(done())
