"""A Griffe extension: the names that ``sca`` exports lazily, as members of
``sca``; and the docstrings' Sphinx roles as code.

``sca/__init__.py`` loads its public names on first use (PEP 562) from the
table ``_EXPORTS`` (module -> names) instead of importing them, so Griffe's
static analysis sees no ``sca.cluster``.  This extension reads that table from
the source and adds each name to the package as an alias of the object it
names, so that the reference documents ``sca.cluster`` and not the module
that happens to define it.

The docstrings are numpydoc, whose cross-references are Sphinx roles
(:func:`sca.cluster`), which mkdocstrings does not read: each is shown as
the code it names (no Griffe extension that does this was found).

``mkdocs.yml`` loads this file (mkdocstrings' python handler, ``extensions``).
"""

from __future__ import annotations

import ast
import re
from typing import Any

import griffe

#: Packages whose lazy-export table is read, and the table's name.
TABLES = {"sca": "_EXPORTS"}
#: A Sphinx cross-reference role, ``:func:`~a.b```: its target (``~`` shows the last part).
ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|attr|data|exc|obj|const):`(~?)([^`]+)`")


def _code(match: re.Match) -> str:
    target = match[2].rsplit(".", 1)[-1] if match[1] else match[2]
    return f"`{target}`"


class LazyExports(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        _roles_as_code(pkg)
        table = TABLES.get(pkg.path)
        if table is None or table not in pkg.members:
            return
        exports = ast.literal_eval(str(pkg.members[table].value))
        # Griffe's dataclass pass (the constructors' parameters) walks the package
        # after this extension and skips aliases: a module replaced below by its
        # function (``sca.balance``) would keep dataclasses without a constructor.
        griffe.DataclassesExtension().on_package(pkg=pkg)
        for module, names in exports.items():
            for name in names:
                target = _find(pkg, module, name)
                # A function named after its module (``sca.balance``) replaces the
                # module as the package's member, as it does at run time.
                pkg.set_member(name, griffe.Alias(name, target, parent=pkg))


def _find(pkg: griffe.Module, module: str, name: str) -> griffe.Object | griffe.Alias:
    """``pkg.module.name``, or where a module of ``pkg`` defines ``name`` when
    ``module`` itself provides it only at run time (a module ``__getattr__``)."""
    try:
        return pkg[f"{module}.{name}"]
    except KeyError:
        pass
    todo = [pkg]
    while todo:
        current = todo.pop()
        member = current.members.get(name)
        if member is not None and not member.is_alias and current is not pkg:
            return member
        todo.extend(current.modules.values())
    raise KeyError(f"{pkg.path}.{module}.{name}: defined nowhere in {pkg.path}")


def _roles_as_code(obj: griffe.Object) -> None:
    """Every docstring under ``obj`` with its Sphinx roles as inline code."""
    if obj.docstring is not None:
        obj.docstring.value = ROLE.sub(_code, obj.docstring.value)
    for member in obj.members.values():
        if not member.is_alias:
            _roles_as_code(member)
