# The image of docker-compose.yml's api and worker services: the package with
# the `server` extra.  The build context is this folder minus .dockerignore.
FROM python:3.11-slim
WORKDIR /app
COPY . /app
RUN pip install --no-cache-dir '.[server]'
