"""Build hook: compiles the optional Cython accelerators (see issue "compiled accounting core").

Everything declarative lives in pyproject.toml; this file only lists extension modules.
Set FOUR_NO_EXTENSIONS=1 to build a pure-Python install. A missing compiler (or any
build failure of the extension) is not fatal: the extension is optional and
`four.quaternary` falls back to its pure-Python accounting core.
"""

import os

from setuptools import Extension, setup

PYX = "src/four/quaternary/_accounting_c.pyx"
C_SOURCE = "src/four/quaternary/_accounting_c.c"
NAME = "four.quaternary._accounting_c"

ext_modules: list[Extension] = []
if not os.environ.get("FOUR_NO_EXTENSIONS"):
    try:
        from Cython.Build import cythonize
    except ImportError:
        cythonize = None
    if cythonize is not None and os.path.exists(PYX):
        ext_modules = cythonize(
            [Extension(NAME, [PYX])],
            compiler_directives={"language_level": "3"},
        )
    elif os.path.exists(C_SOURCE):  # an sdist that ships the generated C needs no Cython
        ext_modules = [Extension(NAME, [C_SOURCE])]
for ext in ext_modules:
    ext.optional = True  # set after cythonize(), which drops it


setup(ext_modules=ext_modules)
