# pvrdma-overlay: the README's commands. `make help` lists every target.
#
# User-space C (back-end, tests, bench) builds with meson into three build
# directories (meson.build); the guest driver with Kbuild; QEMU and
# rdma-core (with our provider) from sources `make deps` fetched, cached in
# $(PVO_CACHE) keyed on their inputs. Project outputs go to build/.

SHELL := /bin/bash
TOP := $(CURDIR)
export PVO_CACHE ?= /var/cache/pvrdma-overlay
KVER := $(shell . scripts/versions.sh && echo $$GUEST_KVER)
KDIR ?= /usr/src/linux-headers-$(KVER)
# the tests' build directory (ASan + UBSan)
SAN := build/san

# make check T=tests/vm/t-perftest (one test, or several separated by
# spaces), SUITE=unit|integration|vm (one group); the default is all.
T ?=
SUITE ?=
MESON_TEST_FLAGS ?=
# make fuzz: seconds per harness
FUZZ_SECONDS ?= 60
FUZZ_HARNESSES := fuzz-ctrl fuzz-overlay-rx fuzz-overlay-rq fuzz-config fuzz-mgmt fuzz-vhost fuzz-state

all: build

help:
	@echo "make deps       install Debian packages and fetch third-party sources (root, apt)"
	@echo "make            build everything (= make build; cached, a no-change rebuild takes seconds)"
	@echo "make check      deps + build + every test suite (unit, integration, vm, fuzz; TAP)"
	@echo "                T=tests/vm/t-perftest runs one test, SUITE=unit|integration|packaging|vm|fuzz one suite"
	@echo "make demo       start a back-end and two TCG guests: the device from inside, perftest table"
	@echo "make bench      native data-path benchmarks (ratios against memcpy and UDP, same run)"
	@echo "make bench-migration  RDMA blackout against QEMU's downtime, guests migrating; how soon"
	@echo "                peers follow a move, EVPN against announcements (about 6 min)"
	@echo "make bench-hostverbs  host verbs against the overlay and plain rxe, and a host-verbs VM's migration blackout (about 15 min)"
	@echo "make fuzz       coverage-guided fuzzing, FUZZ_SECONDS (default 60) per harness (backend/fuzz)"
	@echo "make backend    the daemon and pvo-ctl, plain / sanitizer / profile / fuzz (build/{plain,san,prof,fuzz})"
	@echo "make qemu       QEMU 10.0 with -device pvrdma-overlay (build/qemu)"
	@echo "make driver     the guest driver pvrdma_overlay.ko and its kcheck module"
	@echo "make rdma-core  rdma-core 56.1 with the provider, staged in build/rdma-core-stage"
	@echo "make guest      the TCG guest's kernel and initramfs (build/guest)"
	@echo "make deb        Debian packages: pvrdma-overlayd, pvrdma-overlay-dkms, pvrdma-overlay-provider (build/deb)"
	@echo "make guest-image  a Debian 13 guest image (6.12) with those packages installed (build/guest-image)"
	@echo "make test-programs  tests, harness, tools, in-guest programs, bench"
	@echo "make check-unit the unit and integration suites only (no QEMU, no guest)"
	@echo "make check-avocado  the avocado-vt test provider (tests/avocado-vt) on TCG guests"
	@echo "make clean      remove build/ (the caches in $(PVO_CACHE) stay)"

deps:
	@scripts/deps.sh

build: qemu backend driver rdma-core guest test-programs deb guest-image

qemu:
	@scripts/build-qemu.sh

# meson-setup.sh configures a build directory once (again when its
# options change); ninja then rebuilds what changed, by real dependencies.
backend:
	@scripts/meson-setup.sh build/plain -Dtests=false -Drdma_stage=$(TOP)/build/rdma-core-stage
	@scripts/meson-setup.sh $(SAN) -Db_sanitize=address,undefined -Doptimization=1 -Dbench=false
	@scripts/meson-setup.sh build/prof -Dprofile=true -Dtests=false -Dbench=false
	@CC=clang scripts/meson-setup.sh build/fuzz -Dfuzz=true -Dtests=false \
		-Dbench=false -Db_sanitize=address,undefined -Dwerror=false
	@echo "backend: building build/plain, $(SAN), build/prof, build/fuzz"
	@ninja -C build/plain >/dev/null
	@ninja -C $(SAN) >/dev/null
	@ninja -C build/prof >/dev/null
	@ninja -C build/fuzz >/dev/null

