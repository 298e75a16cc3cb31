"""Build hook: compiles the optional Cython accelerators (see issue "compiled accounting core")
and the one hash chain's links (`four._chain_c`).

Everything declarative lives in pyproject.toml; this file only lists extension modules.
Set FOUR_NO_EXTENSIONS=1 to build a pure-Python install. A missing compiler (or any
build failure of the extension) is not fatal: the extension is optional and
`four.quaternary` falls back to its pure-Python accounting core.
"""

import os

from setuptools import Extension, setup

MODULES = ("four.quaternary._accounting_c", "four._chain_c")

ext_modules: list[Extension] = []
if not os.environ.get("FOUR_NO_EXTENSIONS"):
    try:
        from Cython.Build import cythonize
    except ImportError:
        cythonize = None
    for name in MODULES:
        source = "src/" + name.replace(".", "/")
        if cythonize is not None and os.path.exists(source + ".pyx"):
            ext_modules += cythonize(
                [Extension(name, [source + ".pyx"])],
                compiler_directives={"language_level": "3"},
            )
        elif os.path.exists(source + ".c"):  # an sdist that ships the generated C
            ext_modules.append(Extension(name, [source + ".c"]))
for ext in ext_modules:
    ext.optional = True  # set after cythonize(), which drops it


setup(ext_modules=ext_modules)
