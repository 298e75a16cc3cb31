"""Build hook: compiles the optional Cython accelerators (see issue "compiled accounting core").

Everything declarative lives in pyproject.toml; this file only lists extension modules.
Set FOUR_NO_EXTENSIONS=1 to build a pure-Python install. A missing compiler (or any
build failure of the extension) is not fatal: the extension is optional and
`four.quaternary` falls back to its pure-Python accounting core.
"""

import os

from setuptools import Extension, setup
from setuptools.command.build_py import build_py as _build_py

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



class build_py(_build_py):
    """Keep Cython sources out of wheels: pyproject's exclude-package-data only names the
    top-level package, so the generated .c and the .pyx of subpackages are dropped here."""

    def find_data_files(self, package: str, src_dir: str) -> list[str]:
        files: list[str] = super().find_data_files(package, src_dir)
        return [f for f in files if not f.endswith((".c", ".pyx"))]


setup(ext_modules=ext_modules, cmdclass={"build_py": build_py})