driver:
	@echo "driver: building pvrdma_overlay.ko (and the kcheck test module) for $(KVER)"
	@$(MAKE) -s -C guest-driver KDIR=$(KDIR) all kcheck

rdma-core:
	@scripts/build-rdma-core.sh

# Debian packages of the daemon, the guest driver (DKMS) and the provider
# (scripts/build-deb.sh), into build/deb/.
deb: rdma-core
	@scripts/build-deb.sh

# A Debian 13 guest disk image on its 6.12 kernel with those packages
# (scripts/build-guest-image.sh), linked as build/guest-image.
guest-image: deb
	@scripts/build-guest-image.sh

guest: driver rdma-core
	@scripts/build-guest.sh

# meson records the libraries of link_args by their resolved path: when
# build/rdma-core-stage points at a new cache entry, reconfigure.
test-programs: backend rdma-core
	@s=$$(readlink -f build/rdma-core-stage); \
	if [ "$$(cat build/plain/.rdma-stage 2>/dev/null)" != "$$s" ]; then \
		meson setup --reconfigure build/plain >/dev/null && \
		echo "$$s" > build/plain/.rdma-stage; \
	fi
	@ninja -C build/plain vm-progs >/dev/null

# Tests: unit and integration tests need no guest; VM tests boot TCG
# guests, one at a time. Logs of guest consoles: build/test-logs/<test>/;
# meson's own log: build/san/meson-logs/testlog.txt.
# The fuzz suite (a short libFuzzer pass over the committed corpus) lives
# in build/fuzz (clang); the other suites in $(SAN).
check: deps build
	@echo "check: running tests (guest consoles are logged under build/test-logs/)"
	@if [ "$(SUITE)" != fuzz ]; then \
		scripts/run-tests.sh $(SAN) "$(SUITE)" "$(T)" $(MESON_TEST_FLAGS); fi
	@if [ -z "$(T)" ] && { [ -z "$(SUITE)" ] || [ "$(SUITE)" = fuzz ]; }; then \
		scripts/run-tests.sh build/fuzz fuzz "" $(MESON_TEST_FLAGS); fi

check-unit: backend
	@scripts/run-tests.sh $(SAN) "$(or $(SUITE),unit integration)" "$(T)" $(MESON_TEST_FLAGS)

# The avocado-vt provider, and that it fails on a broken device (both are
# also in make check's vm suite).
check-avocado: deps build
	@scripts/run-tests.sh $(SAN) vm "tests/avocado-vt/t-avocado tests/avocado-vt/t-avocado-image tests/avocado-vt/t-broken-device" \
		$(MESON_TEST_FLAGS)

demo: deps build
	@scripts/demo.sh

# Coverage-guided fuzzing of the back-end's inputs (scripts/fuzz.sh says
# where new inputs and crashes go).
fuzz: backend
	@scripts/fuzz.sh build/fuzz -max_total_time=$(FUZZ_SECONDS) $(FUZZ_HARNESSES)

# Benchmarks (not part of check): ratios measured in the same run.
bench: backend
	@bench/run.sh

# Live migration under RDMA WRITEs: two TCG guests, so apart from make
# bench (which needs no guest); bench/README.md.
bench-migration: build
	@bench/migration.py
	@bench/moves.py

# The host-verbs transport against the overlay and plain rdma_rxe between
# two TCG guests with rdma_rxe (about 10 min); bench/README.md.
bench-hostverbs: build
	@bench/hostverbs.py

clean:
	rm -rf build
	$(MAKE) -s -C guest-driver clean KDIR=$(KDIR) || true

.PHONY: all help deps build qemu backend driver rdma-core deb guest-image guest \
	test-programs check check-unit check-avocado demo fuzz bench bench-migration bench-hostverbs clean
