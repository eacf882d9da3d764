"""``hindsight bench scale --import``: import throughput and peak memory on large
generated Spotify extended-history files (a real export format), at several sizes,
each import in its own process so its peak RSS is its own."""
from __future__ import annotations

import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

_ARTISTS = [f"{a} {b}" for a in ("The", "Los", "Die", "Les", "Little", "Big", "Neon", "Velvet", "Quiet", "Electric")
            for b in ("Foxes", "Rivers", "Engines", "Saints", "Echoes", "Harbours", "Lights", "Owls", "Tides", "Gardens")]
_PLATFORMS = ["ios", "android", "osx", "windows", "web_player", "Partner sonos_one"]
_REASONS = ["trackdone", "fwdbtn", "clickrow", "backbtn", "playbtn", "appload", "endplay", "logout"]


def write_spotify_extended(path: Path, n: int, seed: int = 7, tracks: int | None = None) -> Path:
    """Stream ``n`` plausible extended-history records to ``path`` (no list in memory).
    With ``tracks``: one listener's plays of a catalogue of that many songs, the k-th
    favourite played about 1/k as often as the first (Zipf), from two devices, most
    plays running to their end; without: songs drawn uniformly from 400,000."""
    rng = random.Random(seed)
    t = datetime(2019, 1, 1, tzinfo=timezone.utc)
    catalogue = None
    if tracks:
        catalogue = []
        for k in range(tracks):
            artist = rng.choice(_ARTISTS)
            catalogue.append((f"Song {k + 1}", artist, f"{artist} Vol. {rng.randint(1, 5)}",
                              f"spotify:track:{rng.getrandbits(64):016x}"))
        weights = [1 / (k + 1) for k in range(tracks)]
        platforms = rng.sample(_PLATFORMS, 2)
    with open(path, "w", encoding="utf-8") as f:
        f.write("[\n")
        for i in range(n):
            ms = rng.randint(5_000, 360_000)
            t += timedelta(milliseconds=ms + rng.randint(0, 600_000))
            if catalogue is None:
                artist = rng.choice(_ARTISTS)
                track, album = f"Song {rng.randint(1, 4000)}", f"{artist} Vol. {rng.randint(1, 5)}"
                uri, platform = f"spotify:track:{rng.getrandbits(64):016x}", rng.choice(_PLATFORMS)
                start, end = rng.choice(_REASONS), rng.choice(_REASONS)
            else:
                track, artist, album, uri = rng.choices(catalogue, weights)[0]
                platform = rng.choices(platforms, (4, 1))[0]
                start = rng.choices(("trackdone", "clickrow", "fwdbtn", "playbtn"), (12, 3, 2, 1))[0]
                end = rng.choices(("trackdone", "fwdbtn", "endplay", "logout"), (12, 4, 1, 1))[0]
            rec = {
                "ts": t.strftime("%Y-%m-%dT%H:%M:%SZ"), "platform": platform, "ms_played": ms,
                "conn_country": rng.choice(["DE", "FR", "US", "GB"]) if catalogue is None else "DE",
                "ip_addr": "192.0.2.1",
                "master_metadata_track_name": track, "master_metadata_album_artist_name": artist,
                "master_metadata_album_album_name": album, "spotify_track_uri": uri,
                "episode_name": None, "episode_show_name": None, "spotify_episode_uri": None,
                "audiobook_title": None, "audiobook_uri": None, "audiobook_chapter_uri": None,
                "audiobook_chapter_title": None, "reason_start": start,
                "reason_end": end, "shuffle": rng.random() < 0.4,
                "skipped": rng.random() < 0.1, "offline": False, "offline_timestamp": None,
                "incognito_mode": False,
            }
            f.write(("," if i else "") + json.dumps(rec) + "\n")
        f.write("]\n")
    return path


