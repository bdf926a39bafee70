"""Every public name of ``sca`` and ``sca_client`` has a complete numpydoc docstring.

The names are those of each package's ``__all__`` that are functions or
classes, and the public methods and properties of those classes that the
project defines (not those inherited from ``Exception``, scikit-learn's
``BaseEstimator`` and the like); the API reference (docs/reference/) is made
from these docstrings.  Each is checked by ``numpydoc.validate.validate``,
the numpydoc project's own validator, and fails on the codes of ``CHECKED``:

- GL01 to GL10: the docstring exists, its summary starts on the quotes'
  line (or the next), its sections are numpydoc's, in numpydoc's order,
  well formed;
- SS01, SS02, SS03, SS04, SS06: a one-line summary that starts with a capital
  and ends with a full stop;
- PR01 to PR10: every parameter documented, none that does not exist, in
  the signature's order, each with a type and a sentence;
- RT01 to RT05, YD01: what a function returns (or yields), typed and said;
- SA02 to SA04: each See Also entry with a sentence.

Left out, and why:

- SS05 (a summary starting with a verb in the infinitive): numpydoc tests
  only whether the first word ends in "s", which faults summaries that
  start with a noun ("Eigenvalues of P ...", "Labels of new rows ..."); the summaries say
  what a function gives when that is clearer than what it does.
- ES01 (an extended summary): given where it says something the summary
  does not; a rule demanding one would breed filler.
- SA01 (a See Also section): given where a name has a relative or the
  concept is the paper's; not every name has one.
- EX01 (an Examples section): the guides (docs/guide/) hold the examples,
  and tests/docs runs them.

A code that a later numpydoc adds is not checked until it is added here.

A class documents its constructor's parameters under Parameters; a class
that inherits its constructor from another of the package's classes (the
``ServiceError`` subclasses of ``sca_client``) is checked for everything
but its parameters, which its base documents once.  Properties are checked
for their summary and sections (numpydoc asks no Returns of a property).
Constants (``sca_client.ACTIVE``, ``sca_client.ERRORS``) are data, whose
docstrings would be their type's: they are left out.
"""

from __future__ import annotations

import inspect

import numpydoc.validate
import pytest

import sca
import sca_client

PACKAGES = (sca, sca_client)
PROJECT = ("sca", "sca_client")

CHECKED = frozenset(
    """
    GL01 GL02 GL03 GL05 GL06 GL07 GL08 GL09 GL10
    SS01 SS02 SS03 SS04 SS06
    PR01 PR02 PR03 PR04 PR05 PR06 PR07 PR08 PR09 PR10
    RT01 RT02 RT03 RT04 RT05 YD01
    SA02 SA03 SA04
    """.split()
)
#: Codes about parameters, not asked of a class whose constructor is inherited.
PARAMETERS = frozenset(code for code in CHECKED if code.startswith("PR"))


def _ours(obj) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return module.split(".")[0] in PROJECT


def _public_names() -> list[tuple[str, object]]:
    """``(dotted name, object)`` of every function, class, method and property checked."""
    found = []
    for package in PACKAGES:
        for name in package.__all__:
            obj = getattr(package, name)
            if not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            dotted = f"{package.__name__}.{name}"
            found.append((dotted, obj))
            if not inspect.isclass(obj):
                continue
            for cls in obj.__mro__:
                if not _ours(cls):
                    continue
                for member, value in vars(cls).items():
                    if member.startswith("_"):
                        continue
                    if isinstance(value, (staticmethod, classmethod)):
                        value = value.__func__
                    if inspect.isfunction(value) or isinstance(value, property):
                        found.append((f"{dotted}.{member}", getattr(obj, member, value)))
    seen, unique = set(), []
    for dotted, obj in found:
        if dotted not in seen:
            seen.add(dotted)
            unique.append((dotted, obj))
    return unique


def _inherits_constructor(obj) -> bool:
    """A class whose ``__init__`` comes from another of the project's classes."""
    if not inspect.isclass(obj) or "__init__" in vars(obj):
        return False
    for cls in obj.__mro__[1:]:
        if "__init__" in vars(cls):
            return _ours(cls)
    return False


NAMES = _public_names()


@pytest.mark.parametrize("dotted, obj", NAMES, ids=[dotted for dotted, _ in NAMES])
def test_numpydoc(dotted, obj):
    report = numpydoc.validate.validate(dotted)
    checked = CHECKED - PARAMETERS if _inherits_constructor(obj) else CHECKED
    errors = [f"{code} {message}" for code, message in report["errors"] if code in checked]
    assert not errors, f"{dotted} ({report['file']}:{report['file_line']}):\n" + "\n".join(errors)


def test_names_found():
    """The walk finds the packages' names and their classes' methods."""
    names = {dotted for dotted, _ in NAMES}
    assert {"sca.cluster", "sca.StochasticClustering.fit", "sca_client.Job.wait"} <= names
    assert "sca_client.ACTIVE" not in names
    assert not any(name.endswith(".with_traceback") for name in names)
