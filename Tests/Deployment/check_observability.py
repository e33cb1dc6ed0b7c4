#!/usr/bin/env python3
"""Checks deploy/observability/ with Prometheus's own tool (Debian's prometheus package).

- The example prometheus.yml passes `promtool check config` with the three jobs the rules and the
  dashboard name. The alert rules pass `promtool check rules`, and every alert's test in sesame-alerts.test.yml
  passes `promtool test rules`. Each alert must have a test that sees it fire: its expression is
  replaced by one that never fires and the tests must then fail.
- The Grafana dashboard is JSON Grafana imports: unique panel ids, panels inside the 24-column
  grid and not overlapping, every query on the dashboard's datasource variable, and every query
  valid PromQL (promtool checks them as recording rules, Grafana's variables replaced).
- Every metric the rules and the dashboard name is one the services export (a label in the
  Swift sources, as the Prometheus backend sanitizes it), so a renamed metric cannot leave a
  dashboard panel empty or an alert silent.
- Every runbook link names a heading that exists in docs/.

Usage: check_observability.py PROMTOOL   (run by ./sesame-dev test)
"""
import json
import pathlib
import re
import subprocess
import sys
import tempfile

import yaml

import deployment_checks
from deployment_checks import check

ROOT = pathlib.Path(__file__).resolve().parents[2]
OBSERVABILITY = ROOT / "deploy" / "observability"
RULES = OBSERVABILITY / "prometheus" / "sesame-alerts.yml"
RULE_TESTS = OBSERVABILITY / "prometheus" / "sesame-alerts.test.yml"
SCRAPE_CONFIG = OBSERVABILITY / "prometheus" / "prometheus.yml"
DASHBOARD = OBSERVABILITY / "grafana" / "sesame.json"
# Series Prometheus itself makes, not the services.
BUILT_IN_SERIES = {"up"}
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")
# Grafana's variables, replaced by what they stand for so promtool can parse the query.
GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$__interval": "1m", "$job": "sesame-.*"}


def promtool(executable, *arguments, cwd=None):
    run = subprocess.run([executable, *arguments], capture_output=True, text=True, cwd=cwd)
    return run.returncode, (run.stdout + run.stderr).strip()


def exported_metrics():
    """Every metric label in the Swift sources, sanitized as Shared/SesameHTTP/PrometheusMetrics.swift does."""
    labels = re.findall(r'(?:Counter|Gauge|Timer|Recorder|Meter|FloatingPointCounter)\(\s*label:\s*"([^"\\]+)"', deployment_checks.swift_sources())
    return {re.sub(r"[^A-Za-z0-9_:]", "_", label) for label in labels}


