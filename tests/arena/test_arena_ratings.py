"""TrueSkill ratings (arena/ratings.py) checked against the trueskill package called directly, and
standings (arena/standings.py) checked against records worked out by hand."""

from __future__ import annotations

import csv
import io
import json

import pytest
import trueskill
from rich.console import Console

from arena.config import StandingsSettings
from arena.rating.ratings import Rating, RatingBook, default_rating, make_env
from arena.rating.results import FORFEIT_KINDS, GameOutcome
from arena.rating.standings import (
    Standings,
    compute_standings,
    fitting_standings_table,
    forfeits_text,
    head_to_head_table,
    provisional_reasons,
    rank_notes,
    seat_result,
    standings_csv,
    standings_json,
    standings_table,
)


def game(number: int, bots: str, sides: tuple[int, ...], ranks: tuple[int, ...], scores: tuple[int, ...],
         winner: int, forfeits: tuple[tuple[int, str], ...] = ()) -> GameOutcome:
    """A finished game; ``bots`` spells one single-letter bot name per seat."""
    return GameOutcome(number=number, seat_bots=tuple(bots), sides=sides, ranks=ranks, scores=scores,
                       winner_side=winner, forfeits=forfeits)


def duel(number: int, bots: str, ranks: tuple[int, int], forfeits: tuple[tuple[int, str], ...] = ()) -> GameOutcome:
    winner = -1 if ranks[0] == ranks[1] else ranks.index(1)
    return game(number, bots, (0, 1), ranks, (21 if ranks[0] == 1 else 9, 21 if ranks[1] == 1 else 9), winner, forfeits)


def same(ours: Rating, theirs: trueskill.Rating) -> bool:
    return ours.mu == pytest.approx(theirs.mu, abs=1e-12) and ours.sigma == pytest.approx(theirs.sigma, abs=1e-12)


def render(table: object) -> str:
    console = Console(record=True, width=160)
    console.print(table)
    return console.export_text()


# --- ratings ---------------------------------------------------------------------------------------------------


def test_make_env_has_trueskill_defaults_and_unseen_bot_gets_them() -> None:
    env = make_env()
    assert (env.mu, env.sigma, env.beta, env.tau, env.draw_probability) == pytest.approx(
        (25.0, 25 / 3, 25 / 6, 25 / 300, 0.10))
    book = RatingBook()
    assert book.rating("nobody") == Rating(25.0, 25 / 3) == default_rating()
    assert book.ratings() == {}
    assert Rating(30.0, 2.0).conservative == pytest.approx(24.0)


def test_one_vs_one_win_matches_rate_1vs1_whichever_seat_wins() -> None:
    env = make_env()
    winner, loser = trueskill.rate_1vs1(env.create_rating(), env.create_rating(), env=env)
    book = RatingBook()
    new = book.update(duel(1, "ab", (1, 2)))
    assert same(new["a"], winner) and same(new["b"], loser)
    assert new["a"].mu > 25 > new["b"].mu

    second_seat_wins = RatingBook().update(duel(1, "ab", (2, 1)))
    assert same(second_seat_wins["b"], winner) and same(second_seat_wins["a"], loser)


def test_one_vs_one_draw_matches_rate_1vs1_drawn() -> None:
    env = make_env()
    start_a, start_b = env.create_rating(28.0, 3.0), env.create_rating(22.0, 6.0)
    expect_a, expect_b = trueskill.rate_1vs1(start_a, start_b, drawn=True, env=env)
    book = RatingBook(ratings={"a": Rating(28.0, 3.0), "b": Rating(22.0, 6.0)})
    new = book.update(duel(1, "ab", (1, 1)))
    assert same(new["a"], expect_a) and same(new["b"], expect_b)
    assert new["a"].mu < 28.0 and new["b"].mu > 22.0  # a draw with a weaker bot costs the stronger one