def index_run(plays: int, tracks: int, workdir: Path | None = None, echo=print) -> dict:
    """One listener's ``plays`` of ``tracks`` songs, imported, then indexed by a fresh
    retrieval index with the real SPLADE encoder and Embedder: events/s, and how
    many distinct texts each encoder read."""
    from engine.ingest import import_paths
    from engine.retrieval.index import RetrievalIndex
    from engine.store import EventStore, store_path
    from models.registry import ModelRegistry

    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        path = write_spotify_extended(Path(tmp) / "Streaming_History_Audio_2019.json", plays, tracks=tracks)
        with EventStore(store_path(Path(tmp) / "data")) as store, ModelRegistry() as registry:
            import_paths(store, [str(path)])
            events = store.count()
            sparse, embedder = registry.sparse_encoder(), registry.embedder()
            t0, c0 = time.perf_counter(), time.process_time()
            stages: dict[str, list[float]] = {}  # stage -> [wall s, CPU s] when it was last heard of

            def progress(stage: str, done: int, total: int) -> None:
                stages[stage] = [time.perf_counter() - t0, time.process_time() - c0]

            index = RetrievalIndex(store, sparse=sparse, embedder=embedder)
            stats = index.refresh(progress=progress)
            stages["refresh"] = [time.perf_counter() - t0, time.process_time() - c0]
            index.fts_search("warm up", 1)  # the full-text index is built at the first search
            seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
            stages["full-text index"] = [seconds, cpu]
            texts = index._db.execute("SELECT count(*) FROM texts").fetchone()[0] \
                if index._db.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'texts'").fetchone()[0] \
                else stats.embedded
            index.close()
    # CPU seconds (all threads) say what the work costs on a machine others share too
    figures = {"events": events, "tracks": tracks, "seconds": round(seconds, 1), "cpu_seconds": round(cpu, 1),
               "events_per_s": round(events / seconds, 1), "events_per_cpu_s": round(events / cpu, 1),
               "stages_wall_cpu_s": {k: [round(x, 1) for x in v] for k, v in stages.items()},
               "sparse_texts": stats.texts_encoded,
               "embedded_texts": texts, "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}
    echo(f"indexed {events:,} plays of {tracks} songs in {seconds:.1f} s = {figures['events_per_s']:,.0f} events/s "
         f"({cpu:.1f} CPU s = {figures['events_per_cpu_s']:,.0f} events per CPU second; "
         f"{stats.texts_encoded:,} texts SPLADE-encoded, {texts:,} embedded); stages done at (wall, CPU) s: "
         + ", ".join(f"{k} {v[0]:.0f}/{v[1]:.0f}" for k, v in stages.items()))
    return figures


def _import_once(file: str, store_dir: str, parallel: bool = True) -> dict:
    """Runs in a child process: import one file into a fresh store, report figures.
    ``parallel=False`` reads the file on one thread, as files below
    ``engine.parallel_read.MIN_BYTES`` always are."""
    from engine import parallel_read
    from engine.ingest import import_paths
    from engine.store import EventStore, store_path

    if not parallel:
        parallel_read.MIN_BYTES = 1 << 62

    with EventStore(store_path(store_dir)) as store:
        t0 = time.perf_counter()
        report = import_paths(store, [file])
        seconds = time.perf_counter() - t0
    f = report.files[0]
    return {"events": f.added, "status": f.status, "seconds": seconds,
            "events_per_s": f.added / seconds if seconds else 0.0,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            # a large file is read by worker processes (engine.parallel_read): the largest of them
            "worker_peak_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
            "file_mb": os.path.getsize(file) / 1e6}


def _measure(path: Path, store_dir: Path, parallel: bool) -> dict:
    out = subprocess.run([sys.executable, "-c",
                          "import json,sys; from app.bench.scale import _import_once; "
                          "print(json.dumps(_import_once(sys.argv[1], sys.argv[2], sys.argv[3] == '1')))",
                          str(path), str(store_dir), "1" if parallel else "0"],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"import of {path.name} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(sizes: list[int], workdir: Path | None = None, echo=print, serial_baseline: bool = True) -> dict:
    """Import each size in a fresh store; the largest once more on one reading thread,
    so the gain from reading in parallel shows in the same run."""
    results = []
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        for n in sizes:
            path = Path(tmp) / f"Streaming_History_Audio_{n}.json"
            t0 = time.perf_counter()
            write_spotify_extended(path, n)
            echo(f"generated {n:,} events ({path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t0:.1f} s")
            modes = (True, False) if serial_baseline and n == max(sizes) else (True,)
            for parallel in modes:
                r = _measure(path, Path(tmp) / f"store-{n}-{parallel}", parallel)
                r["size"] = n
                r["parallel"] = parallel
                how = "" if parallel else " reading on one thread (the baseline)"
                echo(f"  imported {r['events']:,} events{how} in {r['seconds']:.1f} s = "
                     f"{r['events_per_s']:,.0f} events/s, peak RSS {r['peak_rss_mb']:.0f} MB, "
                     + (f"largest worker {r['worker_peak_rss_mb']:.0f} MB" if r['worker_peak_rss_mb']
                        else "no worker processes"))
                results.append(r)
            path.unlink()
    main = [r for r in results if r["parallel"]]
    figures = {"import": {str(r["size"]): _rounded(r) for r in main}}
    if len(main) >= 2:
        small, big = main[0], main[-1]
        figures["import"]["rss_ratio_largest_to_smallest"] = round(big["peak_rss_mb"] / small["peak_rss_mb"], 3)
        figures["import"]["size_ratio_largest_to_smallest"] = round(big["size"] / small["size"], 3)
    baseline = [r for r in results if not r["parallel"]]
    if baseline:
        figures["import"]["one_thread_baseline"] = _rounded(baseline[0])
        figures["import"]["speedup_over_one_thread"] = round(main[-1]["events_per_s"]
                                                             / baseline[0]["events_per_s"], 2)
    return figures


def _rounded(r: dict) -> dict:
    return {k: round(v, 2) if isinstance(v, float) else v for k, v in r.items()}


def _worker_mb(r: dict) -> str:
    mb = r.get("worker_peak_rss_mb") or 0
    return f"{mb:.0f}" if mb else "–"  # read on one thread: no workers


def table(figures: dict) -> str:
    rows = ["| events | reading | file MB | seconds | events/s | peak RSS MB | largest worker MB |",
            "|---:|---|---:|---:|---:|---:|---:|"]
    for key, r in figures["import"].items():
        if isinstance(r, dict):
            how = "one thread" if not r.get("parallel", True) else "as the app does"
            rows.append(f"| {r['size']:,} | {how} | {r['file_mb']:.0f} | {r['seconds']:.1f} | "
                        f"{r['events_per_s']:,.0f} | {r['peak_rss_mb']:.0f} | {_worker_mb(r)} |")
    if "rss_ratio_largest_to_smallest" in figures["import"]:
        rows.append(f"\nPeak RSS grows {figures['import']['rss_ratio_largest_to_smallest']}x while the file grows "
                    f"{figures['import']['size_ratio_largest_to_smallest']}x.")
    if "speedup_over_one_thread" in figures["import"]:
        rows.append(f"Reading the largest file in worker processes is "
                    f"{figures['import']['speedup_over_one_thread']}x as fast as on one thread.")
    return "\n".join(rows)
