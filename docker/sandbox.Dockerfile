# The code-mode sandbox image, for users whose machines reach a registry. Pin the packages to
# the versions installed where mlflow-agentic runs (pip freeze), so a pipeline fitted inside
# loads outside; `mlflow-agentic sandbox build` does exactly that offline.
#   docker build -f docker/sandbox.Dockerfile -t my-sandbox \
#     --build-arg PACKAGES="numpy==2.4.6 pandas==3.1.1 scipy==1.17.1 scikit-learn==1.9.1 pyarrow==25.0.1" .
#   then use `my-sandbox` as the sandbox image name (DockerSandbox(image="my-sandbox"))
FROM python:3.11-slim
ARG PACKAGES="numpy pandas scipy scikit-learn pyarrow"
RUN pip install --no-cache-dir --target /opt/agentic/site $PACKAGES
ENV PYTHONPATH=/opt/agentic/site
WORKDIR /tmp
