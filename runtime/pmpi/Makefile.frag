# runtime/pmpi/Makefile.frag - libcoll_mpi.so, the MPI interposition (PMPI)
# library, and the MPI programs that test it.
#
# Included from the top Makefile after runtime/Makefile.frag (B, CC,
# CFLAGS, MPICC, HAVE_MPICC, RT_CFLAGS, RT_OBJ, PLANLOAD come from there).
#
#   $(B)/libcoll_mpi.so    LD_PRELOAD it under mpirun: serves MPI_Allreduce,
#                          MPI_Reduce_scatter(_block), MPI_Allgather, MPI_Bcast,
#                          MPI_Reduce and MPI_Alltoall on MPI_COMM_WORLD and its
#                          duplicates with coll, everything else goes to PMPI_*.
#                          It holds libcollrt (the archive) and runtime/planload/
#                          (planload.c, json.c); a version script (pmpi.map)
#                          exports MPI_* alone, so nothing of coll's leaks
#                          into the application
#   $(B)/tests/pmpi_app    the C test program (tests/pmpi/app.c): mixes served
#                          and passed-through calls, checks every result
#                          against PMPI's own
#   $(B)/tests/pmpi_diff   the differential test (tests/pmpi/diff.c): every byte
#                          a collective leaves, written per rank, for two runs
#                          (plain and interposed) to compare
#   pmpi (phony)           the library, or a line saying why it is not built
#                          (no mpicc); part of `all`

PMPI_OBJ := $(B)/rt/runtime/pmpi/pmpi.o $(patsubst %.c,$(B)/rt/%.o,$(PLANLOAD) runtime/model/tuning.c runtime/model/units.c)

$(B)/rt/runtime/pmpi/pmpi.o: runtime/pmpi/pmpi.c
	@mkdir -p $(dir $@)
	OMPI_CC=$(CC) $(MPICC) $(RT_CFLAGS) -c -o $@ $<

$(B)/libcoll_mpi.so: $(PMPI_OBJ) $(B)/libcollrt.a runtime/pmpi/pmpi.map
	OMPI_CC=$(CC) $(MPICC) -shared $(LDFLAGS) -Wl,--version-script=runtime/pmpi/pmpi.map -o $@ \
		$(PMPI_OBJ) $(B)/libcollrt.a $(RT_LIBS)

$(B)/tests/pmpi_app: tests/pmpi/app.c
	@mkdir -p $(dir $@)
	OMPI_CC=$(CC) $(MPICC) $(CFLAGS) -pthread -o $@ $< -lm

$(B)/tests/pmpi_diff: tests/pmpi/diff.c
	@mkdir -p $(dir $@)
	OMPI_CC=$(CC) $(MPICC) $(CFLAGS) -o $@ $<

.PHONY: pmpi
ifneq ($(HAVE_MPICC),)
pmpi: $(B)/libcoll_mpi.so
rt-tests: $(B)/tests/pmpi_app $(B)/tests/pmpi_diff
rt-syms: $(B)/libcoll_mpi.so
else
pmpi:
	@echo "runtime: $(MPICC) not found: not building libcoll_mpi.so (the PMPI library);" \
	      "apt-get install libopenmpi-dev to get it"
endif

-include $(B)/rt/runtime/pmpi/pmpi.d
