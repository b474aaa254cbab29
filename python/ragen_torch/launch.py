"""`torchrun` for the worker's data-parallel ranks: `python -m ragen_torch.launch <torchrun arguments>`.

It is PyTorch's own launcher (torch.distributed.run, in this process) with these additions:
- the launcher dies with the process that started it (PR_SET_PDEATHSIG; SIGKILL, since torchrun handles SIGTERM only
  between its blocking calls), and the workers, which die with their parent (worker.py), know it as that parent;
- on torch < 2.0 under Python >= 3.11 (Debian's python3-torch 1.13), torchrun's parser of `--redirects` and `--tee`
  returns None for "0" (Python 3.11 no longer iterates the zero flag of an IntFlag) and every launch crashes; the
  parser is mended here;
- on torch >= 2.4 built without libuv (Debian's python3-torch 2.6), torchrun's static rendezvous asks TCPStore for
  its libuv backend, which such builds refuse, and every launch crashes; the store falls back to the classic backend
  here, and in the ranks' own stores (dist.py).
It also refuses a RAGEN_TORCH_FSDP this torch cannot honour before any rank starts (fsdp.checked_flag).
Other torch builds need nothing: plain `torchrun` with the same arguments works as well.
"""

import ctypes
import os
import signal
import sys


def mend_std_parser():
    from torch.distributed.elastic.multiprocessing import api

    if api.Std.from_str("0") is not None:
        return
    parse = api.Std.from_str.__func__

    def from_str(cls, vm):
        return api.Std.NONE if vm.strip() == "0" else parse(cls, vm)

    api.Std.from_str = classmethod(from_str)


def libuv_missing():
    """Whether this torch asks TCPStore for libuv by default but was built without it (a master store on a free port
    is asked for it once: torch < 2.4 has no such argument, builds with libuv start it)."""
    from datetime import timedelta

    from torch.distributed import TCPStore

    try:
        TCPStore("127.0.0.1", 0, 1, True, timedelta(seconds=5), wait_for_workers=False, use_libuv=True)
    except TypeError:
        return False
    except RuntimeError as e:
        return "libuv" in str(e)
    return False


def mend_tcp_store(module):
    """Have `module`'s TCPStore use the classic backend, on a torch built without libuv (libuv_missing)."""
    Store = module.TCPStore
    module.TCPStore = lambda *args, **kwargs: Store(*args, **dict(kwargs, use_libuv=False))


def main(argv=None):
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: the workers still end when rank 0's stdin closes
    expected = os.environ.get("RAGEN_PARENT_PID")
    if expected and os.getppid() != int(expected):
        os._exit(1)  # the parent is already gone
    os.environ["RAGEN_PARENT_PID"] = str(os.getpid())
    from .fsdp import checked_flag

    try:
        checked_flag(world=2)  # it starts several ranks
    except RuntimeError as e:
        sys.exit(f"RuntimeError: {e}")  # before any rank starts: one message, the one the engine reports
    mend_std_parser()
    if libuv_missing():
        from torch.distributed.elastic.rendezvous import static_tcp_rendezvous

        mend_tcp_store(static_tcp_rendezvous)
        os.environ["RAGEN_TORCH_NO_LIBUV"] = "1"  # the ranks' stores too (dist.py), without asking again
    from torch.distributed import run

    run.main(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    main()
