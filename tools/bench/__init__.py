"""``tidu-compile bench``: benchmark the compiled backward against numpy, torch and jax.

Modules: ``workloads`` (definitions and hand-written numpy gradients), ``timing`` (the
adaptive timer), ``tidu_runner`` (tidu timing and compile times), ``peers`` (torch and
jax in subprocesses), ``report`` (table and JSON), ``main`` (orchestration; its
``main(argv)`` is the entry point, also run by ``python -m tidu_compile.tools.bench``).
"""