def test_three_player_free_for_all_with_tie_for_second() -> None:
    env = make_env()
    r = env.create_rating()
    (first,), (second_a,), (second_b,) = env.rate([(r,), (r,), (r,)], ranks=[0, 1, 1])
    new = RatingBook().update(game(1, "bac", (0, 1, 2), (2, 1, 2), (10, 15, 10), 1))
    assert same(new["a"], first) and same(new["b"], second_a) and same(new["c"], second_b)
    assert max(new["b"].mu, new["c"].mu) < 25.0 < new["a"].mu  # the tied pair both lose to the winner


def test_two_vs_two_partnerships_rate_individual_ratings_as_teams() -> None:
    env = make_env()
    start = {"a": Rating(30.0, 4.0), "b": Rating(25.0, 8.0), "c": Rating(20.0, 5.0), "d": Rating(27.0, 2.0)}
    ts = {name: env.create_rating(r.mu, r.sigma) for name, r in start.items()}
    (a, c), (b, d) = env.rate([(ts["a"], ts["c"]), (ts["b"], ts["d"])], ranks=[1, 0])
    new = RatingBook(ratings=start).update(game(1, "abcd", (0, 1, 0, 1), (2, 1, 2, 1), (8, 21), 1))
    assert set(new) == {"a", "b", "c", "d"}
    assert same(new["a"], a) and same(new["b"], b) and same(new["c"], c) and same(new["d"], d)
    assert new["b"].mu > 25.0 and new["a"].mu < 30.0


def test_four_player_free_for_all() -> None:
    env = make_env()
    r = env.create_rating()
    (a,), (b,), (c,), (d,) = env.rate([(r,), (r,), (r,), (r,)], ranks=[2, 0, 3, 1])
    new = RatingBook().update(game(1, "abcd", (0, 1, 2, 3), (3, 1, 4, 2), (5, 20, 2, 11), 1))
    assert same(new["a"], a) and same(new["b"], b) and same(new["c"], c) and same(new["d"], d)
    assert new["b"].mu > new["d"].mu > new["a"].mu > new["c"].mu


def test_sequence_of_games_is_applied_in_the_order_given() -> None:
    games = [duel(1, "ab", (1, 2)), duel(2, "bc", (1, 2)), duel(3, "ca", (1, 1)),
             game(4, "abc", (0, 1, 2), (3, 1, 2), (4, 20, 12), 1)]
    env = make_env()
    ts = {name: env.create_rating() for name in "abc"}
    ts["a"], ts["b"] = trueskill.rate_1vs1(ts["a"], ts["b"], env=env)
    ts["b"], ts["c"] = trueskill.rate_1vs1(ts["b"], ts["c"], env=env)
    ts["c"], ts["a"] = trueskill.rate_1vs1(ts["c"], ts["a"], drawn=True, env=env)
    (ts["a"],), (ts["b"],), (ts["c"],) = env.rate([(ts["a"],), (ts["b"],), (ts["c"],)], ranks=[2, 0, 1])

    book = RatingBook()
    for outcome in games:
        book.update(outcome)
    assert set(book.ratings()) == {"a", "b", "c"}
    assert all(same(book.rating(name), ts[name]) for name in "abc")

    reversed_book = RatingBook()
    for outcome in reversed(games):
        reversed_book.update(outcome)
    assert reversed_book.rating("a").mu != pytest.approx(book.rating("a").mu, abs=1e-6)


def test_custom_environment_and_starting_ratings_are_used_and_not_mutated() -> None:
    env = trueskill.TrueSkill(mu=1000.0, sigma=200.0, beta=100.0, tau=2.0, draw_probability=0.0)
    start = {"a": Rating(1100.0, 50.0)}
    book = RatingBook(env=env, ratings=start)
    assert book.rating("b") == Rating(1000.0, 200.0)
    expect_a, expect_b = trueskill.rate_1vs1(env.create_rating(1100.0, 50.0), env.create_rating(), env=env)
    new = book.update(duel(1, "ba", (2, 1)))
    assert same(new["a"], expect_a) and same(new["b"], expect_b)
    assert start == {"a": Rating(1100.0, 50.0)}  # the caller's mapping is left alone
    returned = book.ratings()
    returned["a"] = Rating(0.0, 1.0)
    assert book.rating("a") == new["a"]  # nor can a returned copy change the book


