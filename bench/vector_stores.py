"""Vector stores by hand: ingestion throughput and search latency (figures in bench/README.md).

    .venv/bin/python -m bench.vector_stores                 # both parts, defaults below
    .venv/bin/python -m bench.vector_stores --chunks 100000 --queries 300 --pages 1000

Runs on the embedded PostgreSQL (pgserver ships pgvector 0.6.2) in its own data directory
(`--pgdata`, default /tmp/gateway-bench-vectors/pgdata, reused between runs), or on the
database of `--database-url` (created when missing; its server's pgvector), with the fake
upstream's deterministic embeddings (tests/fake_upstream.py, a process of its own) at
`--dims` dimensions (EMBEDDING_DIMENSIONS; 256 by default to keep a 100,000-chunk HNSW
build within minutes on 2 cores; 1536 is the deployment default).

- Ingestion: `--pages` pages of ~500 words (Zipf over a 5,000-word vocabulary) in files of
  10 pages, each ingested by the task's own code (vector_stores.ingestion.ingest) on this
  thread: chunks stored per second, and this process's CPU per chunk (extraction, chunking,
  the embedding calls' client side, the ORM; not the Postgres server's nor the fake's).
- Search: `--chunks` chunks of 40 words in 1,000 files of one store (attributes `kind`, 5
  values, and `year`), loaded by COPY, the HNSW index built after; then `--queries` searches
  of 3-5 words (from ranks 100 on: the commonest hundred stand for stop words, which the
  `english` configuration drops) through `search_stores` (the query's embedding call included) per case:
  hybrid and vector-only, without a filter, with `eq` (1 file in 5), with `and` of `eq` and
  `gte` (1 in 10). p50 / p99 in ms, and how many results came back.
"""
import argparse
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

VOCABULARY = [f"term{n}" for n in range(5000)]
WEIGHTS = [1.0 / (rank + 1) for rank in range(len(VOCABULARY))]
CONTENT_WORDS = 100  # queries skip the 100 commonest words, as `english` drops stop words
KINDS = ["guide", "faq", "spec", "note", "log"]


def words(rng: random.Random, count: int, start: int = 0) -> str:
    """`count` words drawn by their Zipf weights from the vocabulary's ranks `start` on."""
    return " ".join(rng.choices(VOCABULARY[start:], WEIGHTS[start:], k=count))


