#!/bin/sh
# check_syms.sh - fail if libcollrt defines a global symbol outside coll_*.
#
# usage: sh runtime/check_syms.sh build/libcollrt.a [build/libcollrt.so] [build/libcoll_mpi.so]
# The archive is one partially linked object with hidden symbols localised
# (see Makefile.frag); the .so is built with -fvisibility=hidden.  Both
# must define (export) nothing but the public coll_ API.  The PMPI
# interposition library libcoll_mpi.so (runtime/pmpi/) must export MPI_*
# alone: the functions it interposes, and none of the libcollrt it holds.
status=0
for lib in "$@"; do
	case "$lib" in
	*/libcoll_mpi.so|libcoll_mpi.so) want=MPI_ ;;
	*) want=coll_ ;;
	esac
	case "$lib" in
	*.so) syms=$(nm -D --defined-only "$lib" | awk 'NF==3 && $2 ~ /[A-Z]/ {print $3}') ;;
	*)    syms=$(nm -g --defined-only "$lib" 2>/dev/null | awk 'NF==3 {print $3}') ;;
	esac
	bad=$(printf '%s\n' "$syms" | grep -v "^$want" | grep -v '^$')
	if [ -n "$bad" ]; then
		echo "check_syms: $lib leaks non-$want symbols:" >&2
		printf '  %s\n' $bad >&2
		status=1
	else
		echo "check_syms: $lib: $(printf '%s\n' "$syms" | grep -c "^$want") $want symbols, nothing else"
	fi
done
exit $status
