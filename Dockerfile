# The image of docker-compose.yml's api and worker services: the package with
# the `server` extra.  The build context is this folder minus .dockerignore.
FROM python:3.11-slim
WORKDIR /app
COPY . /app
RUN pip install --no-cache-dir '.[server]'
# The compiled kernels (numba, cached beside the package) are compiled here,
# once, not by each container's first job of more than 4,096 elements: for
# the copy in /app (which `celery -A worker` imports, /app being its working
# directory) and the installed one (`sca serve`).
RUN for dir in /app /; do cd $dir && python -c "import numpy as np, sca; \
from sca.planted import planted_runs, planted_truth; rng = np.random.default_rng(0); \
truth = planted_truth(70000, [1] * 5, rng); \
assert sca.cluster(labels=planted_runs(truth, 100, 0.5, rng, dtype=np.uint8))['k'] == 5" \
|| exit 1; done
