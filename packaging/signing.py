"""SHA256SUMS over the release artifacts, signed with gpg (armored, detached:
``SHA256SUMS.asc``) and minisign (``SHA256SUMS.minisig``).

The release keys never live in the repository. ``HINDSIGHT_SIGNING_KEY`` names the
gpg key (id or fingerprint, in the caller's keyring or ``GNUPGHOME``) and
``HINDSIGHT_MINISIGN_KEY`` the minisign secret-key file. Without them a throwaway
development key pair is made (kept under the user cache, so repeated builds reuse
it), the public halves are written beside the artifacts, and the output says
"signed with a development key — not for release". The public release keys are in
``packaging/keys/``.

Standard library and the checkout's ``models`` package (for its file hash, the one
``hindsight verify`` checks against); needs the ``gpg`` and ``minisign`` programs.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from models.gguf import sha256_file

GPG_KEY_ENV = "HINDSIGHT_SIGNING_KEY"
MINISIGN_KEY_ENV = "HINDSIGHT_MINISIGN_KEY"
SUMS = "SHA256SUMS"
DEV_NOTICE = "signed with a development key — not for release"
DEV_MARKER = "SIGNED-WITH-DEVELOPMENT-KEY.txt"
DEV_GPG_PUBLIC = "hindsight-dev.gpg.asc"
DEV_MINISIGN_PUBLIC = "hindsight-dev.minisign.pub"
DEV_UID = "Hindsight development key, not for release <dev@hindsight.invalid>"


class SigningError(RuntimeError):
    """A signature could not be made; the message names the tool, key and fix."""


@dataclass
class Signed:
    sums: Path
    gpg_signature: Path
    minisign_signature: Path
    development_key: bool
    gpg_public: Path | None = None  # the development keys' public halves, when used
    minisign_public: Path | None = None


def write_sums(folder: Path, names: list[str]) -> Path:
    """``SHA256SUMS`` in ``sha256sum``'s format (two spaces, binary-safe names)."""
    lines = [f"{sha256_file(folder / n)}  {n}\n" for n in sorted(names)]
    path = folder / SUMS
    path.write_text("".join(lines), encoding="utf-8")
    return path


def _need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise SigningError(f"{tool} is not installed: `make dist` installs it (Debian: apt-get install {tool})")
    return path


def _run(args: list[str], env: dict | None = None, what: str = "") -> None:
    proc = subprocess.run(args, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise SigningError(f"{what or args[0]} failed ({proc.returncode}): {proc.stderr.strip()[-800:]}")


def development_keys(folder: Path) -> tuple[Path, str, Path]:
    """(GNUPGHOME, gpg fingerprint, minisign secret key) of the throwaway development
    key pair under ``folder``, made on first use."""
    gnupg = folder / "gnupg"
    gnupg.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    os.chmod(gnupg, 0o700)
    env = dict(os.environ, GNUPGHOME=str(gnupg))
    gpg = _need("gpg")
    fingerprint = _fingerprint(gnupg)
    if not fingerprint:
        _run([gpg, "--batch", "--passphrase", "", "--quick-gen-key", DEV_UID, "ed25519", "sign", "never"], env,
             "making the development gpg key")
        fingerprint = _fingerprint(gnupg)
    secret = folder / "minisign.key"
    if not secret.exists():
        _run([_need("minisign"), "-G", "-W", "-f", "-p", str(folder / "minisign.pub"), "-s", str(secret)],
             what="making the development minisign key")
    return gnupg, fingerprint, secret


def _fingerprint(gnupg: Path) -> str:
    out = subprocess.run([_need("gpg"), "--batch", "--with-colons", "--list-secret-keys"], capture_output=True,
                         text=True, env=dict(os.environ, GNUPGHOME=str(gnupg))).stdout
    for line in out.splitlines():
        if line.startswith("fpr:"):
            return line.split(":")[9]
    return ""


def sign(folder: Path, names: list[str], dev_key_dir: Path, *, log=print) -> Signed:
    """Write and sign ``SHA256SUMS`` over ``names`` in ``folder``."""
    gpg, minisign = _need("gpg"), _need("minisign")
    release_gpg, release_minisign = os.environ.get(GPG_KEY_ENV), os.environ.get(MINISIGN_KEY_ENV)
    dev = not (release_gpg and release_minisign)
    env = dict(os.environ)
    out = Signed(folder / SUMS, folder / f"{SUMS}.asc", folder / f"{SUMS}.minisig", dev)
    if dev:
        if release_gpg or release_minisign:
            raise SigningError(f"set both {GPG_KEY_ENV} and {MINISIGN_KEY_ENV} for a release, or neither for a "
                               "development build")
        gnupg, gpg_key, minisign_key = development_keys(dev_key_dir)
        env["GNUPGHOME"] = str(gnupg)
        (folder / DEV_MARKER).write_text(
            f"These artifacts were {DEV_NOTICE}.\nThe public halves of that key are {DEV_GPG_PUBLIC} and "
            f"{DEV_MINISIGN_PUBLIC} beside this file; Hindsight's release keys are in packaging/keys/.\n",
            encoding="utf-8")
        names = [*names, DEV_MARKER]
        out.gpg_public = folder / DEV_GPG_PUBLIC
        with open(out.gpg_public, "wb") as f:
            subprocess.run([gpg, "--batch", "--armor", "--export", gpg_key], stdout=f, env=env, check=True)
        out.minisign_public = folder / DEV_MINISIGN_PUBLIC
        shutil.copyfile(dev_key_dir / "minisign.pub", out.minisign_public)
        log(f"WARNING: {DEV_NOTICE} (set {GPG_KEY_ENV} and {MINISIGN_KEY_ENV} to sign a release)")
    else:
        gpg_key, minisign_key = release_gpg, Path(release_minisign).expanduser()
        if not minisign_key.is_file():
            raise SigningError(f"{MINISIGN_KEY_ENV}={minisign_key}: no such minisign secret-key file")
    write_sums(folder, names)
    for stale in (out.gpg_signature, out.minisign_signature):
        stale.unlink(missing_ok=True)
    _run([gpg, "--batch", "--yes", "--pinentry-mode", "loopback", "--armor", "--detach-sign", "--local-user",
          gpg_key, "--output", str(out.gpg_signature), str(out.sums)], env, f"gpg signing with key {gpg_key}")
    comment = ("hindsight " + ("development build: " + DEV_NOTICE if dev else "release")).replace("—", "-")
    _run([minisign, "-S", "-s", str(minisign_key), "-m", str(out.sums), "-x", str(out.minisign_signature),
          "-t", comment], env, f"minisign signing with {minisign_key}")
    return out
