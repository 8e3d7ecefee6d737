"""/kits and /kits/NAME.tar.gz: the starter kits (the sample bots of sample_bots/, each a bot
package with a README) as downloads, for a participant to start from: each is packed as `referee
check` and the server pack a folder (referee/packages/tree.py), so what is downloaded is what a
check of the kit's folder runs. Public, as the kits are."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from referee.packages.manifest import MANIFEST, PackageError, read_manifest
from referee.packages.runtimes import CHECKOUT
from referee.packages.tree import pack

from ..negotiate import page

KITS_FOLDER = CHECKOUT / "sample_bots"


@functools.cache
def kits() -> dict[str, tuple[Path, str]]:
    """Every kit here: name -> (folder, its runtime), read once."""
    found: dict[str, tuple[Path, str]] = {}
    for folder in sorted(KITS_FOLDER.iterdir()) if KITS_FOLDER.is_dir() else []:
        if (folder / MANIFEST).is_file():
            try:
                found[folder.name] = (folder, read_manifest(folder).runtime)
            except PackageError:
                continue
    return found


@functools.cache
def packed(name: str) -> bytes:
    return pack(kits()[name][0])


def kit_list(request: Request) -> list[dict[str, Any]]:
    """The kits as pages show them: name, runtime, download address."""
    return [{"name": name, "runtime": runtime, "url": request.url_for("kit", name=name).path}
            for name, (_, runtime) in kits().items()]


def kits_page(request: Request) -> Response:
    return page(request, "kits.html", {"kits": kit_list(request)})


def kit(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in kits():
        raise HTTPException(404, f"no starter kit named {name!r}")
    return Response(packed(name), media_type="application/gzip",
                    headers={"content-disposition": f'attachment; filename="{name}.tar.gz"'})


ROUTES = [Route("/kits", kits_page, name="kits"), Route("/kits/{name}.tar.gz", kit, name="kit")]
