"""bootstrap.py - coll's rendezvous address and secret through a key-value store.

libcollrt bootstraps over TCP: rank 0 listens on COLL_ADDR and every
connection proves it knows COLL_SECRET (coll.h, coll_config).  A launcher
that is not collrun (torchrun, a job scheduler) has no way to hand those to
the ranks, but frameworks already share a key-value store (torch's TCPStore,
FileStore, HashStore: set/get, get blocking until the key exists).  This
file is the protocol over such a store, used by Comm.from_store and by the
torch backend's creator (distributed.py):

  rank 0:  reserve a free TCP port on `host`, make a 32-byte random secret,
           set PREFIX/addr = "host:port" and PREFIX/secret = hex secret;
  others:  get PREFIX/addr and PREFIX/secret (blocking until rank 0 set them);
  all:     coll_init with that address and secret; once rank 0's returns,
           every rank has connected and proved the secret, so rank 0
           deletes PREFIX/secret from the store (best effort).

The secret is exactly as private as the store: anyone who can read the
store while the job starts can join it.  torch's TCPStore has no
authentication of its own, so on a shared network bind it to a trusted
interface.

The port is reserved, not just probed: rank 0 keeps a socket bound to it
(SO_REUSEADDR, not listening) until coll_init has bound its own listener
there, so the kernel cannot hand the port to another process in between
(Linux lets a second SO_REUSEADDR socket bind a port whose other sockets
are not listening).

The host rank 0 publishes: `host` if given, else $COLL_HOST, else the local
address this machine uses to reach $MASTER_ADDR (set by torchrun and
env:// launches; a UDP connect() sends nothing), else 127.0.0.1.
"""

import contextlib
import os
import secrets
import socket


def _value(v):
    return v.decode() if isinstance(v, (bytes, bytearray)) else str(v)


def local_host():
    """The address rank 0 advertises (see the file's header)."""
    h = os.environ.get("COLL_HOST")
    if h:
        return h
    master = os.environ.get("MASTER_ADDR")
    if master:
        try:
            infos = socket.getaddrinfo(master, int(os.environ.get("MASTER_PORT", "1")), socket.AF_INET,
                                       socket.SOCK_DGRAM)
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.connect(infos[0][4])
                return s.getsockname()[0]
        except OSError:
            pass
    return "127.0.0.1"


def reserve_port(host):
    """A socket bound to a free port of `host` (SO_REUSEADDR, not listening):
    the reservation.  Returns (socket, port)."""
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, 0))
    return s, s.getsockname()[1]


def format_addr(host, port):
    return "[%s]:%d" % (host, port) if ":" in host else "%s:%d" % (host, port)


@contextlib.contextmanager
def rendezvous(store, rank, nranks, prefix="coll", host=None):
    """Context manager yielding (addr, secret, done) for coll_init: call
    done() once coll_init succeeded (rank 0 then removes the secret from the
    store).  Rank 0's port reservation ends when the block exits."""
    if not 0 <= rank < nranks:
        raise ValueError("rank %d out of range for %d ranks" % (rank, nranks))
    k_addr, k_secret = prefix + "/addr", prefix + "/secret"
    if rank == 0:
        host = host or local_host()
        sock, port = reserve_port(host)
        try:
            addr, secret = format_addr(host, port), secrets.token_hex(32)
            # the secret first: a rank that sees the address finds the secret too
            store.set(k_secret, secret)
            store.set(k_addr, addr)

            def done():
                try:
                    store.delete_key(k_secret)
                except Exception:   # a store without delete: the secret stays, as in collrun's environment
                    pass
            yield addr, secret, done
        finally:
            sock.close()
    else:
        addr = _value(store.get(k_addr))
        secret = _value(store.get(k_secret))
        yield addr, secret, lambda: None
