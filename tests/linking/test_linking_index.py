"""Building, persisting and checking the concept index."""

from __future__ import annotations

import json
import os

import pytest

from causalkg.core.errors import SchemaError, SourceError
from causalkg.core.manifest import file_sha256, read_manifest
from causalkg.linking.index import build_index, index_dir
from causalkg.linking.linker import Linker


def test_build_writes_index_metadata_and_manifest(built, small_vocab):
    folder = built / "data" / "linking"
    assert sorted(p.name for p in folder.iterdir()) == ["concepts.jsonl", "index.faiss", "manifest.json", "surfaces.jsonl"]
    m = read_manifest(folder)
    concepts_file = built / "data" / "wikidata" / "concepts.jsonl"
    assert m["stage"] == "linking" and m["index"]["model"] == "all-MiniLM-L6-v2"
    assert m["index"]["model_fingerprint"].startswith("sha256:")
    assert m["index"]["settings"] == {"type": "flat"}
    assert m["models"]["encoder"]["spec"] == "sentence-transformers.v1:all-MiniLM-L6-v2"  # the versioned registry name
    assert m["inputs"]["concepts"]["sha256"] == file_sha256(concepts_file)
    assert m["inputs"]["concepts"]["path"] == os.path.join("wikidata", "concepts.jsonl")
    assert m["counts"]["concepts"] == len(small_vocab) == 228
    assert m["counts"]["classes"] + m["counts"]["instances"] == 228
    surfaces = [json.loads(x) for x in (folder / "surfaces.jsonl").read_text().splitlines()]
    assert m["counts"]["surfaces"] == len(surfaces) == 420
    assert {"qid": "Q8070", "surface": "tsunami", "primary": True} in surfaces


def test_the_index_file_is_faiss_serialisation_of_the_vectors_of_every_surface(built, small_vocab):
    """The build writes the index through FAISS's writer as it serialises (no in-memory copy):
    the file is whole, FAISS reads it back to the same bytes, and row i is the encoder's vector
    of surface i (the vectors are put into one array chunk by chunk, in order)."""
    import faiss
    import numpy as np

    from causalkg.linking.encoder import create_encoder

    folder = built / "data" / "linking"
    data = (folder / "index.faiss").read_bytes()
    index = faiss.read_index(str(folder / "index.faiss"))
    assert faiss.serialize_index(index).tobytes() == data
    surfaces = [json.loads(x)["surface"] for x in (folder / "surfaces.jsonl").read_text().splitlines()]
    assert index.ntotal == len(surfaces) == 420
    enc = create_encoder("all-MiniLM-L6-v2", device="cpu")
    rows = [0, 1, 211, 419]
    vecs = np.vstack([index.reconstruct(i) for i in rows])
    assert np.array_equal(vecs, enc.encode([surfaces[i] for i in rows]))


def test_rebuild_is_skipped_when_nothing_changed(project, make_cfg):
    cfg = make_cfg(project)
    before = (index_dir(cfg) / "index.faiss").stat().st_mtime_ns
    result = build_index(cfg)
    assert result["built"] is False and result["reasons"] == []
    assert (index_dir(cfg) / "index.faiss").stat().st_mtime_ns == before
    # touched but not changed: the checksum decides
    concepts = project / "data" / "wikidata" / "concepts.jsonl"
    os.utime(concepts, ns=(before + 10**9, before + 10**9))
    assert build_index(cfg)["built"] is False
    Linker.load(cfg)
    assert build_index(cfg, refresh=True)["reasons"] == ["--force"]


def test_a_changed_vocabulary_is_stale_then_rebuilt(project, small_vocab, make_cfg, write_concepts):
    cfg = make_cfg(project)
    concepts = project / "data" / "wikidata" / "concepts.jsonl"
    extra = {"id": "Q3199915", "kind": "class", "label": "massacre", "aliases": ["slaughter"]}  # from the Base KG
    write_concepts(concepts, small_vocab + [extra])
    with pytest.raises(SourceError) as err:
        Linker.load(cfg)
    assert "stale" in str(err.value) and "changed since the index was built" in str(err.value)
    assert err.value.hint == "run causalkg link build"
    result = build_index(cfg)
    assert result["built"] and "changed since the index was built" in result["reasons"][0]
    assert result["counts"]["surfaces"] == 422
    assert Linker.load(cfg).link(["a series of slaughters"], k=1)[0][0].qid == "Q3199915"


