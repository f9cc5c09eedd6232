"""Harness for VM tests: TCG guests booted over the host root, driven over
their serial console, reporting TAP.

A test script starts with:

    import os, sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
    from pvovm import Guest, GuestError, backend, devices, netdev, paths, tap
"""

from . import backend, devices, migration, netdev, paths, ramroot, tap
from .guest import Guest, GuestError
from .migration import MigrationError

__all__ = ["Guest", "GuestError", "MigrationError", "backend", "devices", "migration", "netdev",
           "paths", "ramroot", "tap"]
