"""The semantic leg in the store: embedding, the cache, sqlite-vec, model checks, the shell."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memstore import ModelError, ModelMismatchError, open_store
from memstore.db import _sqlite_vec_path
from memstore.legs import Filters, vector
from memstore.vectors import query_vector
from tests.conftest import DEMO, run_cli

PETS = [
    {"role": "user", "content": "My cat Pixel knocked a glass off the table again."},
    {"role": "assistant", "content": "Cats often push things off tables to get attention."},
    {"role": "user", "content": "I'm repainting the spare bedroom a pale green this weekend."},
    {"role": "user", "content": "The quarterly tax filing is due at the end of the month."},
]


@pytest.fixture
def vstore(db_path: Path, minilm_path: Path):
    store = open_store(db_path, model=str(minilm_path))
    store.add_session("home", "s1", "2024-05-01T10:00", PETS)
    store.add_session("home", "s2", "2024-05-09T10:00", [
        {"role": "user", "content": "Our kitten keeps chewing the charging cables."},
    ])
    yield store
    store.close()


def test_embed_then_search_finds_a_paraphrase_bm25_misses(vstore) -> None:
    report = vstore.embed()
    assert (report.items, report.computed, report.cached) == (5, 5, 0)
    query = "feline misbehaving at home"
    assert vstore.search(query, scope="home", mode="bm25", latest_slots=0) == []
    hits = vstore.search(query, scope="home", mode="vector", k=2, latest_slots=0)
    assert {h.item.session for h in hits} <= {"s1", "s2"}
    assert all("cat" in h.item.content.lower() or "kitten" in h.item.content.lower() for h in hits)
    fused = vstore.search("kitten cables", scope="home", k=3, latest_slots=0)
    assert fused[0].item.content.startswith("Our kitten")
    assert set(fused[0].legs) == {"bm25", "vector"}


def test_requests_for_advice_lean_on_the_vector_leg(vstore) -> None:
    vstore.embed()
    advice = vstore.search("Can you recommend a toy for my cat?", scope="home", k=3, latest_slots=0)
    plain = vstore.search("Can you recommend a toy for my cat?", scope="home", k=3, latest_slots=0, adaptive=False)
    for hits, factor in ((advice, 4.0), (plain, 1.0)):
        for h in hits:
            lr = h.legs["vector"]
            assert lr.contribution == pytest.approx(factor / (60 + lr.rank))
            if "bm25" in h.legs:
                assert h.legs["bm25"].contribution == pytest.approx(1 / (60 + h.legs["bm25"].rank))
    fact = vstore.search("my cat Pixel", scope="home", k=3, latest_slots=0)
    assert all(h.legs["vector"].contribution == pytest.approx(1 / (60 + h.legs["vector"].rank))
               for h in fact if "vector" in h.legs)


def test_vector_leg_filters_inside_sqlite_vec(vstore) -> None:
    vstore.embed()
    embedder = vstore.embedder()
    qv = query_vector(vstore.conn, embedder, "cat")
    sid = vstore.scope_id("home")
    users = vector(vstore.conn, qv, Filters(sid, roles=("user",)), 10)
    items = vstore.items_by_id(users)
    assert {items[i].role for i in users} == {"user"} and len(users) == 4
    early = vector(vstore.conn, qv, Filters(sid, as_of="2024-05-01T23:59:59"), 10)
    assert {vstore.items_by_id(early)[i].session for i in early} == {"s1"}
    late = vector(vstore.conn, qv, Filters(sid, after="2024-05-01T23:59:59"), 10)
    assert {vstore.items_by_id(late)[i].session for i in late} == {"s2"}
    vstore.add_session("other", "o1", "2024-05-01", [{"role": "user", "content": "My cat sleeps all day."}])
    vstore.embed()
    assert set(vector(vstore.conn, qv, Filters(sid), 50)) == set(users) | {
        i.id for i in vstore.items("home", roles=["assistant"])}


def test_cache_embeds_identical_text_once(vstore) -> None:
    vstore.embed()
    vstore.add_session("copy", "c1", "2024-06-01", PETS)
    report = vstore.embed()
    assert (report.items, report.computed, report.cached) == (4, 0, 4)
    again = vstore.embed()
    assert again.items == 0 and again.computed == 0
    forced = vstore.embed(force=True)
    assert forced.items == 9 and forced.computed == 5  # the cache was cleared; duplicates still computed once
    assert vstore.stats().embedded_items == 9


def test_replacing_a_session_drops_its_vectors(vstore) -> None:
    vstore.embed()
    vstore.add_session("home", "s2", "2024-05-09T10:00", [{"role": "user", "content": "Puppy training went well."}])
    assert vstore.stats().embedded_items == 4
    assert vstore.embed().computed == 1
    vstore.delete_session("home", "s1")
    assert vstore.stats().embedded_items == 1


def test_corrupted_cache_row_is_repaired(vstore) -> None:
    vstore.embed()
    vstore.conn.execute("UPDATE embeddings SET vector = x'00010203'")
    vstore.add_session("copy", "c1", "2024-06-01", PETS[:1])
    report = vstore.embed()
    assert (report.computed, report.repaired) == (1, 1)
    assert len(vstore.conn.execute("SELECT vector FROM embeddings LIMIT 1").fetchall()[0][0]) == 384 * 4


def test_model_mismatch_is_refused(vstore, tiny_gemma_path: Path, db_path: Path) -> None:
    vstore.embed()
    other = open_store(db_path, model=str(tiny_gemma_path))
    with pytest.raises(ModelMismatchError) as exc:
        other.search("cat", scope="home", mode="vector")
    message = str(exc.value)
    assert "all-MiniLM-L6-v2" in message and "384 dims" in message and "64 dims" in message
    assert "memstore embed --force" in message
    with pytest.raises(ModelMismatchError):
        other.embed()
    report = other.embed(force=True)
    assert report.dim == 64 and report.items == 5
    other.close()


def test_vector_mode_without_embeddings_or_model(store) -> None:
    store.import_file(DEMO)
    with pytest.raises(ModelError, match="memstore embed"):
        store.search("kitten", scope="demo", mode="vector")


def test_embed_without_a_model_says_how_to_get_one(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    assert run_cli("import", str(DEMO), "--db", str(db)).code == 0
    r = run_cli("embed", "--db", str(db))
    assert r.code == 1 and "memstore model pull" in r.err and "Traceback" not in r.err
    search = run_cli("search", "kitten", "--scope", "demo", "--db", str(db))
    assert search.code == 0 and search.err.count("BM25 only") == 1


def test_embed_is_resumable_after_a_kill(tmp_path: Path, minilm_path: Path) -> None:
    db = tmp_path / "m.db"
    with open_store(db) as store:
        turns = [{"role": "user", "content": f"Note number {i}: the weather was {'sunny' if i % 2 else 'rainy'}"
                                             f" and I walked {i} kilometres along the river."} for i in range(600)]
        store.add_session("walks", "w", "2024-01-01", turns)
    env = {**os.environ, "MEMSTORE_MODEL": str(minilm_path)}
    proc = subprocess.Popen([sys.executable, "-m", "memstore", "embed", "--db", str(db), "--batch", "8", "-q"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    done = 0
    deadline = time.monotonic() + 120
    with open_store(db) as reader:
        while time.monotonic() < deadline and proc.poll() is None:
            done = reader.stats().embedded_items
            if done >= 16:
                break
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        done = reader.stats().embedded_items
    assert 16 <= done < 600, done
    assert done % 8 == 0  # only whole batches were committed
    with open_store(db, model=str(minilm_path)) as store:
        report = store.embed()
        assert report.items == 600 - done
        assert store.stats().embedded_items == 600
        n_vec = store.conn.execute("SELECT count(*) FROM items_vec_rowids").fetchall()[0][0]
        n_cache = store.conn.execute("SELECT count(*) FROM embeddings").fetchall()[0][0]
        assert n_vec == 600 and n_cache == 600


def test_import_embed_flag(tmp_path: Path, minilm_path: Path) -> None:
    db = tmp_path / "m.db"
    r = run_cli("import", str(DEMO), "--embed", "--db", str(db), "--json", env={"MEMSTORE_MODEL": str(minilm_path)})
    assert r.code == 0, r.err
    assert r.json()["embed"]["items"] == 20
    fused = run_cli("search", "feline pet", "--scope", "demo", "--db", str(db), "--json", "--explain",
                    env={"MEMSTORE_MODEL": str(minilm_path)})
    assert fused.json()["notices"] == []
    assert any("vector" in h["legs"] for h in fused.json()["hits"])


@pytest.mark.skipif(shutil.which("sqlite3") is None, reason="the sqlite3 shell is not installed")
def test_knn_from_the_stock_sqlite3_shell(vstore) -> None:
    vstore.embed()
    target = vstore.items("home", roles=["user"])[0]
    vstore.close()
    sql = (
        f".load {_sqlite_vec_path()}\n"
        "SELECT v.item_id FROM items_vec v "
        f"WHERE v.embedding MATCH (SELECT embedding FROM items_vec WHERE item_id = {target.id}) "
        "AND k = 3 AND v.scope_id = (SELECT id FROM scopes WHERE name = 'home') AND v.role = 'user';\n"
    )
    proc = subprocess.run(["sqlite3", "-bail", str(vstore.path)], input=sql, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    ids = [int(x) for x in proc.stdout.split()]
    assert ids[0] == target.id and len(ids) == 3
