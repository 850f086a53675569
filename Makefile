# coll - top-level build.
#
#   make            build everything into build/: collc, libcollrt, collrun, collbench, collprobe, plugins
#   make demo       the main job: verify the stdlib, show and cost StragglAR, build and run a cluster library
#   make test       the whole Tcl suite; ends with "N passed, N failed"
#   make quicktest  the fast tier: every area's fast tests (tests/README.md)
#   make test SAN=1 everything built with AddressSanitizer + UBSan
#   make bench      benchmarks; print ratios against baselines measured in the same run
#   make bench-cluster  the same on an emulated multi-host cluster (network namespaces)
#   make bench-reorder  rank reordering on emulated rack networks (probe, search, orders measured)
#   make bench-rails    two rails at once: split, balance and failover on emulated hosts
#   make fuzz FUZZ_SECONDS=N  AFL++ on every harness of tests/fuzz for N seconds each
#   make install    [PREFIX=/usr/local] [DESTDIR=...]: tools, libraries, headers, stdlib,
#                   MPI and ibverbs plugins, PMPI library, coll.pc, the Python package
#                   (layout: install.mk)
#   make uninstall  the same PREFIX and DESTDIR: removes all of it
#   make pmpi       libcoll_mpi.so, the MPI interposition library (runtime/pmpi/Makefile.frag;
#                   part of `make`)
#
# On a fresh Debian machine the first target installs what it needs with
# apt-get (you are expected to be root there, as in CI); see `deps`.

SAN ?= 0
FUZZ ?= 0
ifeq ($(FUZZ),1)
# make fuzz: AFL++'s compiler instruments the code for coverage.  No
# sanitizers here: they made each execution 7x slower on this project's
# 2-core machines; tests/fuzz/run.sh replays everything AFL found through
# the sanitizer build instead (build-san/)
B        := build-fuzz
CC       := afl-cc
SANFLAGS :=
else ifeq ($(SAN),1)
B        := build-san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
B        := build
SANFLAGS :=
endif

CC      ?= cc
OPT     ?= -O2 -g
CFLAGS  := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror $(OPT) $(SANFLAGS) -MMD -MP
LDFLAGS := $(SANFLAGS)
LDLIBS  := -lm

# Debian packages the build and the tests need, as "command:package" (or
# "/path/of/a/file:package" for libraries).  OpenMPI is for the MPI
# transport and its tests; libibverbs-dev for the RDMA transport;
# pkg-config for the install test; python3-mpi4py for the PMPI library's
# test from Python (Debian's /usr/bin/python3, see tests/pmpi.test).
DEPS := re2c:re2c bison:bison tclsh:tcl mpicc:libopenmpi-dev mpirun:openmpi-bin \
	/usr/include/infiniband/verbs.h:libibverbs-dev pkg-config:pkgconf \
	/usr/lib/python3/dist-packages/mpi4py/__init__.py:python3-mpi4py

.PHONY: all deps demo test quicktest bench bench-cluster bench-reorder bench-rails clean san fuzz
all: deps $(B)/collc $(B)/libcollrt.a $(B)/libcollrt.so $(B)/collrun $(B)/collbench $(B)/collprobe rt-mpi py pmpi

