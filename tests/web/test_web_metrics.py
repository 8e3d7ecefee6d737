"""`arena web --metrics-listen`: each answered request counted by its route's template and status
code, and timed, as scraped from the running process (docs/operations.md)."""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path

from tests.metrics_support import by_label, file_reader, metrics_url, scrape, total, wait_for
from tests.web.browser_support import serve


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=30) as answer:
            answer.read()
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code


def test_requests_are_counted_by_route_template_and_status(played_db: str, tmp_path: Path) -> None:
    with serve(played_db, tmp_path, "--metrics-listen", "127.0.0.1:0") as server:
        url = metrics_url(file_reader(server.log), lambda: server.process.poll() is None)
        before = by_label(scrape(url), "arena_web_requests_total", "route", "status")  # the start-up probes
        asked = ["/t/runs", "/t/runs.json", "/t/runs/games/1", "/t/nosuch", "/no/such/page"]
        statuses = [_status(server.url(path)) for path in asked]
        # a request is counted as its response ends, which a loaded machine may finish after the
        # client has its answer: scrape until all five are in (bounded), then compare each series
        pages: list[str] = []

        def all_counted() -> bool:
            pages.append(scrape(url))
            counts = by_label(pages[-1], "arena_web_requests_total", "route", "status")
            return sum(counts.values()) - sum(before.values()) >= len(asked)

        wait_for(all_counted, "every request counted")
        got = pages[-1]
        # the event loop's lag is sampled while it serves (every 0.25 s)
        wait_for(lambda: total(scrape(url), "referee_event_loop_lag_seconds_count") > 0, "a lag sample")
    assert statuses == [200, 200, 200, 404, 404]
    counted = by_label(got, "arena_web_requests_total", "route", "status")
    new = {key: n - before.get(key, 0) for key, n in counted.items() if n != before.get(key, 0)}
    # one series per route template, whatever name or number was asked for
    assert new == {("/t/{tournament}", "200"): 2, ("/t/{tournament}/games/{number:id}", "200"): 1,
                   ("/t/{tournament}", "404"): 1,
                   ("unmatched", "404"): 1}, new
    assert total(got, "arena_web_request_seconds_count") == sum(counted.values())
