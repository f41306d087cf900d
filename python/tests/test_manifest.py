"""The build manifest as the Python package reports it: the fields `ptox version --json` has,
and per compiled target the identity the compile cache keys its entries on."""
import re

import ptox


def test_the_manifest_names_the_source_and_each_targets_cache_identity():
    m = ptox.build_manifest()
    assert m["version"] == ptox.__version__
    assert m["commit"] == "unknown" or re.fullmatch(r"[0-9a-f]{40}", m["commit"])
    assert isinstance(m["dirty"], bool)
    assert m["source_tree"] == "unknown" or re.fullmatch(r"[0-9a-f]{40}", m["source_tree"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", m["build_time"])
    names = [t["name"] for t in m["targets"]]
    assert "interp" in names
    available = [t["name"] for t in m["targets"] if t["available"]]
    assert available == ptox.available_targets()
    for t in m["targets"]:
        if t["name"].startswith("cpu-"):
            assert re.fullmatch(r"[0-9a-f]{32}", t["identity"])
            # The package compiles against the kernel headers it ships.
            assert t["parts"]["kernels"].startswith(ptox.__path__[0])
