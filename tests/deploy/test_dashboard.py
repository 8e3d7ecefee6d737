"""deploy/grafana/arena.json against docs/operations.md and the code: the dashboard is a Grafana
dashboard of the right shape over a Prometheus datasource variable, each of its queries (and each
alert the document suggests) is valid PromQL using only metrics and labels the document lists,
every listed metric is on it; and the metrics the document lists are exactly those the referee's
and the arena's metrics modules register."""

from __future__ import annotations

import importlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import promql_parser
import pytest

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "arena.json"
OPERATIONS = ROOT / "docs" / "operations.md"
TARGET_LABELS = {"job", "instance"}  # the labels Prometheus adds to every scraped series
# Grafana's variables, as a query may hold them, with values that make it plain PromQL
GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "6h", "$job": ".*", "$bot": ".*"}
HISTOGRAM_SERIES = ("_bucket", "_sum", "_count")


@dataclass(frozen=True)
class Documented:
    """One row of the document's metric tables."""

    name: str
    type: str
    labels: frozenset[str]


def documented_metrics() -> dict[str, Documented]:
    """The metric tables of docs/operations.md ("## Metrics", up to "### Cardinality"), by name."""
    text = OPERATIONS.read_text(encoding="utf-8")
    section = text[text.index("## Metrics"):text.index("### Cardinality")]
    found: dict[str, Documented] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and re.fullmatch(r"`[a-z_]+`", cells[0]):
            name = cells[0].strip("`")
            assert name not in found, f"{name} is listed twice"
            outside_parentheses = re.sub(r"\([^()]*\)", "", cells[2])  # the label values are in parentheses
            found[name] = Documented(name, cells[1], frozenset(re.findall(r"`([a-z_]+)`", outside_parentheses)))
    return found


def series_metric(series: str, documented: dict[str, Documented]) -> Documented | None:
    """The documented metric a scraped series name belongs to (a histogram's _bucket, _sum, _count)."""
    if series in documented and documented[series].type != "histogram":
        return documented[series]
    for suffix in HISTOGRAM_SERIES:
        base = series.removesuffix(suffix)
        if base != series and base in documented and documented[base].type == "histogram":
            return documented[base]
    return None


def plain_promql(expr: str) -> str:
    """A Grafana query with its variables replaced by values, as Prometheus would get it."""
    for variable, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(variable, value)
    assert "$" not in expr, f"a Grafana variable this test does not know: {expr}"
    return expr


def selectors_and_labels(expr: str) -> tuple[set[str], set[str]]:
    """The metric names an expression selects and the label names it uses (matchers, by/without, on/ignoring)."""
    names: set[str] = set()
    labels: set[str] = set()

    def visit(node: Any) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            if node.name:
                names.add(node.name)
            labels.update(m.name for m in node.matchers.matchers if m.name != "__name__")
        elif isinstance(node, promql_parser.AggregateExpr) and node.modifier is not None:
            labels.update(node.modifier.labels)
        elif isinstance(node, promql_parser.BinaryExpr) and node.modifier is not None:
            matching = node.modifier.matching
            if matching is not None:
                labels.update(matching.labels)
            labels.update(node.modifier.group_labels or ())  # group_left(...)/group_right(...)

    promql_parser.walk(promql_parser.parse(expr), visit)
    return names, labels


def check_query(expr: str, documented: dict[str, Documented], where: str) -> set[str]:
    """Parse ``expr`` and check its metrics and labels against the document; the metrics it uses."""
    try:
        names, labels = selectors_and_labels(expr)
    except ValueError as exc:
        raise AssertionError(f"{where}: not valid PromQL: {exc}\n{expr}") from None
    used = {}
    for name in names:
        metric = series_metric(name, documented)
        assert metric is not None, f"{where}: {name} is not a metric docs/operations.md lists"
        used[metric.name] = metric
    allowed = set(TARGET_LABELS).union(*(m.labels for m in used.values()))
    if any(m.type == "histogram" for m in used.values()):
        allowed.add("le")
    assert labels <= allowed, f"{where}: labels {sorted(labels - allowed)} are not those of {sorted(used)}"
    assert used, f"{where}: uses no metric"
    return set(used)


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text(encoding="utf-8"))


def test_the_document_lists_the_metrics_of_the_referee_and_the_arena() -> None:
    documented = documented_metrics()
    assert len(documented) == 27, sorted(documented)
    assert all(m.type in ("counter", "gauge", "histogram") for m in documented.values())
    assert all(m.name.endswith("_total") == (m.type == "counter") for m in documented.values())
    assert all(m.name.startswith(("referee_", "arena_", "grpc_server_")) for m in documented.values())
    assert documented["referee_move_seconds"].labels == {"bot"}
    assert documented["grpc_server_handled_total"].labels == {"grpc_service", "grpc_method", "grpc_code"}
    assert documented["arena_web_requests_total"].labels == {"route", "status"}
    assert documented["referee_games_failed_total"].labels == {"error"}


