"""Children that do not outlive the test: preexec_fn helpers.

    subprocess.Popen(cmd, preexec_fn=proc.term_with_parent)   # SIGTERM
    subprocess.Popen(cmd, preexec_fn=proc.kill_with_parent)    # SIGKILL

The child gets the signal when the test process dies, also across an exec
(ip netns exec, sudo-less wrappers), so a killed test leaves no back-end,
QEMU or namespace helper behind.
"""

import ctypes
import signal

# looked up once, here: a preexec_fn should not dlopen between fork and exec
_prctl = ctypes.CDLL(None, use_errno=True).prctl
_PR_SET_PDEATHSIG = 1


def term_with_parent():
    """preexec_fn: SIGTERM when the test process dies (for programs that
    clean up, e.g. the back-end removes its sockets)."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def kill_with_parent():
    """preexec_fn: SIGKILL when the test process dies (QEMU)."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