def test_missing_index_and_missing_concepts(tmp_path, make_cfg):
    cfg = make_cfg(tmp_path)
    with pytest.raises(SourceError) as err:
        Linker.load(cfg)
    assert str(err.value) == f"no concept index in {tmp_path / 'data' / 'linking'} (run causalkg link build)"
    with pytest.raises(SourceError, match="concepts file not found.*run causalkg corpus build"):
        build_index(cfg)


def test_a_half_written_build_counts_as_missing(project, make_cfg):
    cfg = make_cfg(project)
    (index_dir(cfg) / "manifest.json").unlink()  # what a build killed before its last write leaves
    with pytest.raises(SourceError, match="no concept index"):
        Linker.load(cfg)
    assert build_index(cfg)["built"]


def test_bad_concept_lines_fail_with_path_and_line_or_are_skipped(tmp_path, small_vocab, make_cfg, write_concepts):
    concepts = write_concepts(tmp_path / "c.jsonl", small_vocab[:5])
    with open(concepts, "a") as fh:
        fh.write('{"id": "war", "kind": "class", "label": "war"}\n')
    cfg = make_cfg(tmp_path)
    with pytest.raises(SchemaError, match=r"c\.jsonl:6: id: String should match pattern"):
        build_index(cfg, concepts_path=concepts)
    assert not (tmp_path / "data" / "linking" / "manifest.json").exists()
    result = build_index(cfg, concepts_path=concepts, lenient=True)
    assert result["built"] and result["counts"]["concepts"] == 5 and result["counts"]["skipped_lines"] == 1
    assert any("1 bad lines skipped" in n for n in result["notes"])


def test_duplicates_and_concepts_without_names(tmp_path, small_vocab, make_cfg, write_concepts):
    war = next(c for c in small_vocab if c["id"] == "Q198")
    rows = [war, {"id": "Q198", "kind": "class", "label": "war", "aliases": ["warfare"]},
            {"id": "Q99999999", "kind": "instance", "label": None, "aliases": []}]
    result = build_index(make_cfg(tmp_path), concepts_path=write_concepts(tmp_path / "c.jsonl", rows))
    assert result["counts"]["concepts"] == 1 and result["counts"]["merged_duplicates"] == 1
    assert result["counts"]["without_surface"] == 1
    # "War" and "war" fold to one surface form; "warfare" was merged in
    surfaces = [json.loads(x)["surface"] for x in (tmp_path / "data" / "linking" / "surfaces.jsonl").read_text().splitlines()]
    assert surfaces == ["war", "military conflict", "hostilities", "conflict", "wars", "warfare"]


def test_a_changed_model_forces_a_rebuild(project, other_model, linker, make_cfg):
    cfg = make_cfg(project)
    other = make_cfg(project, model=str(other_model))
    result = build_index(other)
    assert result["built"]
    assert "built with model 'all-MiniLM-L6-v2'" in result["reasons"][0]
    assert read_manifest(index_dir(cfg))["index"]["model"] == str(other_model)
    # the default config now refuses the index instead of mixing two models' vectors
    with pytest.raises(SourceError, match="stale: the index was built with model .*minilm-maxpool"):
        Linker.load(cfg)
    reloaded = Linker.load(other)
    assert reloaded.model_id == str(other_model)
    phrase = ["King Wiliam's war"]  # misspelt: a nearest neighbour, not an exact match
    theirs = reloaded.link(phrase, k=1, threshold=-1.0, instance_threshold=-1.0)[0][0].score
    ours = linker.link(phrase, k=1, threshold=-1.0, instance_threshold=-1.0)[0][0].score
    assert theirs != pytest.approx(ours, abs=1e-4)  # really another model
    assert build_index(other)["built"] is False


@pytest.mark.slow
def test_a_model_changed_in_place_is_detected(project, other_model, tmp_path, make_cfg):
    import shutil

    folder = tmp_path / "model"
    shutil.copytree(other_model, folder, symlinks=True)
    cfg = make_cfg(project, model=str(folder))
    assert build_index(cfg)["built"]
    Linker.load(cfg)
    pooling = folder / "1_Pooling" / "config.json"
    conf = json.loads(pooling.read_text())
    conf.update(pooling_mode_max_tokens=False, pooling_mode_cls_token=True)
    pooling.write_text(json.dumps(conf))
    with pytest.raises(SourceError, match="changed since the index was built .fingerprint"):
        Linker.load(cfg)
    assert "changed since" in build_index(cfg)["reasons"][0]


