"""Harness for VM tests: TCG guests booted over the host root, driven over
their serial console, reporting TAP.

A test script starts with:

    import os, sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
    from pvovm import Guest, GuestError, backend, devices, netdev, paths, tap
"""

from . import backend, devices, netdev, paths, tap
from .guest import Guest, GuestError

__all__ = ["Guest", "GuestError", "backend", "devices", "netdev", "paths", "tap"]
