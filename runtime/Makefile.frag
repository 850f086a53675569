# runtime/Makefile.frag - libcollrt, collrun and the runtime's C tests.
#
# Included from the top Makefile, which sets B (build dir), CC, CFLAGS
# (warnings, -O2 -g -MMD -MP, sanitizers with SAN=1) and LDFLAGS.
#
#   $(B)/libcollrt.a      static library; partially linked (ld -r) and
#                         every symbol but coll_* made local, so nothing
#                         else leaks (check: rt-syms)
#   $(B)/libcollrt.so     shared library exporting only coll_*
#   $(B)/collrun          the local launcher
#   $(B)/libcollrt_mpi.so the MPI plugin libcollrt dlopens under mpirun
#                         (bootstrap + "mpi" transport: runtime/transport/mpi/);
#                         built only when $(MPICC) exists, so libcollrt never
#                         links libmpi
#   $(B)/collprobe        measures every pair of ranks (coll_probe) and writes
#                         the links file collc --links and clusters read
#   $(B)/libcollrt_ibverbs.so the RDMA transport "ibverbs" libcollrt dlopens
#                         when asked for it (runtime/transport/ibverbs/); the one file
#                         here that links libibverbs, so libcollrt never does
#   $(B)/collbench        nccl-tests-style benchmark and checker over plans
#                         from .coll files (via collc: runtime/planload/, which
#                         the PMPI library shares) or generated libraries;
#                         flags in collbench_args.c, the runs in collbench.c;
#                         --device (collbench_dev.c) reaches CUDA and NCCL
#                         through a generated GPU library at run time, so
#                         collbench never links them
#   $(B)/tests/librtlib.so a hand-written plan-set library (collbench --lib tests)
#   $(B)/tests/rt_unit    single-process tests (kernels, fp16, siphash, plans)
#   $(B)/tests/rt_coll    the collective test program run under collrun
#   $(B)/tests/rt_p2p     the point-to-point test program, likewise
#   $(B)/tests/rt_suite   runs rt_coll under collrun over shm and tcp and
#                         prints "N passed, N failed"
#   $(B)/tests/rt_mpiboot an MPI application one rank of which never calls
#                         coll_init (built with the plugin, by mpicc)
#   $(B)/tests/ib_unit    the ibverbs plugin's device-free parts: wire format,
#                         ring placement and credits, MR cache
#   $(B)/tests/ib_devices lists RDMA devices and ports (tests/ibverbs.test
#                         runs the device tests only where it finds one)
#   $(B)/tests/libcollrt_ibverbs_fake.so the ibverbs plugin over a software
#                         fake of libibverbs (tests/unit/fake_verbs.c): the
#                         transport's data path without a device
#   $(B)/tests/fuzz_plan, fuzz_frames  the fuzz harnesses of tests/fuzz/
#                         (run.sh runs them under AFL++ with FUZZ=1;
#                         harden.test replays their findings here and with SAN=1)
#   rt-tests (phony)      all of the above
#   rt-mpi (phony)        the MPI plugin, or a line saying why it is not built
#                         (part of `all`: the plugin reads libcollrt's structures,
#                         so it is rebuilt whenever they change)
#   rt-check (phony)      build and run rt_unit, rt_suite (add RT_QUICK=1 for the short set)
#   rt-syms (phony)       fail if libcollrt exports a symbol without coll_ (and
#                         libcoll_mpi.so one without MPI_: runtime/pmpi/Makefile.frag)

