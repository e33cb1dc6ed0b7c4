#!/usr/bin/env python3
"""Renders deploy/observability/grafana/sesame.json from a Prometheus that scraped a live suite.

Grafana is not packaged for Debian, so this stands in for it: every panel's queries run against
Prometheus's HTTP API over the time the suite ran (Grafana's variables replaced as Grafana would),
each panel is drawn where its gridPos puts it (lines for time series, the last value for stats),
and headless Chromium takes a screenshot of the page. It fails when a panel that a running suite
always feeds shows no data (a metric renamed, a label dropped, a query that never matches), or
when an alert fires during a healthy run.

Usage: render_dashboard.py --prometheus URL --since EPOCH --out DIRECTORY
       (./sesame-dev e2e runs it after the walk, against the Prometheus that scraped the walk's suite)
"""
import argparse
import html
import json
import pathlib
import sys
import time
import urllib.parse
import urllib.request

import deployment_checks
from deployment_checks import check

ROOT = pathlib.Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "observability" / "grafana" / "sesame.json"
# Scraped every second: a rate needs a window of several scrapes.
VARIABLES = {"$__rate_interval": "15s", "$__interval": "1s", "$job": "sesame-.*"}
# Panels a walk always feeds; the others (refusals, failures, relay outcomes) may rightly be empty.
MUST_HAVE_DATA = {
    "Requests per second by route", "Errors per second by route and status", "Latency p99 by route",
    "Attestation success rate", "Refresh latency", "Tokens issued by tier", "Signing key age",
    "Config propagation delay", "Live streams", "Apps failing to load", "Outbox backlog",
    "Outbox publish latency p99", "Kafka consumer lag", "Events consumed and rejected",
}
COLORS = ["#7eb26d", "#eab839", "#6ed0e0", "#ef843c", "#e24d42", "#1f78c1", "#ba43a9", "#705da0"]


def query_range(prometheus, expression, start, end):
    parameters = urllib.parse.urlencode({"query": expression, "start": start, "end": end, "step": "1"})
    with urllib.request.urlopen(f"{prometheus}/api/v1/query_range?{parameters}", timeout=30) as reply:
        answer = json.load(reply)
    if answer.get("status") != "success":
        raise RuntimeError(f"{expression}: {answer}")
    return answer["data"]["result"]


def legend(template, labels):
    text = template or "{{__name__}}"
    for key, value in labels.items():
        text = text.replace("{{" + key + "}}", value)
    return text.replace("{{", "").replace("}}", "")


def formatted(value, unit):
    if unit == "percentunit":
        return f"{value * 100:.1f} %"
    if unit == "s":
        return f"{value * 1000:.1f} ms" if value < 1 else (f"{value:.1f} s" if value < 3600 else f"{value / 86400:.1f} d")
    if unit in ("reqps", "ops"):
        return f"{value:.2f}/s"
    return f"{value:.0f}" if value == int(value) else f"{value:.2f}"


def finite(values):
    """A series' (time, value) pairs as numbers, without Prometheus's NaN and infinities."""
    return [(float(t), float(v)) for t, v in values if v not in ("NaN", "+Inf", "-Inf")]


def svg(series, unit, width=560, height=170):
    points = [point for s in series for point in finite(s["values"])]
    if not points:
        return '<div class="empty">no data</div>'
    t0, t1 = min(p[0] for p in points), max(p[0] for p in points)
    top = max(max(p[1] for p in points), 1e-9)
    lines = []
    for index, s in enumerate(series[:8]):
        coordinates = [
            f"{(t - t0) / max(t1 - t0, 1) * width:.1f},{height - v / top * (height - 10):.1f}" for t, v in finite(s["values"])]
        lines.append(f'<polyline fill="none" stroke="{COLORS[index % len(COLORS)]}" stroke-width="1.5" points="{" ".join(coordinates)}"/>')
    return (f'<svg viewBox="0 0 {width} {height}" preserveAspectRatio="none"><text x="2" y="10" class="axis">'
            f'{html.escape(formatted(top, unit))}</text>{"".join(lines)}</svg>')