def test_the_dashboard_has_grafanas_shape_and_a_prometheus_datasource_variable(dashboard: dict[str, Any]) -> None:
    assert isinstance(dashboard["title"], str) and dashboard["title"]
    assert isinstance(dashboard["uid"], str) and re.fullmatch(r"[A-Za-z0-9_-]{1,40}", dashboard["uid"])
    assert isinstance(dashboard["schemaVersion"], int) and dashboard["schemaVersion"] >= 36
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    source = {"type": "prometheus", "uid": "${datasource}"}
    for variable in variables.values():
        if variable["type"] == "query":
            assert variable["datasource"] == source, variable["name"]
    panels = dashboard["panels"]
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids)) and all(isinstance(i, int) for i in ids), "panel ids are unique integers"
    cells: dict[tuple[int, int], str] = {}
    for panel in panels:
        grid = panel["gridPos"]
        assert set(grid) == {"h", "w", "x", "y"} and all(isinstance(v, int) and v >= 0 for v in grid.values())
        assert grid["w"] >= 1 and grid["h"] >= 1 and grid["x"] + grid["w"] <= 24, panel["title"]
        for x in range(grid["x"], grid["x"] + grid["w"]):  # no two panels overlap
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in cells, f"{panel['title']} overlaps {cells[(x, y)]}"
                cells[(x, y)] = panel["title"]
        if panel["type"] == "row":
            assert panel["panels"] == [] and not panel.get("targets")
            continue
        assert panel["type"] in ("timeseries", "stat", "table", "piechart", "gauge", "bargauge"), panel["type"]
        assert panel["datasource"] == source, panel["title"]
        assert panel["targets"], f"{panel['title']} has no query"
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == source and isinstance(target["expr"], str) and target["expr"].strip()


def test_every_query_is_promql_over_documented_metrics_and_labels_and_shows_every_metric(
        dashboard: dict[str, Any]) -> None:
    documented = documented_metrics()
    shown: set[str] = set()
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            shown |= check_query(plain_promql(target["expr"]), documented, f"panel {panel['title']!r}")
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":  # label_values(SELECTOR, LABEL): its selector
            selector, label = re.fullmatch(r"label_values\((.+), (\w+)\)", variable["query"]["query"]).groups()  # type: ignore[union-attr]
            used = check_query(plain_promql(selector), documented, f"variable {variable['name']}")
            assert label in TARGET_LABELS | documented[used.pop()].labels, variable["name"]
    assert shown == set(documented), f"metrics on no panel: {sorted(set(documented) - shown)}"


def test_the_documents_alerts_are_promql_over_documented_metrics() -> None:
    documented = documented_metrics()
    text = OPERATIONS.read_text(encoding="utf-8")
    blocks = re.findall(r"```promql\n(.*?)```", text, flags=re.S)
    alerts = [line for block in blocks for line in block.splitlines() if line.strip() and not line.startswith("#")]
    assert len(alerts) >= 8, alerts
    for alert in alerts:
        check_query(alert, documented, f"alert {alert!r}")


def test_the_check_sees_an_undocumented_metric_a_wrong_label_and_bad_promql() -> None:
    # the checks themselves, on made-up queries
    documented = documented_metrics()
    with pytest.raises(AssertionError, match="referee_moves_total is not a metric"):
        check_query("rate(referee_moves_total[5m])", documented, "made up")
    with pytest.raises(AssertionError, match=r"labels \['kind'\]"):
        check_query("sum by (kind) (rate(referee_moves_judged_total[5m]))", documented, "made up")
    with pytest.raises(AssertionError, match="not valid PromQL"):
        check_query("sum by (bot (rate(referee_moves_judged_total[5m]))", documented, "made up")
    assert check_query(plain_promql("histogram_quantile(0.9, sum by (le, bot) (rate(referee_move_seconds_bucket"
                                    "{job=~\"$job\"}[$__rate_interval])))"), documented, "made up") == {
        "referee_move_seconds"}


def metrics_modules() -> list[Any]:
    """referee.metrics and arena.metrics, imported, with their metrics registered: arena's on
    import, the referee's once its ``registry()`` is first asked (on a metric's first use)."""
    modules = []
    for name in ("referee.metrics", "arena.metrics"):
        try:
            modules.append(importlib.import_module(name))
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise  # the module is there but something it imports is not: a real failure
            pytest.skip(f"{name} does not exist on this branch yet (the metrics part of issue 15 adds it)")
    return modules


def metric_objects(module: Any) -> list[Any]:
    """A metrics module's metrics: its module-level ones, or those of its ``registry()``."""
    return [*vars(module).values(), *(module.registry().values() if hasattr(module, "registry") else ())]


def test_every_documented_metric_is_registered_and_no_other() -> None:
    modules = metrics_modules()
    from prometheus_client import REGISTRY
    from prometheus_client.metrics import MetricWrapperBase

    objects = {m.describe()[0].name: m for module in modules for m in metric_objects(module)
               if isinstance(m, MetricWrapperBase)}
    documented = documented_metrics()
    families = {f.name: f for f in REGISTRY.collect()}
    ours = {name: f for name, f in families.items() if name.startswith(("referee_", "arena_", "grpc_server_"))}
    registered = {}
    for name, family in ours.items():
        # prometheus_client names a counter's family without its _total (its samples have it)
        registered[f"{name}_total" if family.type == "counter" else name] = family
    assert sorted(registered) == sorted(documented)
    for name, family in registered.items():
        assert family.type == documented[name].type, f"{name}: {family.type}, documented {documented[name].type}"
    # the labels: a metric takes exactly the documented ones (labels() refuses others, or any on a
    # metric without labels); the series made to see it is removed again
    assert {f"{n}_total" if m.describe()[0].type == "counter" else n for n, m in objects.items()} == set(documented)
    for name, metric in objects.items():
        wanted = documented[f"{name}_total" if metric.describe()[0].type == "counter" else name].labels
        if not wanted:
            with pytest.raises(ValueError):
                metric.labels(x="x")
            continue
        metric.labels(**{label: "x" for label in wanted})  # ValueError on any other label set
        metric.remove(*["x"] * len(wanted))