# The model floor (runtime/model/: link model, units, cost model,
# simulator, reordering search) is part of the runtime too: `reorder at
# init` costs orders with the same model as `collc reorder`, which links
# the same files.  They allocate with malloc and return every failure as
# an error (runtime/reorder.c turns it into COLL_ERR_NOMEM).
RT_MODEL  := $(wildcard runtime/model/*.c)
# Transports live in runtime/transport/: the registry and the built-in ones
# (registry.c, shm.c, tcp.c) and rails/ are part of libcollrt; ibverbs/ and
# mpi/ are plugins (below), gpu/ the device executor `collc build` compiles.
RT_SRC    := $(filter-out runtime/collrun.c,$(wildcard runtime/*.c)) \
             $(wildcard runtime/transport/*.c runtime/transport/rails/*.c) $(RT_MODEL)
# Plans from collc run as a subprocess, or from a generated library: shared by
# collbench, the PMPI library (runtime/pmpi/) and fuzz_plan, not in libcollrt.
PLANLOAD  := runtime/planload/planload.c runtime/planload/json.c
# collbench reads sizes against the model floor's table of units (units.c:
# linked here too, since libcollrt.a exports coll_* alone).
RT_TOOLS  := runtime/tools/collbench.c runtime/tools/collbench_args.c runtime/tools/collbench_dev.c \
             runtime/tools/refdata.c runtime/model/units.c runtime/model/tuning.c $(PLANLOAD)
RT_OBJ    := $(patsubst %.c,$(B)/rt/%.o,$(RT_SRC))
RT_CFLAGS  = $(CFLAGS) -fPIC -fvisibility=hidden -Iruntime/include -Iruntime -Iruntime/model
RT_LIBS   := -lm -ldl -lpthread
MPICC     ?= mpicc
HAVE_MPICC := $(shell command -v $(MPICC) 2>/dev/null)
RT_TESTS  := $(B)/tests/rt_unit $(B)/tests/env_table $(B)/tests/rt_coll $(B)/tests/rt_p2p $(B)/tests/rt_suite $(B)/tests/librtlib.so \
             $(if $(HAVE_MPICC),$(B)/tests/rt_mpiboot) $(B)/tests/ib_unit $(B)/tests/ib_devices \
             $(B)/tests/libcollrt_ibverbs_fake.so $(B)/tests/fuzz_plan $(B)/tests/fuzz_frames

$(B)/rt/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(RT_CFLAGS) -c -o $@ $<

# GCC 12's -O2 vectorises only loops that need no epilogue: the reduction
# kernels stayed scalar (addss) and cost twice a kernel copy per byte.
# (Not with FUZZ=1: afl-cc is clang, which has no -fvect-cost-model and
# vectorises at -O2 anyway.)
ifneq ($(FUZZ),1)
$(B)/rt/runtime/reduce.o: RT_CFLAGS += -ftree-vectorize -fvect-cost-model=dynamic
endif

# One relocatable object with hidden symbols localised, then archived:
# the archive defines coll_* and nothing else.
$(B)/libcollrt.a: $(RT_OBJ)
	$(CC) -r -nostdlib -o $(B)/rt/collrt.o $(RT_OBJ)
	objcopy --localize-hidden $(B)/rt/collrt.o
	rm -f $@
	ar rcs $@ $(B)/rt/collrt.o

$(B)/libcollrt.so: $(RT_OBJ)
	$(CC) -shared $(LDFLAGS) -o $@ $(RT_OBJ) $(RT_LIBS)

$(B)/rt/runtime/collrun.o: runtime/collrun.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Iruntime/include -Iruntime/model -c -o $@ $<

# collrun reads its numbers as every tool does (the model floor's units.c).
$(B)/collrun: $(B)/rt/runtime/collrun.o $(B)/rt/runtime/model/units.o
	$(CC) $(LDFLAGS) -o $@ $^ -lm

# collbench links the archive, like any application.
$(B)/collbench: $(patsubst %.c,$(B)/rt/%.o,$(RT_TOOLS)) $(B)/libcollrt.a
	$(CC) $(LDFLAGS) -o $@ $^ $(RT_LIBS)

# collprobe links the archive too: coll_probe is public API; --bytes is
# read against the units table, as collbench's sizes are.
$(B)/collprobe: $(B)/rt/runtime/tools/collprobe.o $(B)/rt/runtime/model/units.o $(B)/libcollrt.a
	$(CC) $(LDFLAGS) -o $@ $^ $(RT_LIBS)

# The MPI plugin: compiled and linked by mpicc (with our compiler), one
# exported symbol (coll_mpi_plugin).
$(B)/rt/runtime/transport/mpi/plugin.o: runtime/transport/mpi/plugin.c
	@mkdir -p $(dir $@)
	OMPI_CC=$(CC) $(MPICC) $(RT_CFLAGS) -c -o $@ $<

$(B)/libcollrt_mpi.so: $(B)/rt/runtime/transport/mpi/plugin.o
	OMPI_CC=$(CC) $(MPICC) -shared $(LDFLAGS) -o $@ $<

# The ibverbs plugin: the transport (ib.c) and its device-free parts
# (wire.c, ring.c, mrcache.c), linked with libibverbs; one exported symbol
# (coll_ibverbs_plugin).  Always built: libibverbs-dev is in the top
# Makefile's DEPS, and building it needs no device.  Part of `all`, like
# the MPI plugin: it reads libcollrt's structures.
IB_OBJ    := $(patsubst %.c,$(B)/rt/%.o,$(wildcard runtime/transport/ibverbs/*.c))
IB_PURE   := $(filter-out %/ib.o,$(IB_OBJ))
$(IB_OBJ) $(B)/tests/ib_devices: | $(B)/.deps

$(B)/libcollrt_ibverbs.so: $(IB_OBJ)
	$(CC) -shared $(LDFLAGS) -o $@ $^ -libverbs

all: $(B)/libcollrt_ibverbs.so

# --- tests -----------------------------------------------------------------
RT_TCFLAGS = $(CFLAGS) -Iruntime/include -Iruntime/tools -Itests/unit

$(B)/rt/tests/%.o: tests/unit/%.c
	@mkdir -p $(dir $@)
	$(CC) $(RT_TCFLAGS) -Iruntime -c -o $@ $<

# rt_unit tests internals, so it links the objects, not the archive.
$(B)/tests/rt_unit: $(B)/rt/tests/rt_unit.o $(B)/rt/tests/rt_plans.o $(RT_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(RT_LIBS)

# env_table prints env.def as libcollrt reads it (docs_env.test, harden_env.test).
$(B)/tests/env_table: $(B)/rt/tests/env_table.o $(RT_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(RT_LIBS)

$(B)/tests/rt_coll: $(B)/rt/tests/rt_coll.o $(B)/rt/tests/rt_plans.o $(B)/rt/runtime/tools/refdata.o $(B)/libcollrt.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(RT_LIBS)

$(B)/tests/rt_p2p: $(B)/rt/tests/rt_p2p.o $(B)/rt/tests/rt_plans.o $(B)/libcollrt.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(RT_LIBS)

$(B)/tests/rt_suite: $(B)/rt/tests/rt_suite.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^

$(B)/tests/rt_mpiboot: tests/unit/rt_mpiboot.c $(B)/libcollrt.a
	@mkdir -p $(dir $@)
	OMPI_CC=$(CC) $(MPICC) $(RT_TCFLAGS) $(LDFLAGS) -o $@ $< $(B)/libcollrt.a $(RT_LIBS)

# The ibverbs plugin's logic without a device (and without libibverbs).
$(B)/tests/ib_unit: $(B)/rt/tests/ib_unit.o $(IB_PURE)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^

# The same plugin with libibverbs replaced by fake_verbs.c (no -libverbs).
$(B)/rt/tests/fake_verbs.o: RT_TCFLAGS += -fPIC -fvisibility=hidden
$(B)/tests/libcollrt_ibverbs_fake.so: $(IB_OBJ) $(B)/rt/tests/fake_verbs.o
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -o $@ $^

$(B)/tests/ib_devices: tests/unit/ib_devices.c
	@mkdir -p $(dir $@)
	$(CC) $(RT_TCFLAGS) $(LDFLAGS) -o $@ $< -libverbs

# The fuzz harnesses reach internals (the executor's preprocessing, a
# communicator's transport), so they link the objects, as rt_unit does;
# fz.c is what they share.
$(B)/rt/tests/fuzz/%.o: tests/fuzz/%.c
	@mkdir -p $(dir $@)
	$(CC) $(RT_TCFLAGS) -Iruntime -c -o $@ $<

$(B)/tests/fuzz_plan: $(B)/rt/tests/fuzz/plan_harness.o $(B)/rt/tests/fuzz/fz.o $(patsubst %.c,$(B)/rt/%.o,$(PLANLOAD)) \
		$(RT_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(RT_LIBS)

$(B)/tests/fuzz_frames: $(B)/rt/tests/fuzz/frame_harness.o $(B)/rt/tests/fuzz/fz.o $(B)/rt/tests/rt_plans.o $(RT_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(RT_LIBS)

# What `collc build` will emit, written by hand: a plan set in a .so.
$(B)/tests/librtlib.so: tests/unit/rt_planlib.c runtime/include/coll_plan.h runtime/include/coll.h
	@mkdir -p $(dir $@)
	$(CC) $(RT_TCFLAGS) -fPIC -shared -o $@ $<

.PHONY: rt-tests rt-check rt-syms rt-mpi
rt-tests: $(B)/libcollrt.a $(B)/libcollrt.so $(B)/collrun $(B)/collbench $(B)/collprobe $(RT_TESTS) rt-mpi \
          $(B)/libcollrt_ibverbs.so

ifneq ($(HAVE_MPICC),)
rt-mpi: $(B)/libcollrt_mpi.so
else
rt-mpi:
	@echo "runtime: $(MPICC) not found: not building libcollrt_mpi.so (no MPI bootstrap or transport);" \
	      "apt-get install libopenmpi-dev to get it"
endif

rt-syms: $(B)/libcollrt.a $(B)/libcollrt.so $(if $(HAVE_MPICC),$(B)/libcollrt_mpi.so) $(B)/libcollrt_ibverbs.so
	sh runtime/check_syms.sh $^

rt-check: rt-tests rt-syms
	$(B)/tests/rt_unit
	$(B)/tests/rt_suite -build $(B) $(if $(RT_QUICK),-quick)

-include $(RT_OBJ:.o=.d) $(B)/rt/runtime/collrun.d $(wildcard $(B)/rt/tests/*.d) $(wildcard $(B)/rt/tests/fuzz/*.d) $(wildcard $(B)/rt/runtime/tools/*.d) \
	$(wildcard $(B)/rt/runtime/planload/*.d $(B)/rt/runtime/transport/mpi/*.d) $(IB_OBJ:.o=.d)