@pytest.mark.slow
def test_another_index_type_is_stale_until_rebuilt(project, make_cfg, linker):
    hnsw = make_cfg(project, index="hnsw")
    with pytest.raises(SourceError, match="the config asks for {'type': 'hnsw'"):
        Linker.load(hnsw)
    result = build_index(hnsw)
    assert result["built"] and result["index"] == {"type": "hnsw", "m": 32, "ef_construction": 80}
    assert Linker.load(hnsw).link(["the tsunamis"], k=1)[0][0].qid == "Q8070"
    ivf = build_index(make_cfg(project), index="ivf")
    assert ivf["built"] and ivf["index"]["type"] == "ivf"
    phrases = ["civil unrest", "King Williams war", "earthquake damage"]
    flat_top = [r[0].qid for r in linker.link(phrases, k=1)]
    assert [r[0].qid for r in Linker.load(make_cfg(project, index="ivf")).link(phrases, k=1)] == flat_top


def test_auto_picks_flat_or_ivf_by_the_vocabulary_size(project, make_cfg, linker, monkeypatch):
    import causalkg.linking.index as index_module
    from causalkg.linking.index import AUTO_IVF_CONCEPTS, build_settings

    auto = make_cfg(project, index="auto")
    assert build_settings(auto, concepts=AUTO_IVF_CONCEPTS - 1) == {"type": "flat"}
    assert build_settings(auto, concepts=AUTO_IVF_CONCEPTS)["type"] == "ivf"
    # 228 concepts: auto is flat, so the flat index built before is current under auto and flat
    current = build_index(auto)
    assert current["built"] is False and current["index"] == {"type": "flat"}
    assert build_index(make_cfg(project, index="flat"))["built"] is False
    # with the bar below this vocabulary auto asks for ivf: stale, then built as ivf
    monkeypatch.setattr(index_module, "AUTO_IVF_CONCEPTS", 100)
    with pytest.raises(SourceError, match="the config asks for {'type': 'ivf'"):
        Linker.load(auto)
    result = build_index(auto)
    assert result["built"] and result["index"]["type"] == "ivf" and result["counts"]["distinct"] == 228
    assert build_index(make_cfg(project, index="ivf"))["built"] is False  # what auto built is ivf
    phrases = ["civil unrest", "King Williams war", "earthquake damage", "the tsunamis"]
    loaded = Linker.load(auto)
    assert loaded.settings["type"] == "ivf"
    assert [[(c.qid, c.score) for c in r] for r in loaded.link(phrases, k=3)] == \
        [[(c.qid, c.score) for c in r] for r in linker.link(phrases, k=3)]  # exact either way


def test_the_flat_writer_writes_what_faiss_writes_chunk_by_chunk(tmp_path):
    """``FlatIndexWriter`` streams the vectors to the file: the bytes are FAISS's serialisation of
    an IndexFlatIP holding them all, whatever the chunks, and FAISS reads the file back."""
    import faiss
    import numpy as np

    from causalkg.core.errors import ModelError
    from causalkg.linking.index import FlatIndexWriter

    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((23, 5)).astype(np.float32)
    reference = faiss.IndexFlatIP(5)
    reference.add(vectors)
    path = tmp_path / "index.faiss"
    with open(path, "wb") as fh:
        fh.write(b"")  # the writer patches its header where it began
        writer = FlatIndexWriter(fh, 5)
        for lo, hi in ((0, 1), (1, 1), (1, 13), (13, 23)):
            writer.add(vectors[lo:hi])
        with pytest.raises(ModelError, match=r"shape \(2, 4\)"):
            writer.add(vectors[:2, :4])
        writer.finish()
    assert writer.ntotal == 23
    assert path.read_bytes() == faiss.serialize_index(reference).tobytes()
    back = faiss.read_index(str(path))
    assert back.ntotal == 23 and np.array_equal(back.reconstruct_n(0, 23), vectors)


