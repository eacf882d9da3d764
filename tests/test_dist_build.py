"""The signed desktop build end to end (slow): `packaging/dist.py` builds the bundle,
the .deb and the tarball (cached by content under the user cache: a repeated run
with the same sources and models takes seconds); the .deb is unpacked into a scratch
root with `dpkg -x` and its `hindsight --self-test` runs there without network
(`unshare -n`), offscreen and once on Xvfb's X server; the three verify commands
pass and a one-byte change makes them fail; the bundle holds no torch and no
executable-stack library."""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The whole file took 318 s on 2 cores (bundle built in 99 s, each self-test ~90 s):
# it runs with the rest of the suite; HINDSIGHT_TEST_DIST=0 leaves it out.
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(os.environ.get("HINDSIGHT_TEST_DIST") == "0",
                                 reason="HINDSIGHT_TEST_DIST=0: the bundle build is left out")]


def _load(name: str):
    sys.path.insert(0, str(ROOT / "packaging"))
    spec = importlib.util.spec_from_file_location(name, ROOT / "packaging" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    missing = [t for t in ("dpkg-deb", "gpg", "minisign", "readelf", "objdump") if shutil.which(t) is None]
    if importlib.util.find_spec("PyInstaller") is None:
        missing.append("PyInstaller")
    if missing:
        pytest.skip(f"{', '.join(missing)} missing: `make dist` installs them")
    from models import manifest, paths

    if manifest.current(paths.cache_dir(), "extractor") is None:
        pytest.skip("the models are not built in the user cache: run `make setup`")
    out = tmp_path_factory.mktemp("dist")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    env.pop("HINDSIGHT_SIGNING_KEY", None)
    env.pop("HINDSIGHT_MINISIGN_KEY", None)
    proc = subprocess.run([sys.executable, str(ROOT / "packaging" / "dist.py"), "--out", str(out), "--work",
                           str(tmp_path_factory.mktemp("work"))], env=env, capture_output=True, text=True,
                          timeout=3600)
    print(proc.stdout[-3000:])
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    report = json.loads((out / "build-report.json").read_text())
    return out, report


@pytest.fixture(scope="module")
def installed(release, tmp_path_factory):
    out, report = release
    root = tmp_path_factory.mktemp("root")
    subprocess.run(["dpkg-deb", "-x", str(out / f"hindsight_{report['version']}_amd64.deb"), str(root)], check=True)
    return root


def _clean_env(home: Path, **extra) -> dict:
    """What a user's session has: no venv, no PYTHONPATH, no project variables."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}
    env.update(extra)
    return env


def _snapshot(root: Path) -> dict[str, tuple[int, float]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime) for p in root.rglob("*") if p.is_file()}


def test_the_bundle_has_no_torch_no_executable_stack_and_a_llama_for_every_cpu(release):
    checks = _load("bundle_checks")
    out, report = release
    bundle = Path(report["bundle"])
    assert checks.training_files(bundle) == []
    assert not [f for f in checks.elf_files(bundle) if checks.has_execstack(f)]
    assert report["glibc_max"].startswith("2.")
    assert report["llama_avx512"] is False  # outside the CPU variants built for it
    lib = bundle / "_internal" / "llama_cpp" / "lib"
    assert (lib / "libllama.so").is_file()
    if report["llama_build"] == "cpu-variants":
        assert {"x64", "haswell", "skylakex"} <= set(report["llama_cpu_variants"])
        assert "haswell" not in report["llama_avx512_variants"] and "skylakex" in report["llama_avx512_variants"]
        assert (lib / "libggml-cpu-x64.so").is_file()  # beside libllama.so, where the planner loads them from
    assert (bundle / "_internal" / "bundled-models" / "planner" / "current.json").is_file()
    print(f"\nbundle {report['bundle_bytes'] / 2**20:,.0f} MiB, .deb {report['deb_bytes'] / 2**20:,.0f} MiB, "
          f".tar.gz {report['tar_bytes'] / 2**20:,.0f} MiB, GLIBC {report['glibc_max']}, "
          f"built in {report['build_s']:.0f} s{' (cached)' if report.get('cached') else ''}")


def test_the_deb_declares_its_depends_and_the_desktop_entry(release):
    out, report = release
    deb = out / f"hindsight_{report['version']}_amd64.deb"
    control = subprocess.run(["dpkg-deb", "-f", str(deb), "Depends"], capture_output=True, text=True,
                             check=True).stdout
    assert "libxcb-cursor0" in control and "libegl1" in control and "libfontconfig1" in control
    listing = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True, check=True).stdout
    assert "./usr/bin/hindsight -> /opt/hindsight/hindsight" in listing
    assert "./usr/share/applications/hindsight.desktop" in listing


def test_the_installed_app_passes_its_self_test_offline_and_offscreen(installed, tmp_path):
    exe = installed / "opt" / "hindsight" / "hindsight"
    before = _snapshot(installed)
    # under strace too where it is installed: not one IPv4/IPv6 socket, from Python or a native library
    trace = tmp_path / "strace.log"
    traced = ["strace", "-f", "-qq", "--seccomp-bpf", "-e", "trace=socket,connect", "-o", str(trace)] \
        if shutil.which("strace") else []
    proc = subprocess.run(["unshare", "-n", *traced, str(exe), "--json", "--self-test"], capture_output=True,
                          text=True, env=_clean_env(tmp_path, QT_QPA_PLATFORM="offscreen"), timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    if traced:
        from tests.reliability.test_network import _INET

        sockets = [line for line in trace.read_text().splitlines() if _INET.search(line)]
        assert sockets == [], sockets
    report = json.loads(proc.stdout)
    assert report["ok"] and report["platform"] == "offscreen"
    assert {s["name"] for s in report["steps"]} >= {"window", "question", "planner (llama.cpp)",
                                                      "extractor (CTranslate2)", "spaCy segmenter"}
    assert _snapshot(installed) == before  # the installed files stay as installed
    print(f"\nself-test: window after {report['window_after_s']} s, first answer after {report['answer_after_s']} s, "
          f"RSS {report['rss_mb']} MB; " + "; ".join(f"{s['name']} {s['seconds']} s" for s in report["steps"]))


def test_the_installed_app_opens_its_window_on_an_x_server(release, installed, tmp_path):
    if shutil.which("xvfb-run") is None:
        pytest.skip("xvfb-run is not installed (Debian: apt-get install xvfb)")
    depends = subprocess.run(["dpkg-deb", "-f", str(next(release[0].glob("*.deb"))), "Depends"],
                             capture_output=True, text=True, check=True).stdout
    missing = [d.split()[0] for d in depends.split(",")
               if subprocess.run(["dpkg", "-s", d.split()[0]], capture_output=True).returncode != 0]
    if missing:
        pytest.skip(f"the .deb's Depends are not all installed here: apt-get install {' '.join(missing)}")
    exe = installed / "opt" / "hindsight" / "hindsight"
    proc = subprocess.run(["xvfb-run", "-a", "unshare", "-n", str(exe), "--json", "--self-test"],
                          capture_output=True, text=True, env=_clean_env(tmp_path), timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["ok"] and report["platform"] == "xcb"


def test_checksums_and_both_signatures_verify_and_one_changed_byte_fails_them(release, installed, tmp_path):
    out, report = release
    assert report["development_key"] and (out / "SIGNED-WITH-DEVELOPMENT-KEY.txt").is_file()
    gnupg = tmp_path / "gnupg"
    gnupg.mkdir(mode=0o700)
    env = dict(os.environ, GNUPGHOME=str(gnupg))
    subprocess.run(["gpg", "--batch", "--import", str(out / "hindsight-dev.gpg.asc")], env=env, check=True,
                   capture_output=True)
    work = tmp_path / "download"
    work.mkdir()
    for name in report["files"]:
        os.link(out / name, work / name)

    def three() -> list[int]:
        return [subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=work, capture_output=True).returncode,
                subprocess.run(["gpg", "--batch", "--verify", "SHA256SUMS.asc", "SHA256SUMS"], cwd=work, env=env,
                               capture_output=True).returncode,
                subprocess.run(["minisign", "-V", "-p", "hindsight-dev.minisign.pub", "-m", "SHA256SUMS"],
                               cwd=work, capture_output=True).returncode]

    assert three() == [0, 0, 0]
    exe = installed / "opt" / "hindsight" / "hindsight"
    keys = ["--gpg-key", str(work / "hindsight-dev.gpg.asc"), "--minisign-key", str(work / "hindsight-dev.minisign.pub")]
    ok = subprocess.run([str(exe), "verify", str(work), *keys], capture_output=True, text=True,
                        env=_clean_env(tmp_path))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    sums = (work / "SHA256SUMS").read_bytes()
    (work / "SHA256SUMS").unlink()  # a new file: the hard-linked original stays as built
    (work / "SHA256SUMS").write_bytes((b"1" if sums[:1] == b"0" else b"0") + sums[1:])
    assert all(rc != 0 for rc in three())
    bad = subprocess.run([str(exe), "verify", str(work), *keys], capture_output=True, text=True,
                         env=_clean_env(tmp_path))
    assert bad.returncode == 1 and bad.stdout.count("FAIL") == 3
    (work / "SHA256SUMS").unlink()
    os.link(out / "SHA256SUMS", work / "SHA256SUMS")
    tarball = next(work.glob("*.tar.gz"))
    data = bytearray(tarball.read_bytes())
    tarball.unlink()
    data[len(data) // 2] ^= 0x01
    tarball.write_bytes(bytes(data))
    assert three()[0] != 0
