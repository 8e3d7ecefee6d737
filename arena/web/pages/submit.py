"""/submit and /submissions/{id}: a logged-in user uploads a bot package (a .tar.gz with bot.toml
at its root, docs/packages.md); it is checked at once (referee/packages/archive.py: format, paths,
links, sizes; its bot.toml, and that its runtime is offered here) on the upload threads (none of the request threads
every page needs; one upload of a user at a time), stored within the user's limits
(arena/store/submissions.py: checks in flight, an hour, bytes kept; a refusal is one line, a 429
with Retry-After where waiting helps), and its conformance check is queued (arena/web/checks.py).
Its page shows the verdict, refreshing itself while the check runs; only its user sees it (the
check's output holds their bot's log)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route
from starlette.types import Message

from referee.packages.archive import ArchiveError, CheckedArchive, check_archive
from referee.packages.load import manifest_of
from referee.packages.manifest import PackageError
from referee.packages.runtimes import Runtime, offered

from ...config import PACKAGE_SPEC
from ...errors import one_line, quoted
from ...store.models import as_utc
from ...store.submissions import (
    SubmissionLimits,
    SubmissionRefused,
    SubmissionRow,
    bot_name,
    new_submission,
    precheck,
    submission,
    submissions_of,
)
from ...store.users import UserRow
from ..auth import CSRF_FIELD, check_csrf, csrf_token, require_user, session_of
from ..negotiate import page, wants_json
from ..settings import MIB, WebSettings
from .common import path_id, store_of
from .kits import kit_list

FORM_SLACK = 64 * 1024  # what a form adds to its archive: the CSRF token, multipart headers


def _settings(request: Request) -> WebSettings:
    settings: WebSettings = request.app.state.settings
    return settings


def _open_ladder(request: Request) -> str:
    ladder = _settings(request).submit
    if ladder is None:
        raise HTTPException(404, "submission is not open on this server (its operator starts it with "
                                 "arena web --submit LADDER)")
    return ladder


def _listed(row: SubmissionRow) -> dict[str, Any]:
    return {key: value for key, value in row.to_dict().items() if key != "report"}


def _submit_page(request: Request, user: UserRow, ladder: str, error: str | None = None,
                 status: int = 200) -> Response:
    rows = submissions_of(store_of(request), user.id)
    limit = _settings(request).max_upload_bytes
    return page(request, "submit.html", {
        "runtimes": [{"name": r.name, "description": r.description, "offers": list(offered(r)),
                      "problem": r.problem} for r in request.app.state.runtimes.values()],
        "kits": kit_list(request),
        "ladder": ladder, "user": user.name, "next_bot": bot_name(user.name, _next_version(rows, ladder)),
        "max_upload_bytes": limit, "max_upload": f"{limit / MIB:g} MiB", "error": error,
        "csrf": csrf_token(request), "submissions": [_listed(r) for r in rows],
    }, status=status, data_as_of=as_utc(rows[0].finished_at or rows[0].created_at) if rows else None)


def _next_version(rows: list[SubmissionRow], ladder: str) -> int:
    return max((r.version for r in rows if r.tournament == ladder), default=0) + 1


async def _bounded_body(request: Request, limit: int) -> bytes:
    """The request's body, refused (413) as soon as it is known to be over ``limit``: by its
    Content-Length before anything is read, else while it is read."""
    length = request.headers.get("content-length", "")
    if length.isascii() and length.isdigit() and (len(length) > len(str(limit)) or int(length) > limit):
        raise HTTPException(413, _too_large(request))
    chunks, total = [], 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > limit:
            raise HTTPException(413, _too_large(request))
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(request: Request) -> str:
    limit = _settings(request).max_upload_bytes
    return f"the upload is too large: a bot archive may be at most {limit} bytes ({limit / MIB:g} MiB) here"


def _refused(request: Request, user: UserRow, ladder: str, reason: str, status: int = 400,
             retry_after_s: int | None = None) -> Response:
    response = _submit_page(request, user, ladder, error=reason, status=status)
    if retry_after_s is not None:
        response.headers["retry-after"] = str(retry_after_s)
    return response


def limits_of(settings: WebSettings) -> SubmissionLimits:
    return SubmissionLimits(settings.max_in_flight, settings.max_per_hour, settings.max_kept_bytes)


def _over(request: Request, user: UserRow, ladder: str, refused: SubmissionRefused) -> Response:
    return _refused(request, user, ladder, str(refused), refused.status, refused.retry_after_s)


async def submit(request: Request) -> Response:
    user = require_user(request)
    ladder = _open_ladder(request)
    if request.method == "GET":
        return await run_in_threadpool(_submit_page, request, user, ladder)
    if session_of(request).via == "bearer" and "text/html" not in request.headers.get("accept", ""):
        request.scope["arena_json"] = True  # a program's upload (docs/api.md): its answer and refusals as JSON
    state = request.app.state
    if user.id in state.uploading:  # one upload of a user at a time: a burst waits for no check here
        return await run_in_threadpool(_refused, request, user, ladder, "you are sending another submission: wait "
                                       "for its answer", 429, 5)
    state.uploading.add(user.id)
    try:
        try:  # a user at a limit costs no more than this read: the upload is neither read nor checked
            await run_in_threadpool(precheck, state.write_store, user.id, limits_of(_settings(request)))
        except SubmissionRefused as refused:
            return await run_in_threadpool(_over, request, user, ladder, refused)
        return await _upload(request, user, ladder)
    finally:
        state.uploading.discard(user.id)


async def _upload(request: Request, user: UserRow, ladder: str) -> Response:
    limit = _settings(request).max_upload_bytes
    body = await _bounded_body(request, limit + FORM_SLACK)

    async def replay() -> Message:
        return {"type": "http.request", "body": body, "more_body": False}

    form = await Request(request.scope, replay).form(max_files=1, max_fields=8, max_part_size=FORM_SLACK)
    check_csrf(request, form.get(CSRF_FIELD))
    upload = form.get("archive")
    if not isinstance(upload, UploadFile):
        return await run_in_threadpool(_refused, request, user, ladder, "no package: send the bot's folder as a "
                                       ".tar.gz with bot.toml at its root, in the field archive")
    content = await upload.read(limit + 1)
    await form.close()
    if len(content) > limit:
        raise HTTPException(413, _too_large(request))
    # gunzip and every check of the archive: on the upload threads, so a page never waits for them
    checked = await asyncio.get_running_loop().run_in_executor(request.app.state.upload_pool, _checked, content,
                                                               request.app.state.runtimes)
    if isinstance(checked, str):
        return await run_in_threadpool(_refused, request, user, ladder, checked)
    return await run_in_threadpool(_take, request, user, ladder, content, checked)


def _checked(content: bytes, runtimes: Mapping[str, Runtime]) -> CheckedArchive | str:
    """The package checked: the archive (every limit), its bot.toml, its runtime offered here; or
    why it is refused (one line)."""
    try:
        checked = check_archive(content)
        manifest = manifest_of(content)
    except ArchiveError as exc:
        return f"the archive {exc}"
    except PackageError as exc:
        return f"the package: {one_line(str(exc))}"
    runtime = runtimes.get(manifest.runtime)
    if runtime is None or runtime.problem:
        offered = ", ".join(name for name, r in runtimes.items() if not r.problem)
        return f"the package's runtime {quoted(manifest.runtime)} is not offered here (the runtimes: {offered})"
    return checked


def _take(request: Request, user: UserRow, ladder: str, content: bytes, checked: CheckedArchive) -> Response:
    """Store a checked upload as the user's next submission and queue its check; or refuse it
    for the user's limits."""
    state = request.app.state
    try:
        row = new_submission(state.write_store, user.id, state.submit_tid, checked.sha256, content,
                             checked.unpacked_bytes, PACKAGE_SPEC, limits_of(_settings(request)))
    except SubmissionRefused as refused:
        return _over(request, user, ladder, refused)
    state.checks.start(row.id)
    url = str(request.url_for("submission", id=row.id).path)
    if wants_json(request):
        return page(request, "submission.html", {"version": 1, "submission": row.to_dict(), "url": url}, status=202)
    return RedirectResponse(url, status_code=303)


def submission_page(request: Request) -> Response:
    user = require_user(request)
    sid = path_id(request, "id", "submission")
    row = submission(store_of(request), sid)
    if row is None or row.user_id != user.id:  # another user's submission is not told apart from none
        raise HTTPException(404, f"you have no submission {sid}")
    return page(request, "submission.html", {"version": 1, "submission": row.to_dict(), "url": request.url.path},
                data_as_of=as_utc(row.finished_at or row.created_at))


ROUTES = [Route("/submit", submit, methods=["GET", "POST"], name="submit"),
          Route("/submissions/{id:id}", submission_page, name="submission")]