def render(dashboard, prometheus, start, end):
    cells, summary = [], {}
    for panel in dashboard["panels"]:
        grid = panel["gridPos"]
        style = f'grid-column: {grid["x"] + 1} / span {grid["w"]}; grid-row: {grid["y"] + 1} / span {grid["h"]};'
        if panel["type"] == "row":
            cells.append(f'<div class="row" style="{style}">{html.escape(panel["title"])}</div>')
            continue
        unit = panel["fieldConfig"]["defaults"].get("unit", "short")
        series = []
        for target in panel["targets"]:
            expression = deployment_checks.with_grafana_variables(target["expr"], VARIABLES)
            for result in query_range(prometheus, expression, start, end):
                result["legend"] = legend(target.get("legendFormat"), result["metric"])
                series.append(result)
        summary[panel["title"]] = len(series)
        if panel["type"] == "stat":
            body = "".join(
                f'<div class="stat"><span>{html.escape(s["legend"])}</span><b>{html.escape(formatted(float(s["values"][-1][1]), unit))}</b></div>'
                for s in series) or '<div class="empty">no data</div>'
        else:
            body = svg(series, unit) + '<div class="legend">' + "".join(
                f'<span style="color:{COLORS[i % len(COLORS)]}">■</span> {html.escape(s["legend"])} '
                for i, s in enumerate(series[:8])) + (f" … +{len(series) - 8}" if len(series) > 8 else "") + "</div>"
        cells.append(f'<div class="panel" style="{style}"><h3>{html.escape(panel["title"])}</h3>{body}</div>')
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(dashboard["title"])}</title><style>
    body {{ background: #111217; color: #ccccdc; font: 12px sans-serif; margin: 12px; }}
    h1 {{ font-size: 18px; margin: 0 0 10px; }} .grid {{ display: grid; grid-template-columns: repeat(24, 1fr); grid-auto-rows: 30px; gap: 6px; }}
    .panel {{ background: #181b1f; border: 1px solid #2c3235; border-radius: 3px; padding: 6px; overflow: hidden; }}
    .panel h3 {{ margin: 0 0 4px; font-size: 13px; }} .row {{ font-size: 14px; font-weight: bold; padding-top: 8px; }}
    svg {{ width: 100%; height: 150px; background: #141619; }} .axis {{ fill: #8e8e8e; font-size: 9px; }}
    .legend {{ font-size: 11px; margin-top: 4px; }} .empty {{ color: #8e8e8e; padding: 40px; text-align: center; }}
    .stat {{ display: inline-block; margin: 10px 24px 0 0; }} .stat b {{ display: block; font-size: 28px; color: #73bf69; }}
    </style></head><body><h1>{html.escape(dashboard["title"])} — rendered from Prometheus over the walk ({int(end - start)} s)</h1>
    <div class="grid">{"".join(cells)}</div></body></html>"""
    return page, summary


def screenshot(page_path, image_path):
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1600,1000"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        driver.get(page_path.as_uri())
        height = driver.execute_script("return document.body.scrollHeight")
        driver.set_window_size(1600, height + 240)  # the window's own bars take part of its height
        driver.save_screenshot(str(image_path))
    finally:
        driver.quit()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prometheus", required=True)
    parser.add_argument("--since", type=float, required=True)
    parser.add_argument("--out", required=True)
    arguments = parser.parse_args()
    out = pathlib.Path(arguments.out)
    out.mkdir(parents=True, exist_ok=True)
    end = time.time()
    page, summary = render(json.loads(DASHBOARD.read_text()), arguments.prometheus, arguments.since, end)
    page_path = out / "sesame-dashboard.html"
    page_path.write_text(page)
    screenshot(page_path, out / "sesame-dashboard.png")
    for title, count in summary.items():
        required = title in MUST_HAVE_DATA
        check(f"{title}: {count} series" + ("" if count or required else " (may be empty)"), count > 0 or not required)
    with urllib.request.urlopen(f"{arguments.prometheus}/api/v1/alerts", timeout=10) as reply:
        firing = [a["labels"]["alertname"] for a in json.load(reply)["data"]["alerts"] if a["state"] == "firing"]
    check("no alert fires during the walk", not firing, str(firing))
    unknown = sorted(MUST_HAVE_DATA - set(summary))
    check("every panel this check expects is on the dashboard", not unknown, str(unknown))
    failures = deployment_checks.failures
    print(f"observability: the dashboard rendered from Prometheus ({out / 'sesame-dashboard.png'}): {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