def test_bot_at_two_seats_is_rejected_and_leaves_the_book_unchanged() -> None:
    book = RatingBook()
    with pytest.raises(ValueError, match="more than one seat"):
        book.update(game(1, "abad", (0, 1, 0, 1), (1, 2, 1, 2), (21, 3), 0))
    assert book.ratings() == {}


# --- standings -------------------------------------------------------------------------------------------------


def two_player_games() -> list[GameOutcome]:
    return [
        game(1, "ab", (0, 1), (1, 2), (21, 9), 0),                       # a wins
        game(2, "ba", (0, 1), (1, 1), (15, 15), -1),                     # draw
        game(3, "ab", (0, 1), (2, 1), (3, 10), 1, ((0, "timeout"),)),    # a times out
        game(4, "ab", (0, 1), (1, 1), (4, 6), -1, ((0, "crash"), (1, "illegal"))),  # both forfeit
    ]


def test_win_draw_loss_points_and_forfeits_two_players() -> None:
    games = two_player_games()
    assert [seat_result(games[3], seat) for seat in (0, 1)] == ["loss", "loss"]
    standings = compute_standings(["a", "b", "c"], games, {"a": Rating(26.0, 2.0), "b": Rating(24.0, 2.0)})
    rows = {row.name: row for row in standings.rows}
    a, b, c = rows["a"], rows["b"], rows["c"]
    assert (a.games, a.wins, a.draws, a.losses) == (4, 1, 1, 2)
    assert (b.games, b.wins, b.draws, b.losses) == (4, 1, 1, 2)
    assert a.points_per_game == pytest.approx((21 + 15 + 3 + 4) / 4)
    assert b.points_per_game == pytest.approx((9 + 15 + 10 + 6) / 4)
    assert a.forfeits == {"timeout": 1, "illegal": 0, "crash": 1, "startup": 0}
    assert b.forfeits == {"timeout": 0, "illegal": 1, "crash": 0, "startup": 0}
    # c never played: listed with zeros and the default rating
    assert (c.games, c.wins, c.draws, c.losses, c.points_per_game) == (0, 0, 0, 0, 0.0)
    assert c.forfeits == dict.fromkeys(FORFEIT_KINDS, 0)
    assert (c.mu, c.sigma) == pytest.approx((25.0, 25 / 3))
    h2h = standings.head_to_head
    assert (h2h.score["a", "b"], h2h.games["a", "b"]) == (1.0 + 0.5 + 0.0 + 0.5, 4)
    assert (h2h.score["b", "a"], h2h.games["b", "a"]) == (0.0 + 0.5 + 1.0 + 0.5, 4)
    assert (h2h.score["a", "c"], h2h.games["a", "c"]) == (0.0, 0)


def test_three_player_records_and_head_to_head() -> None:
    games = [
        game(1, "abc", (0, 1, 2), (1, 2, 2), (20, 12, 12), 0),   # a first, b and c tie
        game(2, "bca", (0, 1, 2), (1, 1, 3), (14, 14, 2), -1),   # b and c share the top, a last
        game(3, "cab", (0, 1, 2), (3, 1, 2), (0, 18, 9), 1, ((0, "startup"),)),  # c never starts
    ]
    standings = compute_standings(["a", "b", "c"], games, {})
    rows = {row.name: row for row in standings.rows}
    assert (rows["a"].wins, rows["a"].draws, rows["a"].losses) == (2, 0, 1)
    assert (rows["b"].wins, rows["b"].draws, rows["b"].losses) == (0, 1, 2)
    assert (rows["c"].wins, rows["c"].draws, rows["c"].losses) == (0, 1, 2)
    assert rows["c"].forfeits["startup"] == 1
    assert rows["a"].points_per_game == pytest.approx((20 + 2 + 18) / 3)
    h2h = standings.head_to_head
    expected = {("a", "b"): 1 + 0 + 1, ("b", "a"): 0 + 1 + 0, ("a", "c"): 1 + 0 + 1, ("c", "a"): 0 + 1 + 0,
                ("b", "c"): 0.5 + 0.5 + 1, ("c", "b"): 0.5 + 0.5 + 0}
    assert {pair: h2h.score[pair] for pair in expected} == expected
    assert all(h2h.games[pair] == 3 for pair in expected)


