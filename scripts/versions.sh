# Versions of everything third-party, in one place. Sourced by the scripts.
QEMU_DEBVER=10.0.13+ds     # upstream 10.0.13 from Debian trixie
QEMU_VER=10.0.13
RDMA_CORE_VER=56.1
GUEST_KVER=6.1.0-56-amd64  # Debian bookworm linux-image-amd64
PVO_CACHE=${PVO_CACHE:-/var/cache/pvrdma-overlay}
