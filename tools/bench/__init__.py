"""``tidu-compile bench``: benchmark the compiled backward against numpy, torch and jax.

Modules: ``workloads`` (definitions and hand-written numpy gradients), ``timing`` (the
adaptive timer), ``tidu_runner`` (tidu timing and compile times), ``peers`` (torch and
jax in subprocesses), ``report`` (table and JSON), ``main`` (orchestration).
"""

from tidu_compile.tools.bench.main import main

__all__ = ["main"]
