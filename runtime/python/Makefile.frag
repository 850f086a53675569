# runtime/python/Makefile.frag - the Python package and the torch backend.
#
# Included from the top Makefile, which sets B (build dir) and DEPS.
#
#   runtime/python/coll/       the package itself: pure Python (ctypes over
#                              $(B)/libcollrt.so), nothing to build
#   runtime/python/pyproject.toml, pep517/
#                              `pip install runtime/python`: an in-tree build
#                              backend that packs the package and what make
#                              built into a wheel, offline (nothing to fetch)
#   $(B)/python/_coll_torch.so the torch.distributed backend "coll" (a c10d
#                              ProcessGroup, ProcessGroupColl.cpp), compiled
#                              with $(CXX) against Debian's libtorch-dev 1.13;
#                              coll/distributed.py imports it from here
#   py (phony)                 the extension (part of `all`)
#   py-install (phony)         copy the package and the extension to
#                              $(DESTDIR)$(PYDIR) (default PREFIX/lib/python3/
#                              dist-packages, beside PREFIX/lib/libcollrt.so,
#                              which the package finds from there)
#
# The interpreter: /usr/bin/python3, because Debian's python3-torch and
# python3-numpy are installed for it only; a `python3` earlier on PATH (a
# pyenv or venv build) cannot import them.  PYTHON=... overrides it, for
# make and (exported) for the tests it runs.
#
# The extension is built with g++ directly, not with setuptools or
# torch.utils.cpp_extension: no pip, no network, no build directory outside
# $(B), and the same -Wall -Wextra -Werror as the rest of the tree.  Torch's
# headers are under /usr/include, a system directory, so their warnings do
# not stop the build; the API headers of libtorch and Python's headers are
# named with -isystem for the same reason.  Never sanitized (SAN=1): an
# ASan-instrumented module cannot be loaded into an uninstrumented python.

PYTHON ?= /usr/bin/python3
export PYTHON
PREFIX ?= /usr/local
PYDIR ?= $(PREFIX)/lib/python3/dist-packages

# Debian packages for the binding, the backend and their tests (see deps in
# the top Makefile); the stamp is remade when this list changes.
# python3-venv is for `python3 -m venv` + `pip install runtime/python`
# (tests/python.test 7.*); the file it provides, ensurepip, is under the
# interpreter's own version directory, so the interpreter names it.
PY_STDLIB := $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])' 2>/dev/null)
DEPS += /usr/lib/python3/dist-packages/numpy/__init__.py:python3-numpy \
	/usr/lib/python3/dist-packages/torch/__init__.py:python3-torch \
	/usr/include/torch/csrc/distributed/c10d/ProcessGroup.hpp:libtorch-dev \
	/usr/include/pybind11/pybind11.h:pybind11-dev g++:g++ \
	$(or $(PY_STDLIB),/usr/lib/python3)/ensurepip/__init__.py:python3-venv
$(B)/.deps: runtime/python/Makefile.frag

CXX ?= g++
# recursive (=): the interpreter is asked only when the extension is built
PY_INCLUDE = $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
TORCH_CXXFLAGS ?= -isystem /usr/include/torch/csrc/api/include
TORCH_LIBS ?= -ltorch -ltorch_cpu -lc10 -ltorch_python
PY_CXXFLAGS = -std=c++17 -O2 -fPIC -Wall -Wextra -Werror -isystem $(PY_INCLUDE) $(TORCH_CXXFLAGS) \
	-Iruntime/include -MMD -MP

$(B)/python/_coll_torch.so: runtime/python/torch/ProcessGroupColl.cpp | $(B)/.deps
	@mkdir -p $(dir $@)
	$(CXX) $(PY_CXXFLAGS) -shared -o $@ $< $(TORCH_LIBS) -ldl -pthread

.PHONY: py py-install
py: $(B)/python/_coll_torch.so

py-install: $(B)/python/_coll_torch.so
	install -d $(DESTDIR)$(PYDIR)/coll
	install -m 644 runtime/python/coll/*.py $(DESTDIR)$(PYDIR)/coll/
	install -m 755 $(B)/python/_coll_torch.so $(DESTDIR)$(PYDIR)/coll/

-include $(B)/python/_coll_torch.d
