"""/submit and /submissions/{id}: a logged-in user uploads a bot archive (.tar.gz) with the command
that runs it at the archive's root; it is checked at once (arena/bot_archive.py: format, paths,
links, sizes; the command against its files), stored, and its conformance check starts
(arena/web/checks.py). Its page shows the verdict, refreshing itself while the check runs; only
its user sees it (the check's output holds their bot's log)."""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route
from starlette.types import Message

from referee.bots.endpoint import BotEndpoint

from ...bot_archive import ArchiveError, check_archive, command_problem
from ...errors import quoted
from ...store.models import as_utc
from ...store.submissions import SubmissionRow, bot_name, new_submission, submission, submissions_of
from ...store.users import UserRow
from ..auth import CSRF_FIELD, check_csrf, csrf_token, require_user
from ..negotiate import page, wants_json
from ..settings import MIB, WebSettings
from .common import path_id, store_of

FORM_SLACK = 64 * 1024  # what a form adds to its archive: the command, the CSRF token, multipart headers
MAX_COMMAND_CHARS = 1000


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


def _refused(request: Request, user: UserRow, ladder: str, reason: str, status: int = 400) -> Response:
    return _submit_page(request, user, ladder, error=reason, status=status)


async def submit(request: Request) -> Response:
    user = require_user(request)
    ladder = _open_ladder(request)
    if request.method == "GET":
        return await run_in_threadpool(_submit_page, request, user, ladder)
    limit = _settings(request).max_upload_bytes
    body = await _bounded_body(request, limit + FORM_SLACK)

    async def replay() -> Message:
        return {"type": "http.request", "body": body, "more_body": False}

    form = await Request(request.scope, replay).form(max_files=1, max_fields=8, max_part_size=FORM_SLACK)
    check_csrf(request, form.get(CSRF_FIELD))
    command, upload = form.get("command"), form.get("archive")
    if not isinstance(upload, UploadFile):
        return await run_in_threadpool(_refused, request, user, ladder,
                                       "no archive: send the bot's files as a .tar.gz in the field archive")
    content = await upload.read(limit + 1)
    await form.close()
    if len(content) > limit:
        raise HTTPException(413, _too_large(request))
    # checking (gunzip and all) and storing are blocking work: on a thread, the loop stays free
    return await run_in_threadpool(_take, request, user, ladder, command, content)


def _take(request: Request, user: UserRow, ladder: str, command: object, content: bytes) -> Response:
    """Check an upload and its command, store it and start its check; or refuse it with the reason."""
    if not isinstance(command, str) or not command.strip():
        return _refused(request, user, ladder, "no command: say how to start the bot at the archive's root, "
                                               "e.g. python3 bot.py")
    command = command.strip()
    if len(command) > MAX_COMMAND_CHARS or not command.isprintable():
        return _refused(request, user, ladder, f"the command must be one line of at most {MAX_COMMAND_CHARS} "
                                               f"printable characters, not {quoted(command)}")
    if BotEndpoint.is_address(command):
        return _refused(request, user, ladder, f"{quoted(command)} is an address: a submitted bot is a command "
                                               "the arena starts from its archive")
    try:
        checked = check_archive(content)
    except ArchiveError as exc:
        return _refused(request, user, ladder, f"the archive {exc}")
    if problem := command_problem(checked, command, None):
        return _refused(request, user, ladder, f"the command cannot start from the archive: {problem}")
    state = request.app.state
    state.write_store.put_archive(checked.sha256, content)
    row = new_submission(state.write_store, user.id, state.submit_tid, checked.sha256, command)
    state.checks.start(row.id)
    url = str(request.url_for("submission", id=row.id).path)
    if wants_json(request):
        return page(request, "submission.html", {"submission": row.to_dict(), "url": url}, status=202)
    return RedirectResponse(url, status_code=303)


def submission_page(request: Request) -> Response:
    user = require_user(request)
    sid = path_id(request, "id", "submission")
    row = submission(store_of(request), sid)
    if row is None or row.user_id != user.id:  # another user's submission is not told apart from none
        raise HTTPException(404, f"you have no submission {sid}")
    return page(request, "submission.html", {"submission": row.to_dict(), "url": request.url.path},
                data_as_of=as_utc(row.finished_at or row.created_at))


ROUTES = [Route("/submit", submit, methods=["GET", "POST"], name="submit"),
          Route("/submissions/{id:id}", submission_page, name="submission")]
