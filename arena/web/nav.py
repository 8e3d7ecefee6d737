"""The site's navigation, the same on every page (error pages too): the tournaments, the live
games, the starter kits, Submit while submission is open, and who is logged in ("Logged in as
NAME" with a Log out form carrying the session's CSRF token) or a Log in link back to this page;
on a page of one tournament, that tournament's leaderboard and games beside it. Built from the
request's session (arena/web/auth.py) when the page is drawn, so no page's handler has to
remember it; the JSON answers carry none of it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, pass_context
from starlette.requests import Request

from .auth import Session


@dataclass(frozen=True)
class Nav:
    """What the header shows: the user (None: nobody), the logout form's CSRF token, the login
    link (back to this page), whether submission is open, the page's tournament and its links."""

    user: str | None
    csrf: str
    login_url: str
    submit_open: bool
    tournament: str | None
    leaderboard_url: str | None
    games_url: str | None


def page_tournament(data: Any) -> str | None:
    """The tournament a page's data belongs to: its ``tournament`` (leaderboard, bot, games), or its
    game's (the replay viewer); None for the site's other pages."""
    if not isinstance(data, dict):
        return None
    if isinstance(data.get("tournament"), str):
        return str(data["tournament"])
    game = data.get("game")
    if isinstance(game, dict) and isinstance(game.get("tournament"), str):
        return str(game["tournament"])
    return None


def nav_of(request: Request, data: Any) -> Nav:
    """The header of the page ``request`` asked for, showing ``data``."""
    session = request.scope.get("arena_session")
    user = session.user.name if isinstance(session, Session) and session.user is not None else None
    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    login = str(request.url_for("login").path)
    error_page = isinstance(data, dict) and isinstance(data.get("status"), int) and data["status"] >= 400
    if request.method == "GET" and request.url.path != login and not error_page:  # back here after it
        login += "?" + urlencode({"next": here})
    tournament = page_tournament(data)
    base = f"/t/{quote(tournament, safe='')}" if tournament is not None else None
    return Nav(user=user, csrf=session.csrf if isinstance(session, Session) else "", login_url=login,
               submit_open=request.app.state.settings.submit is not None, tournament=tournament,
               leaderboard_url=base, games_url=f"{base}/games" if base else None)


@pass_context
def _nav(context: Any) -> Nav:
    return nav_of(context["request"], context.get("data"))


def install(env: Environment) -> None:
    """Give the templates ``site_nav()`` (base.html draws the header from it)."""
    env.globals["site_nav"] = _nav
