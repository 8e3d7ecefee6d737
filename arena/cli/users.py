"""`arena users`: who may log in to the web app and submit bots (add prints a new token once)."""

from __future__ import annotations

import argparse
import sys

from ..errors import UsageError
from .database import add_database_arguments, database_url


def add_users_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("users", help="the web app's users: add (prints their token once), list, remove")
    actions = p.add_subparsers(dest="users_action", required=True, metavar="{add,list,remove}")
    for action, text in (("add", "add a user and print their token (only its hash is stored)"),
                         ("list", "list the users"), ("remove", "remove a user: their token stops working")):
        q = actions.add_parser(action, help=text)
        if action != "list":
            q.add_argument("name", help="the user's name, also their bot's name (A-Z a-z 0-9 _ -, up to 32)")
        if action == "add":
            q.add_argument("--operator", action="store_true", help="an operator: sees every bot's private pages "
                           "(logs, errors, notes) on the web, not only their own bots'")
        add_database_arguments(q)
    p.set_defaults(func=cmd_users)


def cmd_users(args: argparse.Namespace) -> int:
    # the database's modules (SQLAlchemy, Alembic) only for the command, not for `arena --help`
    from ..store.store import Store
    from ..store.users import add_user, check_user_name, remove_user, users

    if args.users_action != "list":
        check_user_name(args.name)  # before the database is opened (or created)
    store = Store(database_url(args, f"arena users {args.users_action}"))
    try:
        if args.users_action == "add":
            token = add_user(store, args.name, operator=args.operator)
            # the token alone on stdout (TOKEN=$(arena users add ...)); how to use it on stderr
            sys.stdout.write(token + "\n")
            sys.stderr.write(f"added user {args.name}; the line above is their token, shown this once (the database "
                             "keeps only its hash). Give it to them: they log in at /login with it, or send it as "
                             "the header 'Authorization: Bearer TOKEN'.\n")
        elif args.users_action == "remove":
            remove_user(store, args.name)
            sys.stdout.write(f"removed user {args.name}: their token no longer works (their bots and "
                             "submissions stay)\n")
        else:
            sys.stdout.write(f"{'user':32s} {'state':8s} {'role':11s} {'submissions':>11s}  added\n")
            for u in users(store):
                added = u.created_at.isoformat(timespec="seconds")
                role = "operator" if u.operator else "participant"
                sys.stdout.write(f"{u.name:32s} {'active' if u.active else 'removed':8s} {role:11s} "
                                 f"{u.submissions:11d}  {added}\n")
    finally:
        store.close()
    return 0
