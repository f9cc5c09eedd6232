# pvrdma-overlay: one-command build and test.
#
#   make deps    install Debian packages, fetch third-party sources (root)
#   make         build everything (cached: a no-change rebuild takes seconds)
#   make check   deps + build + all tests (TAP through prove)
#   make demo    start a back-end and a guest, print ibv_devinfo from inside
#   make bench   native data-path benchmarks (ratios vs memcpy, same run)
#
# Third-party builds (QEMU, rdma-core) are cached in $(PVO_CACHE) keyed on
# their inputs; project outputs go to build/.

SHELL := /bin/bash
TOP := $(CURDIR)
export PVO_CACHE ?= /var/cache/pvrdma-overlay
KVER := $(shell . scripts/versions.sh && echo $$GUEST_KVER)
KDIR ?= /usr/src/linux-headers-$(KVER)

all: build

deps:
	@scripts/deps.sh

build: qemu backend driver rdma-core guest test-programs

qemu:
	@scripts/build-qemu.sh

backend:
	@$(MAKE) -s -C backend
	@$(MAKE) -s -C backend SAN=1
	@$(MAKE) -s -C backend PROFILE=1

driver:
	@echo "driver: building pvrdma_overlay.ko (and the kcheck test module) for $(KVER)"
	@$(MAKE) -s -C guest-driver KDIR=$(KDIR) all kcheck

rdma-core:
	@scripts/build-rdma-core.sh

guest: driver rdma-core
	@scripts/build-guest.sh

test-programs: backend rdma-core
	@$(MAKE) -s -C backend/tests
	@$(MAKE) -s -C tests/harness SAN=1
	@$(MAKE) -s -C tests/vm/progs
	@$(MAKE) -s -C bench all

# Tests: unit tests and front-end tests need no guest; VM tests boot TCG
# guests. Logs of guest consoles: build/test-logs/<test>/.
# (globbed by the shell at run time: the binaries exist only after build)
UNIT_TESTS = build/tests/unit/t-* tests/integration/t-* build/tests/frontend/t-* \
	qemu-device/tests/device-qtest.py
VM_TESTS = tests/vm/t-* guest-provider/tests/t-provider \
	guest-driver/tests/check-in-guest

check: deps build
	@echo "check: running tests (guest consoles are logged under build/test-logs/)"
	@shopt -s nullglob; PVO_BACKEND=$(TOP)/build/backend-san/pvrdma-overlayd \
		prove -v $(PROVE_FLAGS) $(UNIT_TESTS) $(VM_TESTS)

check-unit: backend test-programs
	@shopt -s nullglob; PVO_BACKEND=$(TOP)/build/backend-san/pvrdma-overlayd \
		prove $(UNIT_TESTS)

demo: deps build
	@scripts/demo.sh

# Benchmarks (not part of check): ratios measured in the same run.
bench: backend test-programs
	@bench/run.sh

clean:
	rm -rf build
	$(MAKE) -s -C guest-driver clean KDIR=$(KDIR) || true

.PHONY: all deps build qemu backend driver rdma-core guest test-programs \
	check check-unit demo bench clean
