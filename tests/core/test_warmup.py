"""sca.warm: a fresh process compiles (or loads) every kernel its jobs call before
the first job, so the jobs after it compile nothing."""

import json
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow

SCRIPT = textwrap.dedent(
    """
    import json, numpy as np, sca
    from sca.operators import compiled
    from sca.planted import planted_runs, planted_truth

    def signatures():
        return {name: len(f.signatures) for name in dir(compiled)
                if hasattr(getattr(compiled, name), "signatures")
                for f in [getattr(compiled, name)]}

    first = sca.warm()
    warmed = signatures()
    rng = np.random.default_rng(1)
    # the last as many labels as elements: the iteration's single-precision products
    for runs, k, n in ((100, 5, 70_000), (10, 5, 12_000), (30, 12, 9_000), (100, 100, 10_000)):
        labels = planted_runs(planted_truth(n, [1] * k, rng), runs, 0.4, rng)
        sca.run_stages(sca.membership_operator(labels), {"seed": 0}, {})
    # the groups of a count by bounds (sca.bounds), on the last runs
    from sca.operators.kernels import strong_pair_roots
    strong_pair_roots(sca.membership_operator(labels).H, 3)
    print(json.dumps({"warmed": warmed, "after": signatures(), "again": sca.warm(),
                      "first": first}))
    """
)


def test_jobs_after_warm_compile_nothing():
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, timeout=600
    )
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found["after"] == found["warmed"]
    # the byte codes' pair counts and the wide codes' gathers (loops that another
    # loop inlines, or that no stage calls, list no signature of their own)
    assert found["warmed"]["joint_pairs"] and found["warmed"]["mat_wide4"], found
    assert found["warmed"]["join_strong_pairs"] and found["warmed"]["merge_forests"], found
    assert found["first"] > 0 and found["again"] == 0.0