def metric_names(expression):
    """The series an expression selects: identifiers followed by a selector, a range or a closing
    parenthesis, that are not PromQL's functions, keywords or label names."""
    without_strings = re.sub(r'"[^"]*"', '""', expression)
    without_labels = re.sub(r"\{[^}]*\}", "{}", without_strings)
    without_grouping = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", without_labels)
    names = set()
    for match in re.finditer(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()", without_grouping):
        name = match.group(1)
        if name in {"and", "or", "unless", "bool", "offset", "le", "inf", "Inf", "nan"}:
            continue
        if re.fullmatch(r"\d+[smhdwy]", name):
            continue
        names.add(name)
    return names


def known(name, exported):
    if name in BUILT_IN_SERIES or name in exported:
        return True
    return any(name.endswith(suffix) and name[: -len(suffix)] in exported for suffix in HISTOGRAM_SUFFIXES)


def heading_anchors(document):
    anchors = set()
    for line in document.read_text().splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", title)))
    return anchors


def check_rules(executable, exported):
    print("observability: deploy/observability/prometheus")
    status, output = promtool(executable, "check", "rules", str(RULES))
    check("promtool check rules: the alert rules are valid", status == 0, output)
    status, output = promtool(executable, "check", "config", str(SCRAPE_CONFIG))
    check("promtool check config: the example prometheus.yml (which loads the rules) is valid", status == 0, output)
    jobs = {job["job_name"] for job in yaml.safe_load(SCRAPE_CONFIG.read_text())["scrape_configs"]}
    check("it scrapes the jobs the rules and the dashboard name", {"sesame-auth", "sesame-delivery", "sesame-admin"} <= jobs, str(jobs))
    status, output = promtool(executable, "test", "rules", RULE_TESTS.name, cwd=RULE_TESTS.parent)
    check("promtool test rules: every test passes", status == 0, output)

    rules = yaml.safe_load(RULES.read_text())
    alerts = [rule for group in rules["groups"] for rule in group["rules"] if "alert" in rule]
    tested = {test_alert["alertname"] for test in yaml.safe_load(RULE_TESTS.read_text())["tests"] for test_alert in test.get("alert_rule_test", [])}
    for alert in alerts:
        name = alert["alert"]
        check(f"{name} has tests", name in tested)
        # Made silent, the alert must fail a test: one of its tests expects it to fire.
        silenced = yaml.safe_load(RULES.read_text())
        for group in silenced["groups"]:
            for rule in group["rules"]:
                if rule.get("alert") == name:
                    rule["expr"] = "vector(1) < 0"
        with tempfile.TemporaryDirectory() as directory:
            (pathlib.Path(directory) / RULES.name).write_text(yaml.safe_dump(silenced))
            (pathlib.Path(directory) / RULE_TESTS.name).write_text(RULE_TESTS.read_text())
            status, _ = promtool(executable, "test", "rules", RULE_TESTS.name, cwd=directory)
        check(f"{name}: a test fails when the alert never fires", status != 0)
        unknown = sorted(name for name in metric_names(alert["expr"]) if not known(name, exported))
        check(f"{name} names only metrics the services export", not unknown, ", ".join(unknown))
        for key in ("summary", "runbook"):
            check(f"{name} has a {key}", bool(alert.get("annotations", {}).get(key)))
        runbook = alert.get("annotations", {}).get("runbook", "")
        document, _, anchor = runbook.partition("#")
        path = ROOT / document
        check(f"{name}'s runbook {runbook} exists", path.is_file() and (not anchor or anchor in heading_anchors(path)))


def check_dashboard(executable, exported):
    print("observability: deploy/observability/grafana/sesame.json")
    try:
        dashboard = json.loads(DASHBOARD.read_text())
    except json.JSONDecodeError as error:
        check("the dashboard is JSON", False, str(error))
        return
    check("the dashboard has a title, a uid and a schema version", all(dashboard.get(key) for key in ("title", "uid", "schemaVersion")))
    variables = {variable["name"]: variable for variable in dashboard.get("templating", {}).get("list", [])}
    check("its datasource is a variable of type datasource for Prometheus", variables.get("datasource", {}).get("type") == "datasource"
          and variables["datasource"].get("query") == "prometheus")

    panels = dashboard.get("panels", [])
    ids = [panel.get("id") for panel in panels]
    check("panel ids are unique", len(ids) == len(set(ids)) and None not in ids)
    cells = {}
    overlaps = []
    for panel in panels:
        grid = panel.get("gridPos", {})
        x, y, w, h = (grid.get(key, -1) for key in ("x", "y", "w", "h"))
        if x < 0 or w <= 0 or x + w > 24 or h <= 0 or y < 0:
            check(f"panel '{panel.get('title')}' lies inside the grid", False, str(grid))
            continue
        for column in range(x, x + w):
            for row in range(y, y + h):
                if (column, row) in cells:
                    overlaps.append(f"'{panel.get('title')}' over '{cells[column, row]}'")
                cells[column, row] = panel.get("title")
    check("no panel overlaps another", not overlaps, "; ".join(sorted(set(overlaps))[:3]))

    queries = []
    for panel in panels:
        if panel.get("type") == "row":
            continue
        targets = panel.get("targets", [])
        check(f"panel '{panel['title']}' has queries and a description", bool(targets) and bool(panel.get("description")))
        for target in targets:
            uses_variable = target.get("datasource", {}).get("uid") == "${datasource}" and panel.get("datasource", {}).get("uid") == "${datasource}"
            check(f"panel '{panel['title']}' {target.get('refId')} queries the datasource variable", uses_variable)
            queries.append((panel["title"], target.get("refId"), target.get("expr", "")))

    recording = []
    for index, (title, reference, expression) in enumerate(queries):
        concrete = deployment_checks.with_grafana_variables(expression, GRAFANA_VARIABLES)
        check(f"panel '{title}' {reference} uses only known variables", "$" not in concrete, concrete)
        recording.append({"record": f"dashboard:query_{index}", "expr": concrete})
        unknown = sorted(name for name in metric_names(concrete) if not known(name, exported))
        check(f"panel '{title}' {reference} names only metrics the services export", not unknown, ", ".join(unknown))
    with tempfile.NamedTemporaryFile("w", suffix=".yml") as rules:
        yaml.safe_dump({"groups": [{"name": "dashboard", "rules": recording}]}, rules)
        rules.flush()
        status, output = promtool(executable, "check", "rules", rules.name)
    check(f"every one of the {len(recording)} queries is valid PromQL (promtool)", status == 0, output)
    # The same check must refuse a broken query, or it is not looking.
    with tempfile.NamedTemporaryFile("w", suffix=".yml") as rules:
        yaml.safe_dump({"groups": [{"name": "dashboard", "rules": [{"record": "dashboard:broken", "expr": "sum by (le (rate(x[5m]))"}]}]}, rules)
        rules.flush()
        status, _ = promtool(executable, "check", "rules", rules.name)
    check("promtool refuses a broken query", status != 0)


def self_test(exported):
    check("the metric finder sees a selector, a range and a histogram bucket",
          metric_names('histogram_quantile(0.99, sum by (le, job) (rate(a_b_bucket{x="y"}[5m]))) / c_d and on(job) up') == {"a_b_bucket", "c_d", "up"})
    check("exported metrics include a histogram's name and a sanitized request counter",
          "sesame_delivery_propagation_seconds" in exported and "hb_requests" in exported)
    check("an unknown metric is unknown", not known("sesame_no_such_metric", exported))


def main(executable):
    exported = exported_metrics()
    self_test(exported)
    check_rules(executable, exported)
    check_dashboard(executable, exported)
    if deployment_checks.failures:
        print(f"observability: {deployment_checks.failures} check(s) failed")
        return 1
    print("observability: the alert rules, their tests and the dashboard hold")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