def test_four_player_partnerships_compare_opponents_only() -> None:
    games = [
        game(1, "abcd", (0, 1, 0, 1), (1, 2, 1, 2), (21, 11), 0),
        game(2, "bcda", (0, 1, 0, 1), (1, 2, 1, 2), (16, 13), 0, ((1, "crash"),)),  # c crashes; a loses with it
    ]
    standings = compute_standings(["a", "b", "c", "d"], games, {})
    rows = {row.name: row for row in standings.rows}
    assert [(rows[n].wins, rows[n].draws, rows[n].losses) for n in "abcd"] == [(1, 0, 1), (1, 0, 1), (1, 0, 1),
                                                                              (1, 0, 1)]
    assert rows["c"].forfeits == {"timeout": 0, "illegal": 0, "crash": 1, "startup": 0}
    assert rows["a"].forfeits == dict.fromkeys(FORFEIT_KINDS, 0)
    assert rows["a"].points_per_game == pytest.approx((21 + 13) / 2)
    assert rows["b"].points_per_game == pytest.approx((11 + 16) / 2)
    h2h = standings.head_to_head
    # game 1 teams {a, c} v {b, d}; game 2 teams {b, d} v {c, a}: the same partnerships twice
    assert (h2h.games["a", "c"], h2h.games["b", "d"]) == (0, 0)
    assert (h2h.score["a", "c"], h2h.score["b", "d"]) == (0.0, 0.0)
    for mine, theirs in (("a", "b"), ("a", "d"), ("c", "b"), ("c", "d")):
        assert (h2h.score[mine, theirs], h2h.games[mine, theirs]) == (1.0, 2)
        assert (h2h.score[theirs, mine], h2h.games[theirs, mine]) == (1.0, 2)


def test_rows_sorted_by_conservative_rating_then_mu_then_name() -> None:
    ratings = {"x": Rating(30.0, 5.0), "y": Rating(20.0, 1.0), "z": Rating(27.0, 4.0), "w": Rating(27.0, 4.0),
               "v": Rating(21.0, 2.0)}
    standings = compute_standings(["x", "y", "z", "w", "v"], [], ratings)
    assert [row.name for row in standings.rows] == ["y", "x", "w", "z", "v"]
    assert [row.rank for row in standings.rows] == [1, 2, 3, 4, 5]
    assert [row.conservative for row in standings.rows] == pytest.approx([17.0, 15.0, 15.0, 15.0, 15.0])
    assert standings.head_to_head.names == ("y", "x", "w", "z", "v")


def test_standings_from_a_rating_book_agree_with_it() -> None:
    games = two_player_games()[:3]
    book = RatingBook()
    for outcome in games:
        book.update(outcome)
    standings = compute_standings(["a", "b"], games, book.ratings())
    assert [row.name for row in standings.rows] == ["b", "a"]  # b won the last game
    top = standings.rows[0]
    assert (top.mu, top.sigma, top.conservative) == (book.rating("b").mu, book.rating("b").sigma,
                                                     book.rating("b").conservative)


def test_unknown_bot_and_bad_forfeit_are_rejected() -> None:
    with pytest.raises(ValueError, match="not in the standings"):
        compute_standings(["a"], [game(1, "ab", (0, 1), (1, 2), (21, 9), 0)], {})
    with pytest.raises(ValueError, match="bad forfeit"):
        compute_standings(["a", "b"], [game(1, "ab", (0, 1), (2, 1), (9, 21), 1, ((0, "sulk"),))], {})


