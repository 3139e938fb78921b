# daxkit — top-level entry points. `make` builds; `make demo` and `make test` work on a fresh machine.
BUILD     ?= build
JOBS      ?= $(shell nproc)
CMAKE_ARGS ?=

.PHONY: all build release deps-build demo test test-knownbug test-quick test-dax bench soak clean

all: build

deps-build:
	@scripts/deps.sh build

$(BUILD)/build.ninja: CMakeLists.txt | deps-build
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_ARGS)

build: deps-build $(BUILD)/build.ninja
	ninja -C $(BUILD)

# `make` builds the test build that `make test` needs: its library honours the test-only DAXKIT_TEST_*
# variables (crash points, fault injection). For deployment build this one: the same library and tools
# without them (`daxkit doctor` prints which kind a build is).
RELEASE ?= build-release
release: deps-build
	cmake -S . -B $(RELEASE) -G Ninja -DCMAKE_BUILD_TYPE=Release -DDAXKIT_TEST_BUILD=OFF $(CMAKE_ARGS)
	ninja -C $(RELEASE) daxkit daxkit-cli daxkit-graph

demo: build
	@scripts/deps.sh demo
	@scripts/demo.sh $(BUILD)

# Tests failing on a known, reported library defect (named in the open issue's notes) are left out of
# `make test` and run by `make test-knownbug`; the list shrinks as they are fixed. Also excluded: the label
# knownbug, which a test can carry itself (session 8: strict_sqlite_crash_{hugetmpfs,xfs} -- strict mode does
# not group SQLite's commit, docs/strict.md; strict_sqlite_bigtxn_crash_atomic_log16M -- a transaction past
# DAXKIT_ATOMIC_LOG_BYTES; shim_threads_map_race_lazy_hugetmpfs -- lazy adoption's open race). The list is
# empty (diff_hugetmpfs_posix_stage left it in session 4: see docs/testing-diff.md, "stdio").
KNOWNBUG ?= ^$$

# The dax group (qemu, the guest kernel, busybox-static, ndctl) is installed here, not by the test: once,
# before ctest starts, outside any test's time limit and never while other tests run.
test: build
	@scripts/deps.sh test dax
	cd $(BUILD) && ctest --output-on-failure -j 2 --timeout 900 -LE 'soak|knownbug' -E '$(KNOWNBUG)'

test-knownbug: build
	cd $(BUILD) && ctest --output-on-failure -j 2 -R '$(KNOWNBUG)|knownbug' ; true

test-quick: build
	cd $(BUILD) && ctest --output-on-failure -j 2 -L quick

# The long list in the FS-DAX guest (docs/dax-guest.md); make test runs the short one (dax_guest_short).
test-dax: build
	@scripts/deps.sh dax
	@tests/dax/run-guest.sh $(BUILD) --long

bench: build
	@scripts/deps.sh bench
	@bench/run.sh $(BUILD)

soak: build
	@scripts/deps.sh test
	cd $(BUILD) && ctest --output-on-failure -L soak

clean:
	rm -rf $(BUILD)