def start_fake_upstream(log: Path) -> tuple[subprocess.Popen, str]:
    """The fake upstream in a process of its own, its output to `log` (a pipe left unread
    would fill and stop it)."""
    process = subprocess.Popen([sys.executable, "-m", "tests.fake_upstream", "--port", "0",
                                "--no-record"], stdout=log.open("w"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for line in log.read_text().splitlines():
            if line.startswith("READY "):
                return process, f"http://127.0.0.1:{line.split()[1]}/v1"
        time.sleep(0.1)
    raise RuntimeError(f"the fake upstream did not start: {log.read_text()}")


def setup_django(args, upstream_url: str) -> None:
    os.environ.pop("DATABASE_URL", None)
    os.environ.pop("REDIS_URL", None)
    if args.database_url:
        create_database(args.database_url)
        os.environ["DATABASE_URL"] = args.database_url
    os.environ["EMBEDDED_PGDATA"] = args.pgdata
    os.environ["EMBEDDING_DIMENSIONS"] = str(args.dims)
    os.environ["EMBEDDING_REQUEST_DIMENSIONS"] = "true"
    os.environ["UPSTREAM_BASE_URL"] = upstream_url
    os.environ["UPSTREAM_MAX_RETRIES"] = "0"
    os.environ["FILES_DIR"] = str(Path(args.pgdata).parent / "files")
    os.environ["LOG_LEVEL"] = "WARNING"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def create_database(url: str) -> None:
    """The database of `url` on its server, created when missing (the server's pgvector
    is what `migrate`'s CREATE EXTENSION then installs in it)."""
    import psycopg
    from psycopg import sql

    name = psycopg.conninfo.conninfo_to_dict(url)["dbname"]
    with psycopg.connect(url, dbname="postgres", autocommit=True) as admin:
        if not admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def tenant():
    from responses_app.models import Tenant

    return Tenant.objects.get_or_create(name="bench-vectors")[0]


def bench_ingestion(args) -> dict:
    from django.core.files.uploadedfile import SimpleUploadedFile

    from django.utils import timezone

    from files.services import file_create
    from vector_stores import services
    from vector_stores.chunking import strategy_of
    from vector_stores.ingestion import ingest
    from vector_stores.models import Chunk, VectorStoreFile

    rng = random.Random(1)
    owner = tenant()
    store = services.store_create(owner, {"name": "ingestion"})
    pages_per_file = 10
    for n in range(args.pages // pages_per_file):
        text = "\n\n".join(words(rng, 500) + "." for _ in range(pages_per_file))
        file_id = file_create(owner, SimpleUploadedFile(f"doc{n}.txt", text.encode()),
                              {"purpose": "assistants"})["id"]
        # the row alone: the service would start its ingestion on a thread of its own
        VectorStoreFile.objects.create(store_id=store["id"], file_id=file_id,
                                       chunking_strategy=strategy_of(None),
                                       created_at=timezone.now())
    rows = list(VectorStoreFile.objects.filter(store_id=store["id"]).values_list("pk",
                                                                                 flat=True))
    wall, cpu = time.perf_counter(), time.process_time()
    outcomes = [ingest(pk) for pk in rows]
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    chunks = Chunk.objects.filter(store_id=store["id"]).count()
    return {"files": len(rows), "completed": outcomes.count("completed"), "chunks": chunks,
            "seconds": round(wall, 2), "chunks_per_second": round(chunks / wall, 1),
            "cpu_ms_per_chunk": round(1000 * cpu / chunks, 2)}


def load_chunks(args) -> str:
    """A store of `--chunks` chunks (reused when the last run made it)."""
    from django.db import connection
    from django.utils import timezone

    from files.models import StoredFile
    from responses_app.ids import new_id
    from tests.fake_upstream import fake_embedding
    from vector_stores.models import Chunk, VectorStore, VectorStoreFile
    from vector_stores.sign_bits import sign_bits

    name = f"search-{args.chunks}"
    existing = VectorStore.objects.filter(name=name).first()
    if existing is not None and Chunk.objects.filter(store=existing).count() == args.chunks:
        return existing.id
    owner, now, rng = tenant(), timezone.now(), random.Random(2)
    store = VectorStore.objects.create(id=new_id("vs"), tenant=owner, name=name,
                                       created_at=now, last_active_at=now)
    files_count = 1000
    store_files = []
    for n in range(files_count):
        stored = StoredFile.objects.create(id=new_id("file"), tenant=owner,
                                           filename=f"f{n}.txt", purpose="assistants", bytes=0,
                                           storage_name="none", created_at=now)
        store_files.append(VectorStoreFile(
            store=store, file=stored, status="completed", created_at=now,
            chunk_count=args.chunks // files_count,
            attributes={"kind": KINDS[n % 5], "year": 2000 + n % 25}, chunking_strategy={}))
    VectorStoreFile.objects.bulk_create(store_files)
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("DROP INDEX IF EXISTS vector_store_chunks_hnsw")
        with cursor.copy("COPY vector_store_chunks (store_id, store_file_id, position, text, "
                         "tokens, embedding, signs) FROM STDIN") as copy:
            for n in range(args.chunks):
                text = words(rng, 40)
                embedding = fake_embedding(text, args.dims)
                vector = "[" + ",".join(f"{v:.6g}" for v in embedding) + "]"
                copy.write_row((store.id, store_files[n % files_count].pk, n // files_count,
                                text, 40, vector, sign_bits(embedding)))
        cursor.execute("UPDATE vector_store_chunks SET tsv = to_tsvector('english', text) "
                       "WHERE store_id = %s", [store.id])
        # the UPDATE left a dead copy of every row: the table at 1.8x the size ingestion
        # writes (352 / 195 MB), every match's read twice as scattered; rewrite it
        cursor.execute("SET statement_timeout = 0")
        cursor.execute("SET maintenance_work_mem = '512MB'")
        cursor.execute("VACUUM FULL vector_store_chunks")
        loaded = time.perf_counter()
        cursor.execute("CREATE INDEX vector_store_chunks_hnsw ON vector_store_chunks USING "
                       "hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)")
        # a plain VACUUM sets the visibility map (VACUUM FULL does not): the sign bits'
        # index-only scan reads no heap page then
        cursor.execute("VACUUM ANALYZE vector_store_chunks")
    built = time.perf_counter()
    print(f"loaded {args.chunks} chunks in {loaded - started:.1f} s, HNSW built in "
          f"{built - loaded:.1f} s", flush=True)
    return store.id


CASES = {
    "no filter": None,
    "eq (1 in 5)": {"type": "eq", "key": "kind", "value": "spec"},
    "and eq+gte (1 in 10)": {"type": "and", "filters": [
        {"type": "eq", "key": "kind", "value": "spec"},
        {"type": "gte", "key": "year", "value": 2012}]},
}


def search_queries(count: int) -> list[str]:
    """The search benches' queries: 3-5 words from ranks 100 on, the same every run."""
    rng = random.Random(3)
    return [words(rng, rng.randint(3, 5), CONTENT_WORDS) for _ in range(count)]


def corpus_options(description: str) -> argparse.ArgumentParser:
    """The options of a bench that searches the loaded corpus (iterative_scans.py,
    side_reads.py): where it lives, its size, how many queries."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--pgdata", default="/tmp/gateway-bench-vectors/pgdata")
    parser.add_argument("--database-url", default="")
    parser.add_argument("--dims", type=int, default=256)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    return parser


def run_on_corpus(args, bench) -> None:
    """`bench(args, store_id)` on the corpus (loaded if it is not yet), with the fake
    upstream serving the query embeddings; pgvector's version and the load average said
    before, the load average after."""
    Path(args.pgdata).parent.mkdir(parents=True, exist_ok=True)
    upstream, url = start_fake_upstream(Path(args.pgdata).parent / "fake_upstream.log")
    try:
        setup_django(args, url)
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            print("pgvector", cursor.fetchone()[0], "load", os.getloadavg(), flush=True)
        bench(args, load_chunks(args))
        print("load", os.getloadavg(), flush=True)
    finally:
        upstream.terminate()
        upstream.wait(10)


def bench_search(args, store_id: str) -> list[dict]:
    from vector_stores.search import search_stores

    owner = tenant()
    queries = search_queries(args.queries)
    rows = []
    for ranker in ("auto", "none"):
        for case, filters in CASES.items():
            for query in queries[:10]:  # warm-up
                search_stores(owner.id, [store_id], query, filters=filters,
                              ranking_options={"ranker": ranker})
            times, counts = [], []
            for query in queries:
                started = time.perf_counter()
                results = search_stores(owner.id, [store_id], query, filters=filters,
                                        ranking_options={"ranker": ranker})
                times.append(1000 * (time.perf_counter() - started))
                counts.append(len(results))
            times.sort()
            rows.append({"ranker": ranker, "case": case,
                         "p50_ms": round(statistics.median(times), 1),
                         "p99_ms": round(times[int(0.99 * (len(times) - 1))], 1),
                         "results_min": min(counts)})
            print(rows[-1], flush=True)
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pgdata", default="/tmp/gateway-bench-vectors/pgdata")
    parser.add_argument("--database-url", default="",
                        help="run on this server's database instead (created if missing), "
                             "e.g. postgres://postgres@127.0.0.1:5432/bench_vectors08")
    parser.add_argument("--dims", type=int, default=256)
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--skip-ingestion", action="store_true")
    parser.add_argument("--skip-search", action="store_true")
    args = parser.parse_args(argv)
    Path(args.pgdata).parent.mkdir(parents=True, exist_ok=True)
    os.chmod(Path(args.pgdata).parent, 0o755)
    upstream, url = start_fake_upstream(Path(args.pgdata).parent / "fake_upstream.log")
    try:
        setup_django(args, url)
        if not args.skip_ingestion:
            print("ingestion:", bench_ingestion(args), flush=True)
        if not args.skip_search:
            bench_search(args, load_chunks(args))
    finally:
        upstream.terminate()
        upstream.wait(10)


if __name__ == "__main__":
    main()
