"""Backward executors: the numpy reference and the compiling executor."""
