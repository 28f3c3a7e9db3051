"""The web process's entry point (gateway/serve.py): Daphne's loop is uvloop's."""
import subprocess
import sys

from tests.servers import ROOT


def test_daphne_makes_its_loop_with_uvloop_once_the_entry_point_set_it():
    probe = ("from gateway.serve import use_uvloop; use_uvloop(); import daphne.server; "
             "print(type(daphne.server.twisted_loop).__module__, "
             "type(daphne.server.twisted_loop).__name__)")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                         text=True, check=True, timeout=60).stdout
    assert out == "uvloop Loop\n"


def test_without_it_daphne_makes_an_asyncio_loop():
    """The probe above can fail: by default Daphne's loop is asyncio's own."""
    probe = ("import daphne.server; print(type(daphne.server.twisted_loop).__module__, "
             "type(daphne.server.twisted_loop).__name__)")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                         text=True, check=True, timeout=60).stdout
    assert out == "asyncio.unix_events _UnixSelectorEventLoop\n"