# --- outputs ---------------------------------------------------------------------------------------------------


def sample_standings() -> Standings:
    return compute_standings(["a", "b", "c"], two_player_games(), {"a": Rating(26.0, 2.0), "b": Rating(24.0, 2.0)})


def test_json_round_trips_rows_and_head_to_head() -> None:
    standings = sample_standings()
    document = json.loads(standings_json(standings))
    assert list(document) == ["standings", "head_to_head", "provisional", "rank_notes"]
    first = document["standings"][0]
    assert list(first) == ["rank", "name", "mu", "sigma", "conservative", "games", "wins", "draws", "losses",
                           "points_per_game", "forfeits", "provisional", "provisional_reasons"]
    assert [row["name"] for row in document["standings"]] == ["a", "b", "c"]
    assert first == {"rank": 1, "name": "a", "mu": 26.0, "sigma": 2.0, "conservative": 20.0, "games": 4,
                     "wins": 1, "draws": 1, "losses": 2, "points_per_game": 10.75,
                     "forfeits": {"timeout": 1, "illegal": 0, "crash": 1, "startup": 0},
                     "provisional": False, "provisional_reasons": []}  # no rule given: nobody is marked
    assert (document["provisional"], document["rank_notes"]) == (None, [])
    pairs = {(e["bot"], e["opponent"]): (e["score"], e["games"]) for e in document["head_to_head"]}
    assert len(pairs) == 6
    assert pairs["a", "b"] == (2.0, 4) and pairs["b", "a"] == (2.0, 4) and pairs["c", "a"] == (0.0, 0)
    assert standings_json(standings) == standings_json(sample_standings())  # stable output


def test_csv_round_trips_with_one_column_per_forfeit_kind() -> None:
    text = standings_csv(sample_standings())
    rows = list(csv.DictReader(io.StringIO(text)))
    assert text.splitlines()[0] == ("rank,name,mu,sigma,conservative,games,wins,draws,losses,points_per_game,"
                                    "forfeits_timeout,forfeits_illegal,forfeits_crash,forfeits_startup,"
                                    "provisional,provisional_reasons")
    assert [row["name"] for row in rows] == ["a", "b", "c"]
    a = rows[0]
    assert (int(a["rank"]), float(a["mu"]), float(a["conservative"]), int(a["games"])) == (1, 26.0, 20.0, 4)
    assert (int(a["wins"]), int(a["draws"]), int(a["losses"]), float(a["points_per_game"])) == (1, 1, 2, 10.75)
    assert [int(a[f"forfeits_{kind}"]) for kind in FORFEIT_KINDS] == [1, 0, 1, 0]
    assert [int(rows[1][f"forfeits_{kind}"]) for kind in FORFEIT_KINDS] == [0, 1, 0, 0]
    assert float(rows[2]["sigma"]) == pytest.approx(25 / 3)


def test_rich_tables_render_names_and_figures() -> None:
    standings = sample_standings()
    text = render(standings_table(standings, title="Spring cup"))
    assert "Spring cup" in text and "rating (μ−3σ)" in text and "pts/game" in text
    lines = {line.split("│")[2].strip(): line for line in text.splitlines() if line.count("│") > 10}
    assert set(lines) == {"a", "b", "c"}
    assert all(figure in lines["a"] for figure in ("20.00", "26.00", "2.00", "10.75", "1 timeout, 1 crash"))
    assert "1 illegal" in lines["b"] and "18.00" in lines["b"]
    assert lines["c"].rstrip().rstrip("│").rstrip().endswith("-")

    grid = render(head_to_head_table(standings))
    cells = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]]
             for line in grid.splitlines() if line.count("│") == 5}
    assert cells["a"] == ["-", "2/4", "-"]
    assert cells["b"] == ["2/4", "-", "-"]
    assert cells["c"] == ["-", "-", "-"]