# Install missing build tools once; a stamp keeps later builds quiet (and
# goes stale when this Makefile, which lists them, changes).
deps: $(B)/.deps
$(B)/.deps: Makefile
	@mkdir -p $(B)
	@missing=""; for d in $(DEPS); do c=$${d%%:*}; p=$${d##*:}; \
	  case $$c in /*) [ -e $$c ] ;; *) command -v $$c >/dev/null 2>&1 ;; esac || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "error: need root to apt-get install$$missing" >&2; exit 1; fi; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing) >$(B)/apt.log 2>&1 \
	    || { cat $(B)/apt.log >&2; exit 1; }; \
	fi
	@touch $@

# --- the compiler: lang/ (front end) + codegen/ (back ends) + codegen/cmd/ (command line)
GEN       := $(B)/gen
LANG_SRC  := $(wildcard lang/*.c)
CG_SRC    := $(wildcard codegen/*.c codegen/cmd/*.c)
# runtime/lower.c is the one lowering of a schedule to rank plans; collc
# links it to print the plan tables it generates (codegen/emit_c.c).
# runtime/model/ is the model floor: link model, units, cost model,
# simulator and rank reordering search, which collc and libcollrt both
# call down into (built twice, as lower.c is: here and in runtime/Makefile.frag).
MODEL_SRC := $(wildcard runtime/model/*.c)
COLLC_OBJ := $(patsubst %.c,$(B)/%.o,$(LANG_SRC) $(CG_SRC) runtime/lower.c $(MODEL_SRC)) $(GEN)/lex.o $(GEN)/parse.o

$(GEN)/lex.c: lang/lex.re $(GEN)/parse.h | $(B)/.deps
	@mkdir -p $(GEN)
	re2c --no-generation-date --no-version -W -o $@ $<

$(GEN)/parse.c $(GEN)/parse.h: lang/parse.y | $(B)/.deps
	@mkdir -p $(GEN)
	bison -Wall -Werror -o $(GEN)/parse.c --defines=$(GEN)/parse.h $<

# Generated sources get the same warnings; bison's output needs one relaxed.
$(GEN)/%.o: $(GEN)/%.c
	$(CC) $(CFLAGS) -Wno-unused-but-set-variable -Ilang -Iruntime/model -I$(GEN) -c -o $@ $<

$(B)/%.o: %.c | $(GEN)/parse.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Ilang -Icodegen -Iruntime/model -Iruntime/include -I$(GEN) -c -o $@ $<

# A sanitizer build's libcollrt.a calls into the sanitizers' runtimes, so
# every library that `collc build` links it into needs them too: that
# build's collc names them (codegen/cmd/cmd_build.c, COLL_RT_LIBS).
$(B)/codegen/cmd/cmd_build.o: CFLAGS += -DCOLL_RT_LIBS='"$(if $(SANFLAGS),-lasan -lubsan)"'

# The tools stay in $(B) (build/collc, build/collrun, ...), which is how
# every page of the documentation names them; make install puts them on
# PATH.
$(B)/collc: $(COLLC_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# --- the runtime: libcollrt, collrun and their C tests ----------------------
include runtime/Makefile.frag

# --- the Python package and the torch.distributed backend ------------------
include runtime/python/Makefile.frag

# --- MPI applications, unmodified: the PMPI interposition library ------------
include runtime/pmpi/Makefile.frag

# --- make install / uninstall, coll.pc ---------------------------------------
include install.mk

# --- C unit tests of compiler passes (driven by tests/unit.test) -----------
UNIT_BIN := $(B)/tests/test_matching $(B)/tests/test_verify
$(B)/tests/test_matching: tests/unit/test_matching.c $(B)/lang/matching.o
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Ilang -Iruntime/include -o $@ $^ $(LDLIBS)
$(B)/tests/test_verify: tests/unit/test_verify.c $(B)/lang/state.o $(B)/lang/verify.o $(B)/lang/ir.o \
		$(B)/lang/diag.o $(B)/lang/xalloc.o $(B)/codegen/export.o
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Ilang -Icodegen -Iruntime/model -Iruntime/include -o $@ $^ $(LDLIBS)

# --- demo, tests, benchmarks ------------------------------------------------
# The main job: verify the standard library, show StragglAR, predict its
# speedup, then build a cluster library and run a program on 4 processes.
demo: all
	./$(B)/collc check stdlib/*.coll --n-range 2..16
	./$(B)/collc show stdlib/stragglar.coll -n 8
	./$(B)/collc compare stdlib/ring.coll stdlib/rhd.coll stdlib/stragglar.coll -a ring,rhd,stragglar -n 8 -b 1MiB -e 1GiB -f 32 --straggler last
	./$(B)/collc build examples/lab4.coll -o $(B)/demo
	$(CC) -O2 -I$(B)/demo examples/allreduce.c -L$(B)/demo -llab4 -Wl,-rpath,$(CURDIR)/$(B)/demo -o $(B)/demo/allreduce
	./$(B)/collrun -np 4 $(B)/demo/allreduce

# The suite also runs the bad-input corpus through a sanitizer build.
test: all rt-tests $(UNIT_BIN)
	$(MAKE) --no-print-directory SAN=1 build-san/collc rt-tests
	tclsh tests/all.tcl -build $(B)

# The fast tier: all.tcl -quick skips the tests tagged slow (benchmark-like
# runs, big sweeps), the emulated cluster and the sanitizer re-runs, each
# with its reason, so it needs no sanitizer build (tests/README.md).
quicktest: all rt-tests $(UNIT_BIN)
	tclsh tests/all.tcl -build $(B) -quick

bench: all rt-tests
	tclsh tests/bench/bench.tcl -build $(B)

# Experiments on the emulated multi-host cluster (network namespaces; root).
bench-cluster: all rt-tests
	sh tests/bench/netns_ring.sh
	sh tests/bench/netns_stragglar.sh

# Rank reordering on the emulated cluster: 2 and 4 racks at 4:1, n = 8 and 16
# (about two hours at its defaults; tests/results/reorder.md).
bench-reorder: all rt-tests
	bash tests/bench/netns_reorder.sh -build $(B)

# Two rails at once on the emulated cluster: homogeneous and heterogeneous
# rails, n = 4 and 8, the balancer, failover under flapping (about 25
# minutes; tests/results/rails.md; QUICK=1: n = 4 only, a few minutes).
bench-rails: all rt-tests
	bash tests/bench/netns_rails.sh -build $(B) $(if $(QUICK),-quick)

san:
	$(MAKE) --no-print-directory SAN=1 build-san/collc

# AFL++ campaigns on the input parsers (tests/fuzz/run.sh says which); the
# crashes and hangs found land in tests/fuzz/regress/, which harden.test
# replays.  afl++ is installed here, not in `deps`: only this target needs it.
FUZZ_SECONDS ?= 60
fuzz:
	@command -v afl-fuzz >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq afl++ >/dev/null; } || \
	  { echo "error: need root to apt-get install afl++" >&2; exit 1; }
	bash tests/fuzz/run.sh $(FUZZ_SECONDS)

clean:
	rm -rf build build-san

-include $(COLLC_OBJ:.o=.d)
