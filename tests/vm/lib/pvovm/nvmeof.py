"""NVMe over Fabrics on RDMA between two guests with the kernel's own ULPs
and Debian's nvme-cli: an nvmet-rdma target exporting a file on tmpfs as
namespace 1, a host that connects to it (t-nvmeof, t-migration-nvmeof,
t-debian13). Each function runs in the guests and returns (status,
output) as Guest.run does.

    rc, out = nvmeof.target_setup(t, NQN)
    rc, out = nvmeof.connect(h, t, NQN)          # prints DEV=... CTRL=...
    ok, src, out = nvmeof.write_read_back(h, dev, 64)
"""

import re

NVMET = "/sys/kernel/config/nvmet"
PORT = 4420


def target_setup(t, nqn, mib=96, port=PORT):
    """nvmet-rdma on t: a file of mib MiB on tmpfs as namespace 1, on t's
    address and port."""
    return t.run(
        "set -e; modprobe -a configfs nvmet nvmet-rdma; "
        "mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config; "
        "mkdir -p /mnt/nvt; mountpoint -q /mnt/nvt || "
        "mount -t tmpfs -o size=%(tmpfs)dm tmpfs /mnt/nvt; "
        "truncate -s %(mib)dM /mnt/nvt/ns1.img; "
        "mkdir %(n)s/subsystems/%(nqn)s; "
        "echo 1 > %(n)s/subsystems/%(nqn)s/attr_allow_any_host; "
        "mkdir %(n)s/subsystems/%(nqn)s/namespaces/1; "
        # tmpfs has no O_DIRECT: the file back-end must use the page cache
        "echo 1 > %(n)s/subsystems/%(nqn)s/namespaces/1/buffered_io; "
        "echo /mnt/nvt/ns1.img > %(n)s/subsystems/%(nqn)s/namespaces/1/device_path; "
        "echo 1 > %(n)s/subsystems/%(nqn)s/namespaces/1/enable; "
        "mkdir %(n)s/ports/1; "
        "echo rdma > %(n)s/ports/1/addr_trtype; echo ipv4 > %(n)s/ports/1/addr_adrfam; "
        "echo %(ip)s > %(n)s/ports/1/addr_traddr; echo %(port)d > %(n)s/ports/1/addr_trsvcid; "
        "ln -s %(n)s/subsystems/%(nqn)s %(n)s/ports/1/subsystems/%(nqn)s; "
        "dmesg | grep -i nvmet | tail -3"
        % {"n": NVMET, "nqn": nqn, "ip": t.ip, "port": port, "mib": mib,
           "tmpfs": mib + 32}, timeout=120)


def target_teardown(t, nqn):
    return t.run("rm -f %(n)s/ports/1/subsystems/%(nqn)s; rmdir %(n)s/ports/1; "
                 "echo 0 > %(n)s/subsystems/%(nqn)s/namespaces/1/enable; "
                 "rmdir %(n)s/subsystems/%(nqn)s/namespaces/1; rmdir %(n)s/subsystems/%(nqn)s; "
                 "modprobe -r nvmet-rdma nvmet" % {"n": NVMET, "nqn": nqn}, timeout=120)


def connect(h, t, nqn, port=PORT):
    """nvme connect from h to t's subsystem nqn with the defaults; prints
    DEV= (the namespace's block device) and CTRL= (its controller)."""
    return h.run(
        "modprobe nvme-rdma && nvme connect -t rdma -a %s -s %d -n %s && "
        "for i in $(seq 100); do "
        # the namespace's block device: its device (the controller, or
        # the subsystem with native multipath) names the subsystem
        "  for b in /sys/block/nvme*n1; do "
        "    [ \"$(cat $b/device/subsysnqn 2>/dev/null)\" = %s ] && [ -b /dev/${b##*/} ] && "
        "      { echo DEV=/dev/${b##*/}; "
        "        for c in /sys/class/nvme/nvme*; do "
        "          [ \"$(cat $c/subsysnqn 2>/dev/null)\" = %s ] && echo CTRL=${c##*/}; "
        "        done; exit 0; }; "
        "  done; sleep 0.2; "
        "done; echo 'no namespace block device appeared'; exit 1"
        % (t.ip, port, nqn, nqn, nqn), timeout=180)


def device_of(out):
    """The DEV= line of connect()'s output, or None."""
    m = re.search(r"^DEV=(\S+)$", out, re.M)
    return m.group(1) if m else None


def disconnect(h, nqn):
    return h.run("nvme disconnect -n %s" % nqn, timeout=120)


def write_read_back(h, dev, mib):
    """h writes mib MiB of random data to dev with O_DIRECT and reads it
    back: (the sums match, the data's sha256 or None, the output)."""
    rc, out = h.run(
        "set -e; mkdir -p /mnt/nvh; mountpoint -q /mnt/nvh || "
        "mount -t tmpfs -o size=%dm tmpfs /mnt/nvh; "
        "head -c %dM /dev/urandom > /mnt/nvh/data; "
        "echo SRC=$(sha256sum < /mnt/nvh/data | cut -c1-64); "
        "dd if=/mnt/nvh/data of=%s bs=1M count=%d oflag=direct status=none; "
        "dd if=%s of=/mnt/nvh/back bs=1M count=%d iflag=direct status=none; "
        "echo BACK=$(sha256sum < /mnt/nvh/back | cut -c1-64)"
        % (2 * mib + 32, mib, dev, mib, dev, mib), timeout=900)
    src = re.search(r"^SRC=(\w+)$", out, re.M)
    back = re.search(r"^BACK=(\w+)$", out, re.M)
    ok = rc == 0 and src is not None and back is not None and src.group(1) == back.group(1)
    return ok, src.group(1) if src else None, out
