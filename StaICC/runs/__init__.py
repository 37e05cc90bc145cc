"""The application floor: one run, every kind, the same in ``staicc run`` and in a notebook.

``RunConfig`` says what a run is; :func:`execute` plans it (every check before any
inference), asks what its selection says (everything, a shard, nothing: a dry run), and
returns its :class:`Run` (results, provenance, a lite run's estimates, a methods run's
tests), telling a :class:`RunObserver` each step (``staicc run`` prints there); :func:`write`
writes the run directory ``staicc run --output-dir`` writes, which ``staicc compare``,
``report`` and ``export`` read.  ``Run.from_result`` records a
``run_suite`` result computed in a notebook the same way.
"""
from .build import Prepared, build_suite_of, prepare
from .config import RunConfig
from .execute import answer, execute, record
from .observer import RunObserver
from ..results.run import Run
from .write import write

__all__ = ["RunConfig", "Run", "Prepared", "prepare", "answer", "record", "execute", "write", "build_suite_of",
           "RunObserver"]
