"""Where things are: the checkout, its build outputs, per-test directories."""

import os
import shutil
import sys
import tempfile

# tests/vm/lib/pvovm/paths.py -> the checkout, wherever it was cloned.
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))))
BUILD = os.path.join(REPO, "build")
GUEST_DIR = os.path.join(BUILD, "guest")
# The uncompressed ELF, booted through its PVH entry (no decompression).
KERNEL = os.path.join(GUEST_DIR, "vmlinux")
INITRAMFS = os.path.join(GUEST_DIR, "initramfs.cpio.gz")
LAYER = os.path.join(GUEST_DIR, "layer")
# The ram root (Guest(ram_root=True)): a whole root file system in the
# initramfs, and the list of its paths.
RAMROOT = os.path.join(GUEST_DIR, "ramroot.cpio.zst")
RAMROOT_MANIFEST = os.path.join(GUEST_DIR, "ramroot.manifest")
RDMA_STAGE = os.path.join(BUILD, "rdma-core-stage")
# The Debian 13 guest (Guest(image=True), scripts/build-guest-image.sh):
# its disk, kernel and initramfs.
GUEST_IMAGE = os.path.join(BUILD, "guest-image")
IMAGE_DISK = os.path.join(GUEST_IMAGE, "trixie.qcow2")
IMAGE_KERNEL = os.path.join(GUEST_IMAGE, "vmlinuz")
IMAGE_INITRD = os.path.join(GUEST_IMAGE, "initrd.img")
QEMU = os.environ.get("PVO_QEMU",
                      os.path.join(BUILD, "qemu", "qemu-system-x86_64"))
FIRMWARE_DIRS = ("/usr/share/seabios", "/usr/share/qemu")


def test_name():
    """The running test's name: the basename of its script."""
    return os.path.basename(sys.argv[0]) or "interactive"


def test_log_dir(name=None):
    """build/test-logs/<test>/, created; logs of a previous run are replaced."""
    path = os.path.join(BUILD, "test-logs", name or test_name())
    os.makedirs(path, exist_ok=True)
    return path


def private_dir(prefix):
    """A fresh directory for sockets, unique to this caller.

    It lives under /tmp (or $PVO_SOCK_DIR), not under the checkout, because
    unix socket paths must stay below 108 bytes. The caller removes it with
    remove_private_dir().
    """
    base = os.environ.get("PVO_SOCK_DIR", tempfile.gettempdir())
    return tempfile.mkdtemp(prefix="pvo-%s-" % prefix, dir=base)


def remove_private_dir(path):
    shutil.rmtree(path, ignore_errors=True)


def missing_guest_files(ram_root=False, image=False):
    """Names of the build outputs a guest needs that do not exist, with the
    command that builds each (ram_root: those of a ram-root guest; image:
    those of the Debian 13 image's)."""
    missing = []
    if not os.access(QEMU, os.X_OK):
        missing.append("%s (build QEMU: make qemu)" % QEMU)
    if image:
        return missing + ["%s (make guest-image)" % p for p in
                          (IMAGE_DISK, IMAGE_KERNEL, IMAGE_INITRD) if not os.path.exists(p)]
    for path in (KERNEL, RAMROOT, RAMROOT_MANIFEST) if ram_root else (KERNEL, INITRAMFS, LAYER):
        if not os.path.exists(path):
            missing.append("%s (run scripts/build-guest.sh)" % path)
    return missing