def table_cells(text: str, folded: int = 1) -> list[list[str]]:
    """The body rows of a rendered rich table, each cell's lines joined: as they were folded (cut
    anywhere) in column ``folded``, as words wrapped (at spaces) in the others."""
    rows: list[list[list[str]]] = []
    for line in text.splitlines():
        if not line.startswith("│"):
            continue
        cells = [c.strip() for c in line.strip("│").split("│")]
        if cells[0]:  # the rank is on a row's first line only
            rows.append([[c] for c in cells])
        else:
            for parts, c in zip(rows[-1], cells):
                parts.append(c)
    return [[("" if i == folded else " ").join(p for p in parts if p) for i, parts in enumerate(row)] for row in rows]


def test_live_standings_fit_80_columns_and_cut_nothing() -> None:
    """Six bots with long, look-alike names, three-digit counts and every kind of forfeit: on an
    80-column terminal no line is longer, no cell is cut short ("…"), every name and figure is
    there whole (names and forfeits may wrap); a wide terminal gets the full table."""
    names = ["lookahead-v2-experimental", "greedy", "random-1", "random-2", "node-sample-bot", "a-bot"]
    outcomes = []
    for n in range(1, 401):
        loser = ["random-1", "random-2", "a-bot", "node-sample-bot"][n % 4]
        winner = ["lookahead-v2-experimental", "greedy"][n % 2]
        forfeit = ((1, FORFEIT_KINDS[n // 4 % 4]),) if loser == "random-1" else ()
        outcomes.append(GameOutcome(n, (winner, loser), (0, 1), (1, 2), (21, 7), 0, forfeit))
    standings = compute_standings(names, outcomes, {name: Rating(20 + i, 1 + i / 10) for i, name in enumerate(names)})
    narrow = Console(record=True, width=80)
    table = fitting_standings_table(narrow, standings, "spring-cup: standings after 400 games")
    narrow.print(table)
    text = narrow.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "…" not in text
    rows = table_cells(text)
    assert [row[1] for row in rows] == [r.name for r in standings.rows]
    for row, expected in zip(rows, standings.rows):
        assert row[0] == str(expected.rank)
        assert row[2] == f"{expected.conservative:.2f}"
        assert row[3:8] == [str(expected.games), str(expected.wins), str(expected.draws), str(expected.losses),
                            f"{expected.points_per_game:.2f}"]
        assert row[8] == forfeits_text(expected.forfeits)
    by_name = {row[1]: row for row in rows}
    assert by_name["random-1"][8] == "25 timeout, 25 illegal, 25 crash, 25 startup"  # wrapped, all there

    wide = Console(record=True, width=160)
    wide.print(fitting_standings_table(wide, standings, "spring-cup"))
    assert "rating (μ−3σ)" in wide.export_text()  # μ and σ too where they fit


# --- provisional bots, and bots ranked below one they lead head to head --------------------------------------


def test_provisional_reasons_name_the_games_and_the_sigma_against_their_limits() -> None:
    rule = StandingsSettings(provisional_games=20, provisional_sigma=2.5)
    assert provisional_reasons(8, 3.1, rule) == ("8 games of 20", "σ 3.10 > 2.5")
    assert provisional_reasons(1, 2.0, rule) == ("1 game of 20",)
    assert provisional_reasons(20, 2.5, rule) == ()  # at the limits: settled
    assert provisional_reasons(40, 2.6, rule) == ("σ 2.60 > 2.5",)
    assert provisional_reasons(40, 2.5004, rule) == ("σ 2.5004 > 2.5",)  # never "σ 2.50 > 2.5"
    assert provisional_reasons(0, 25 / 3, StandingsSettings(0, 9)) == ()  # both tests turned off
    assert provisional_reasons(3, 8.0, None) == ()


def test_the_provisional_mark_never_changes_the_order_or_the_figures() -> None:
    ratings = {"x": Rating(30.0, 5.0), "y": Rating(20.0, 1.0), "z": Rating(27.0, 4.0)}
    plain = compute_standings(["x", "y", "z"], [], ratings)
    marked = compute_standings(["x", "y", "z"], [], ratings, StandingsSettings(0, 3.0))
    assert [(r.rank, r.name, r.conservative) for r in marked.rows] == [(r.rank, r.name, r.conservative)
                                                                     for r in plain.rows]
    assert {r.name: r.provisional for r in marked.rows} == {"y": (), "x": ("σ 5.00 > 3",), "z": ("σ 4.00 > 3",)}
    assert all(r.provisional == () for r in plain.rows)


def five_three_and_seven_one() -> list[GameOutcome]:
    """The audit's case: b beats a 3-1, then a beats c (who had beaten d and e) 4 times, and b beats
    e (who loses to everyone) 4 times; a is 5-3, b 7-1."""
    order = [("c", "d"), ("c", "e")] * 3 + [("b", "a")] * 3 + [("a", "b")] + [("a", "c")] * 4 + [("b", "e")] * 4
    return [duel(n, winner + loser if n % 2 else loser + winner, (1, 2) if n % 2 else (2, 1))
            for n, (winner, loser) in enumerate(order, start=1)]


def test_a_bot_ranked_below_one_it_leads_head_to_head_is_marked_and_explained() -> None:
    games = five_three_and_seven_one()
    book = RatingBook()
    for outcome in games:
        book.update(outcome)
    standings = compute_standings(list("abcde"), games, book.ratings(), StandingsSettings())
    rows = {row.name: row for row in standings.rows}
    a, b = rows["a"], rows["b"]
    assert (a.wins, a.losses, b.wins, b.losses) == (5, 3, 7, 1)
    assert standings.head_to_head.score["b", "a"] == 3.0 and standings.head_to_head.games["b", "a"] == 4
    assert a.rank < b.rank and a.conservative > b.conservative  # the ranking rule is kept: μ − 3σ
    assert b.provisional == ("8 games of 20", f"σ {b.sigma:.2f} > 2.5") and a.provisional
    (note,) = [n for n in rank_notes(standings) if n.lower.name == "b"]
    assert (note.higher.name, note.score, note.games) == ("a", 3.0, 4)
    assert note.text().startswith("b leads a 3–1 head to head but ranks below it: ranks follow the rating μ − 3σ")
    assert f"b {b.conservative:.2f} = {b.mu:.2f} − 3 × {b.sigma:.2f}" in note.text()
    assert note.text().endswith("; both are provisional")
    document = json.loads(standings_json(standings))
    assert document["provisional"] == {"games": 20, "sigma": 2.5}
    assert {"bot": "b", "ranked_below": "a", "score": 3.0, "games": 4, "text": note.text()} in document["rank_notes"]
    csv_b = next(r for r in csv.DictReader(io.StringIO(standings_csv(standings))) if r["name"] == "b")
    assert (csv_b["provisional"], csv_b["provisional_reasons"]) == ("true", f"8 games of 20; σ {b.sigma:.2f} > 2.5")


def test_tables_mark_a_provisional_rating_and_say_what_the_mark_means() -> None:
    ratings = {"old": Rating(30.0, 1.0), "new": Rating(35.0, 3.0)}
    games = [GameOutcome(n, ("old", "new") if n % 2 else ("new", "old"), (0, 1), (1, 2), (21, 9), 0)
             for n in range(1, 25)]
    standings = compute_standings(["old", "new"], games, ratings, StandingsSettings(20, 2.5))
    text = render(standings_table(standings))
    lines = {line.split("│")[2].strip(): line for line in text.splitlines() if line.count("│") > 10}
    assert "27.00" in lines["old"] and "?" not in lines["old"] and "26.00?" in lines["new"]  # new: σ 3 > 2.5
    assert "? provisional: under 20 games or σ above 2.5" in " ".join(text.split())
    settled = render(standings_table(compute_standings(["old", "new"], games, ratings, StandingsSettings(10, 3.5))))
    assert "?" not in settled and "provisional" not in settled
