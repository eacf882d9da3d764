"""``hindsight verify PATH``: check a downloaded Hindsight release the way the README's
three commands do — ``sha256sum -c SHA256SUMS``, ``gpg --verify SHA256SUMS.asc``
and ``minisign -V`` on ``SHA256SUMS.minisig`` — against the release public keys
this installation carries (``packaging/keys/`` in a checkout, ``keys/`` in a build).

The gpg signature is checked by ``gpgv`` (on every Debian system: apt needs it) or
``gpg``, against a keyring holding only the trusted keys. The minisign signature is
checked here, in Python (Ed25519 as RFC 8032 gives it, BLAKE2b-512 prehash as
minisign's ``ED`` signatures use), so no minisign program is needed.
"""
from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from models.gguf import sha256_file

SUMS = "SHA256SUMS"


class VerifyError(ValueError):
    """Bad input to verify (no SHA256SUMS, an unreadable key): a one-line message."""


@dataclass
class Check:
    name: str  # sha256 | gpg | minisign
    ok: bool
    detail: str


@dataclass
class Verification:
    folder: Path
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return len(self.checks) == 3 and all(c.ok for c in self.checks)


def release_key_dir() -> Path:
    """The release public keys: inside a build (``keys/``) or in the checkout."""
    base = getattr(sys, "_MEIPASS", None)
    if getattr(sys, "frozen", False) and base:
        return Path(base) / "keys"
    return Path(__file__).resolve().parents[1] / "packaging" / "keys"


def verify(path: Path, *, gpg_keys: list[Path] | None = None, minisign_keys: list[Path] | None = None
           ) -> Verification:
    """Check ``path`` (a release folder, or one artifact beside its SHA256SUMS)."""
    path = Path(path).expanduser()
    if not path.exists():
        raise VerifyError(f"{path}: no such file or folder")
    folder, only = (path, None) if path.is_dir() else (path.parent, path.name)
    sums = folder / SUMS
    if not sums.is_file():
        raise VerifyError(f"no {SUMS} in {folder}: download it with the release")
    keys = release_key_dir()
    gpg_keys = gpg_keys or sorted(keys.glob("*.gpg.asc"))
    minisign_keys = minisign_keys or sorted(keys.glob("*.minisign.pub"))
    result = Verification(folder)
    result.checks.append(check_sums(sums, only))
    result.checks.append(check_gpg(sums, folder / f"{SUMS}.asc", gpg_keys))
    result.checks.append(check_minisign(sums, folder / f"{SUMS}.minisig", minisign_keys))
    return result


