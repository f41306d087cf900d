"""One compile cache for the model tests (a fresh folder per run): the step programs of a model
compile once for every test that runs them."""
import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def model_cache(tmp_path_factory):
    old = os.environ.get("PTOX_CACHE_DIR")
    os.environ["PTOX_CACHE_DIR"] = str(tmp_path_factory.mktemp("ptox-cache"))
    yield
    if old is None:
        os.environ.pop("PTOX_CACHE_DIR", None)
    else:
        os.environ["PTOX_CACHE_DIR"] = old