def test_the_ivf_writer_writes_what_faiss_writes_chunk_by_chunk(tmp_path, monkeypatch):
    """``IvfIndexWriter`` reads the vectors a chunk at a time, from memory or from a raw file:
    the bytes are FAISS's serialisation of the IndexIVFFlat FAISS makes by adding them all to an
    index with the same centroids (with its direct map), with most lists filled (sizes written
    in full) and with few (sparse), and FAISS reads the file back. The centroids trained from
    the file (a group at a time, through a scratch file) are those trained in memory."""
    import faiss
    import numpy as np

    import causalkg.linking.index as index_module
    from causalkg.core.errors import ModelError
    from causalkg.linking.index import ArrayVectors, IvfIndexWriter, VectorFile, _empty_ivf, ivf_centroids

    rng = np.random.default_rng(11)
    vectors = rng.standard_normal((1200, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    (tmp_path / "raw").write_bytes(vectors.tobytes())
    for chunk in (7, 500, 8192):
        monkeypatch.setattr(index_module, "IVF_CHUNK", chunk)
        source = VectorFile(tmp_path / "raw", 8)
        centroids = ivf_centroids(source, 30, seed=3)
        assert np.array_equal(centroids, ivf_centroids(ArrayVectors(vectors), 30, seed=3))
        assert source.scratch.exists()
        for c, rows in ((centroids, slice(None)), (rng.standard_normal((40, 8)).astype(np.float32), slice(0, 9))):
            reference = _empty_ivf(c)
            reference.add(vectors[rows])
            reference.make_direct_map()
            expected = faiss.serialize_index(reference).tobytes()
            part = tmp_path / "part"
            part.write_bytes(vectors[rows].tobytes())
            with open(tmp_path / "index.faiss", "wb") as fh:
                assert IvfIndexWriter(c).write(fh, VectorFile(part, 8)) == len(vectors[rows])
            assert (tmp_path / "index.faiss").read_bytes() == expected
        source.remove()
        assert not source.path.exists() and not source.scratch.exists()
        (tmp_path / "raw").write_bytes(vectors.tobytes())
    back = faiss.read_index(str(tmp_path / "index.faiss"))
    assert back.ntotal == 9 and np.array_equal(back.reconstruct_n(0, 9), vectors[:9])
    # a FAISS that lays the file out otherwise is refused
    monkeypatch.setattr(IvfIndexWriter, "checked", False)
    monkeypatch.setattr(index_module, "_EMPTY_TAIL", index_module._EMPTY_TAIL + 1)
    with pytest.raises(ModelError, match="writes an IVF index in a layout"):
        IvfIndexWriter(centroids)


def test_an_ivf_build_streams_and_is_the_index_made_in_memory(project, make_cfg, monkeypatch):
    """link build with ivf writes the vectors to a raw file and makes the index from it a chunk
    at a time: the index is the one ``fill_index`` makes in memory from the same vectors (the
    flat build's), whatever the chunk size, and no raw or scratch file is left."""
    import faiss
    import numpy as np

    import causalkg.linking.index as index_module
    from causalkg.linking.index import fill_index, ivf_nlist, make_faiss_index

    folder = project / "data" / "linking"
    flat = faiss.read_index(str(folder / "index.faiss"))
    vectors = flat.reconstruct_n(0, flat.ntotal)
    ivf = make_cfg(project, index="ivf")
    settings = {"type": "ivf", "nlist": 0}
    in_memory = fill_index(make_faiss_index(settings, vectors.shape[1], len(vectors)), vectors)
    assert in_memory.nlist == ivf_nlist(0, len(vectors)) and in_memory.ntotal == len(vectors)
    expected = faiss.serialize_index(in_memory).tobytes()
    for chunk in (8192, 13):
        monkeypatch.setattr(index_module, "IVF_CHUNK", chunk)
        assert build_index(ivf, refresh=True)["built"]
        assert (folder / "index.faiss").read_bytes() == expected
        assert sorted(p.name for p in folder.iterdir()) == ["concepts.jsonl", "index.faiss", "manifest.json", "surfaces.jsonl"]
    # a killed ivf build's vector and scratch files go at the next build, of any type
    for name in ("index.faiss.vectors", "index.faiss.vectors.grouped"):
        (folder / name).write_bytes(b"\0" * 64)
    assert build_index(make_cfg(project, index="flat"))["built"]
    assert sorted(p.name for p in folder.iterdir()) == ["concepts.jsonl", "index.faiss", "manifest.json", "surfaces.jsonl"]


def test_a_build_in_many_chunks_is_the_same_bytes_as_in_one(tmp_path, built, small_vocab, make_cfg, write_concepts, monkeypatch):
    """The build streams the vocabulary in chunks of EMBED_CHUNK surface forms; chunks of 7
    (420 forms: 60 of them, the last ending on a boundary) and of 11 (the last one short) give
    the files of one chunk, and a repeated concept id far from its first line still merges."""
    import causalkg.linking.index as index_module

    names = ("index.faiss", "surfaces.jsonl", "concepts.jsonl")
    reference = {n: (built / "data" / "linking" / n).read_bytes() for n in names}
    for chunk in (7, 11):
        monkeypatch.setattr(index_module, "EMBED_CHUNK", chunk)
        root = tmp_path / f"chunk{chunk}"
        write_concepts(root / "data" / "wikidata" / "concepts.jsonl", small_vocab)
        result = build_index(make_cfg(root))
        assert result["counts"]["surfaces"] == 420
        assert {n: (root / "data" / "linking" / n).read_bytes() for n in names} == reference

    # the first concept again, at the end, with one more alias: merged into its first place
    first = dict(small_vocab[0], aliases=[*small_vocab[0].get("aliases", []), "a name only the repeat has"])
    root = tmp_path / "repeated"
    write_concepts(root / "data" / "wikidata" / "concepts.jsonl", [*small_vocab, first])
    result = build_index(make_cfg(root))
    assert result["counts"]["concepts"] == 228 and result["counts"]["merged_duplicates"] == 1
    assert result["counts"]["lines"] == 229
    concepts = [json.loads(x) for x in (root / "data" / "linking" / "concepts.jsonl").read_text().splitlines()]
    assert [c["id"] for c in concepts] == [c["id"] for c in small_vocab]
    surfaces = [json.loads(x) for x in (root / "data" / "linking" / "surfaces.jsonl").read_text().splitlines()]
    mine = [s["surface"] for s in surfaces if s["qid"] == small_vocab[0]["id"]]
    assert mine[-1] == "a name only the repeat has"
    assert surfaces.index({"qid": small_vocab[0]["id"], "surface": "a name only the repeat has", "primary": False}) == len(mine) - 1


def test_a_loaded_flat_index_is_mapped_from_its_file_not_copied(built):
    """``read_index_files`` maps the vectors (FAISS's IO_FLAG_MMAP_IFC): processes that load one
    index (the assembly's pool workers) share its pages; the mapped index answers as a copy."""
    import faiss
    import numpy as np

    from causalkg.linking.index import read_index_files

    folder = built / "data" / "linking"
    index, surfaces, _ = read_index_files(folder)
    maps = open("/proc/self/maps").read()
    assert str((folder / "index.faiss").resolve()) in maps
    copy = faiss.read_index(str(folder / "index.faiss"))
    queries = copy.reconstruct_n(0, 30)
    assert [a.tolist() for a in index.search(queries, 5)] == [a.tolist() for a in copy.search(queries, 5)]
    assert np.array_equal(index.reconstruct_n(0, len(surfaces)), copy.reconstruct_n(0, len(surfaces)))


def test_a_loaded_index_shares_its_qids_and_class_lists_between_records(built):
    """``read_index_files`` gives the files' values, with each QID one string object, the
    QID lists as tuples shared by the records that hold the same list and the surface rows as
    columns (less memory per linker)."""
    from causalkg.linking.index import SurfaceRows, compact_record, read_index_files

    folder = built / "data" / "linking"
    _, surfaces, concepts = read_index_files(folder)
    on_disk = [json.loads(x) for x in (folder / "concepts.jsonl").read_text().splitlines()]
    assert [{k: list(v) if isinstance(v, tuple) else v for k, v in c.items()} for c in concepts] == on_disk
    rows = [json.loads(x) for x in (folder / "surfaces.jsonl").read_text().splitlines()]
    assert surfaces == rows and list(surfaces) == rows and surfaces[1:3] == rows[1:3]
    # held as columns, no dict per row: the QIDs, the surface forms, the primary flags
    assert isinstance(surfaces, SurfaceRows) and surfaces.surface == [r["surface"] for r in rows]
    assert list(surfaces.primary) == [int(r["primary"]) for r in rows] and any(surfaces.primary)
    assert all(isinstance(c["instance_of"], tuple) for c in concepts)
    lists: dict = {}
    for c in concepts:
        first = lists.setdefault(c["instance_of"], c["instance_of"])
        assert first is c["instance_of"]  # equal lists are one object
    assert len(lists) < len(concepts)
    by_id = {c["id"]: c["id"] for c in concepts}
    assert all(s["qid"] is by_id[s["qid"]] for s in surfaces if s["qid"] in by_id)
    assert compact_record("not a record", {}) == "not a record"
