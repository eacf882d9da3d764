"""``hindsight verify PATH``: the three checks of a downloaded release (see app.verify)."""
from __future__ import annotations

from pathlib import Path

import click

from app.errors import EXIT_USER, UserError
from app.shell import Ctx, common, print_json


@click.command("verify")
@common
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--gpg-key", "gpg_keys", multiple=True, type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="Trust this armored gpg public key instead of the release keys (repeatable).")
@click.option("--minisign-key", "minisign_keys", multiple=True,
              type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="Trust this minisign public key instead of the release key (repeatable).")
@click.pass_obj
def verify_cmd(obj: Ctx, path: Path, gpg_keys: tuple[Path, ...], minisign_keys: tuple[Path, ...]) -> int:
    """Check a downloaded Hindsight release before installing it.

    PATH is the download folder, or one artifact (the .deb or .tar.gz) beside its
    SHA256SUMS, SHA256SUMS.asc and SHA256SUMS.minisig. Checks the checksums and both
    signatures against Hindsight's release keys; exit 0 only when all three pass.
    """
    from app.verify import VerifyError, release_key_dir, verify

    try:
        result = verify(path, gpg_keys=list(gpg_keys), minisign_keys=list(minisign_keys))
    except VerifyError as exc:
        raise UserError(str(exc)) from exc
    if obj.json:
        print_json({"ok": result.ok, "folder": result.folder,
                    "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in result.checks]})
    else:
        for c in result.checks:
            click.echo(f"{'ok  ' if c.ok else 'FAIL'} {c.name}: {c.detail}")
        if not (gpg_keys or minisign_keys):
            click.echo(f"(keys: {release_key_dir()})")
        click.echo("Verified: safe to install." if result.ok else "NOT verified: do not install this download.")
    return 0 if result.ok else EXIT_USER


verify = verify_cmd
