#!/usr/bin/python3
"""make demo: start a back-end and a TCG guest with -device pvrdma-overlay,
and show the RDMA device from inside the guest (ibv_devices, ibv_devinfo -v,
rdma link). Logs: build/test-logs/demo/."""

import os
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True
TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(TOP, "tests/vm/lib"))
from pvovm import Guest, devices, paths  # noqa: E402

MAC = "52:54:00:00:de:01"
logdir = paths.test_log_dir("demo")
work = paths.private_dir("demo")
sock = os.path.join(work, "demo-vm.sock")


def say(msg):
    print("demo: " + msg, flush=True)


say("starting pvrdma-overlayd for VM 'demo-vm' (tenant VNI 100, MAC %s, allowed IP 10.0.0.1)" % MAC)
log = open(os.path.join(logdir, "backend.log"), "w")
be = subprocess.Popen([os.path.join(TOP, "build/backend/pvrdma-overlayd"), "--socket", sock,
                       "--name", "demo-vm", "--vni", "100", "--mac", MAC, "--ip", "10.0.0.1"],
                      stdout=log, stderr=subprocess.STDOUT)
while not os.path.exists(sock):
    if be.poll() is not None:
        sys.exit("demo: the back-end exited; see %s/backend.log" % logdir)
    time.sleep(0.05)
try:
    say("booting a TCG guest with -device pvrdma-overlay (about 10 s)")
    with Guest("demo-vm", logdir=logdir, ip="10.0.0.1/24", mac=MAC,
               extra_args=devices.pvrdma_overlay(sock)) as g:
        g.wait_boot()
        say("guest up in %.1f s; loading pvrdma_overlay.ko" % g.boot_seconds)
        g.check("modprobe pvrdma_overlay && sleep 1")
        for cmd in ["ibv_devices", "ibv_devinfo -v -d pvrdma_overlay0", "rdma link"]:
            print("\n[guest]# " + cmd, flush=True)
            print(g.check(cmd).rstrip(), flush=True)
finally:
    be.send_signal(signal.SIGTERM)
    be.wait()
    paths.remove_private_dir(work)
say("done; logs in %s" % logdir)