# ---- SHA256SUMS -------------------------------------------------------------------
def check_sums(sums: Path, only: str | None = None) -> Check:
    """Every listed file that is present matches (``sha256sum -c --ignore-missing``);
    with ``only``, that file must be listed and match."""
    listed: dict[str, str] = {}
    for n, line in enumerate(sums.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64:
            return Check("sha256", False, f"{sums.name} line {n} is not 'HASH  NAME'")
        listed[name.lstrip("*")] = digest.lower()
    if only is not None and only not in listed and only not in (SUMS, f"{SUMS}.asc", f"{SUMS}.minisig"):
        return Check("sha256", False, f"{only} is not listed in {sums.name}")
    names = [only] if only in listed else [n for n in listed if (sums.parent / n).is_file()]
    if not names:
        return Check("sha256", False, f"none of the files {sums.name} lists is in {sums.parent}")
    bad = [n for n in names if sha256_file(sums.parent / n) != listed[n]]
    if bad:
        return Check("sha256", False, f"checksum mismatch: {', '.join(bad)} (damaged or altered: do not install)")
    return Check("sha256", True, f"{len(names)} file(s) match: {', '.join(names)}")


# ---- gpg ----------------------------------------------------------------------------
def dearmor(text: str) -> bytes:
    """The binary OpenPGP packets of an ASCII-armored block (gpgv reads only these)."""
    lines = text.strip().splitlines()
    try:
        start = next(i for i, l in enumerate(lines) if l.startswith("-----BEGIN PGP"))
        end = next(i for i, l in enumerate(lines) if l.startswith("-----END PGP"))
    except StopIteration:
        raise VerifyError("not an ASCII-armored OpenPGP key") from None
    body = lines[start + 1:end]
    while body and ":" in body[0]:  # armor headers
        body = body[1:]
    body = [l for l in body if l.strip() and not l.startswith("=")]  # the CRC line
    try:
        return base64.b64decode("".join(body), validate=True)
    except ValueError as exc:
        raise VerifyError(f"damaged ASCII armor ({exc})") from exc


def check_gpg(sums: Path, signature: Path, keys: list[Path]) -> Check:
    if not signature.is_file():
        return Check("gpg", False, f"no {signature.name} beside {sums.name}")
    if not keys:
        return Check("gpg", False, "no gpg public key to check against")
    gpgv, gpg = shutil.which("gpgv"), shutil.which("gpg")
    if not gpgv and not gpg:
        return Check("gpg", False, "neither gpgv nor gpg is installed (Debian: apt-get install gpgv)")
    with tempfile.TemporaryDirectory(prefix="hindsight-verify-") as tmp:
        keyring = Path(tmp) / "trusted.gpg"
        keyring.write_bytes(b"".join(dearmor(k.read_text(encoding="utf-8")) for k in keys))
        if gpgv:
            args = [gpgv, "--status-fd", "1", "--keyring", str(keyring), str(signature), str(sums)]
        else:
            args = [gpg, "--batch", "--no-default-keyring", "--homedir", tmp, "--keyring", str(keyring),
                    "--status-fd", "1", "--verify", str(signature), str(sums)]
        os.chmod(tmp, 0o700)
        proc = subprocess.run(args, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    valid = [line.split()[2] for line in proc.stdout.splitlines() if line.startswith("[GNUPG:] VALIDSIG")]
    if proc.returncode == 0 and valid:
        return Check("gpg", True, f"good signature by key {valid[0]}")
    if "[GNUPG:] BADSIG" in proc.stdout:
        return Check("gpg", False, f"BAD signature: {sums.name} was altered after signing")
    if "[GNUPG:] NO_PUBKEY" in proc.stdout or "[GNUPG:] ERRSIG" in proc.stdout:
        return Check("gpg", False, "signed by a key that is not one of the trusted keys")
    return Check("gpg", False, f"not verified: {proc.stderr.strip().splitlines()[-1:] or proc.returncode}")


# ---- minisign (Ed25519, RFC 8032) ---------------------------------------------------
_P = 2 ** 255 - 19
_Q = 2 ** 252 + 27742317777372353535851937790883648493
_D = -121665 * pow(121666, _P - 2, _P) % _P
_SQRT_M1 = pow(2, (_P - 1) // 4, _P)


def _add(a, b):
    A = (a[1] - a[0]) * (b[1] - b[0]) % _P
    B = (a[1] + a[0]) * (b[1] + b[0]) % _P
    C = 2 * a[3] * b[3] * _D % _P
    D = 2 * a[2] * b[2] % _P
    E, F, G, H = B - A, D - C, D + C, B + A
    return (E * F % _P, G * H % _P, F * G % _P, E * H % _P)


def _mul(s: int, point):
    out = (0, 1, 1, 0)
    while s:
        if s & 1:
            out = _add(out, point)
        point = _add(point, point)
        s >>= 1
    return out


def _x(y: int, sign: int):
    if y >= _P:
        return None
    x2 = (y * y - 1) * pow(_D * y * y + 1, _P - 2, _P) % _P
    if x2 == 0:
        return None if sign else 0
    x = pow(x2, (_P + 3) // 8, _P)
    if (x * x - x2) % _P:
        x = x * _SQRT_M1 % _P
    if (x * x - x2) % _P:
        return None
    return _P - x if (x & 1) != sign else x


def _point(raw: bytes):
    y = int.from_bytes(raw, "little")
    sign, y = y >> 255, y & ((1 << 255) - 1)
    x = _x(y, sign)
    return None if x is None else (x, y, 1, x * y % _P)


_GY = 4 * pow(5, _P - 2, _P) % _P
_G = (_x(_GY, 0), _GY, 1, _x(_GY, 0) * _GY % _P)


def ed25519_verify(public: bytes, message: bytes, signature: bytes) -> bool:
    if len(public) != 32 or len(signature) != 64:
        return False
    a, r = _point(public), _point(signature[:32])
    s = int.from_bytes(signature[32:], "little")
    if a is None or r is None or s >= _Q:
        return False
    h = int.from_bytes(hashlib.sha512(signature[:32] + public + message).digest(), "little") % _Q
    left, right = _mul(s, _G), _add(r, _mul(h, a))
    return (left[0] * right[2] - right[0] * left[2]) % _P == 0 and (left[1] * right[2] - right[1] * left[2]) % _P == 0


def _b64_line(text: str, after_comment: int) -> bytes:
    lines = [l for l in text.splitlines() if l.strip()]
    try:
        return base64.b64decode(lines[after_comment], validate=True)
    except (IndexError, ValueError) as exc:
        raise VerifyError(f"not a minisign file ({exc})") from exc


def minisign_verify(public_key_text: str, message: bytes, signature_text: str) -> tuple[bool, str]:
    """(ok, why) for a minisign signature: the file's signature and the global one over
    the trusted comment."""
    pub = _b64_line(public_key_text, 1)
    if len(pub) != 42 or pub[:2] != b"Ed":
        raise VerifyError("not a minisign public key")
    sig = _b64_line(signature_text, 1)
    lines = [l for l in signature_text.splitlines() if l.strip()]
    if len(sig) != 74 or len(lines) < 4 or not lines[2].startswith("trusted comment: "):
        return False, "malformed signature file"
    if sig[2:10] != pub[2:10]:
        return False, "signed by another key"
    if sig[:2] == b"ED":
        message = hashlib.blake2b(message, digest_size=64).digest()
    elif sig[:2] != b"Ed":
        return False, f"unknown signature algorithm {sig[:2]!r}"
    if not ed25519_verify(pub[10:], message, sig[10:]):
        return False, "BAD signature: the file was altered after signing"
    comment = lines[2][len("trusted comment: "):]
    global_sig = _b64_line(signature_text, 3)
    if not ed25519_verify(pub[10:], sig[10:] + comment.encode("utf-8"), global_sig):
        return False, "BAD signature over the trusted comment"
    return True, comment


def check_minisign(sums: Path, signature: Path, keys: list[Path]) -> Check:
    if not signature.is_file():
        return Check("minisign", False, f"no {signature.name} beside {sums.name}")
    if not keys:
        return Check("minisign", False, "no minisign public key to check against")
    message, text = sums.read_bytes(), signature.read_text(encoding="utf-8", errors="replace")
    why = ""
    for key in keys:
        ok, why = minisign_verify(key.read_text(encoding="utf-8"), message, text)
        if ok:
            return Check("minisign", True, f"good signature by {key.name} ({why})")
    return Check("minisign", False, why if len(keys) == 1 else f"{why} (tried {len(keys)} keys)")
