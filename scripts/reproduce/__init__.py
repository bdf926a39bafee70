"""The sections of ``scripts/reproduce_paper.py`` (see that script for usage).

``common`` holds the shared constants and helpers, ``baseball``, ``iris`` and
``leukemia`` compute and write one section each, and ``report`` assembles the
markdown document with its summary.
"""

import os

# One BLAS / OpenMP thread: the machine is shared, and k-means / NMF results
# are then independent of the thread count.  Set here, before any submodule
# imports numpy.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
