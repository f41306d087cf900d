"""One compile cache for the model tests (a fresh folder per run): the step programs of a model
compile once for every test that runs them, also when pytest-xdist runs them in several workers
(the cache is safe to share between processes: src/driver/cache.cc)."""
import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def model_cache(tmp_path_factory):
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's folder, above each worker's own
    cache = base / "ptox-cache"
    cache.mkdir(exist_ok=True)
    old = os.environ.get("PTOX_CACHE_DIR")
    os.environ["PTOX_CACHE_DIR"] = str(cache)
    yield
    if old is None:
        os.environ.pop("PTOX_CACHE_DIR", None)
    else:
        os.environ["PTOX_CACHE_DIR"] = old
