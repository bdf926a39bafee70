# The image of docker-compose.yml's services (api, worker, and the Dask scheduler
# and workers of the profile "dask"): the package with the `server` and `dask`
# extras.  The build context is this folder minus .dockerignore.
FROM python:3.11-slim
WORKDIR /app
COPY . /app
RUN pip install --no-cache-dir '.[server,dask]'
# The compiled kernels (numba, cached beside the package) are compiled here,
# once, not by each container's first job (`python -m sca warm`, which imports
# the package of the working directory): for the copy in /app
# (which `celery -A worker` imports, /app being its working directory) and the
# installed one (`sca serve`).  Workers still load them before their first task.
RUN for dir in /app /; do cd $dir && python -m sca warm || exit 1; done
