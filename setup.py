"""The optional C walk of batch_status replies (mysched/backends/torque/_packed.c).

Everything else is in pyproject.toml. The extension is optional: without a compiler or
Python's headers the install goes on without it, and the Python walk serves
(`mysched.backends.torque.ifl.convert_packed`)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("mysched.backends.torque._packed", ["mysched/backends/torque/_packed.c"],
                             optional=True)])
