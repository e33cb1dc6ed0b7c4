#!/usr/bin/env python3
"""Checks deploy/docker-compose.yml without Docker (this machine has no engine).

- It is valid against the Compose specification's JSON schema (check-jsonschema's vendored
  copy), and a deliberately broken copy is refused, so the validator is known to be looking.
- Every Sesame executable it runs is a product of Package.swift and is copied by the Dockerfile.
- Every SESAME_* variable it sets is read by the services, and each service gets every variable
  production mode requires; every ${VARIABLE} it interpolates is in deploy/.env.example.
- The topology the issue asks for: health checks, depends_on conditions, a named PostgreSQL
  volume, production mode, a delivery service that `--scale` can replicate, and a gateway that
  includes the same routes file as ./sesame-dev.

Usage: check_compose.py CHECK_JSONSCHEMA_EXECUTABLE   (run by ./sesame-dev test)
"""
import pathlib
import re
import subprocess
import sys
import tempfile

import yaml

import deployment_checks
from deployment_checks import check

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
COMPOSE = DEPLOY / "docker-compose.yml"
SESAME_SERVICES = ("auth", "delivery", "admin")


def schema_errors(validator, path):
    run = subprocess.run([validator, "--builtin-schema", "vendor.compose-spec", str(path)], capture_output=True, text=True)
    return run.returncode, (run.stdout + run.stderr).strip()


def main(validator):
    print("deployment: deploy/docker-compose.yml")
    text = COMPOSE.read_text()
    compose = yaml.safe_load(text)
    services = compose.get("services", {})

    status, output = schema_errors(validator, COMPOSE)
    check("valid against the Compose specification schema", status == 0, output)
    with tempfile.NamedTemporaryFile("w", suffix=".yml") as broken:
        broken.write(text.replace("condition: service_healthy", "condition: when_it_feels_like_it", 1))
        broken.flush()
        status, _ = schema_errors(validator, broken.name)
        check("the schema check refuses a broken depends_on condition", status != 0)

    for name, service in services.items():
        command = service.get("command") or []
        if command and command[0].startswith("sesame"):
            check(f"{name} runs {command[0]}, a Package.swift product the Dockerfile builds and copies", deployment_checks.ships(command[0]))

    read_by_services = deployment_checks.variables_read_by_services()
    for name in ("migrate",) + SESAME_SERVICES:
        environment = services.get(name, {}).get("environment", {})
        unknown = sorted(v for v in environment if v.startswith("SESAME_") and v not in read_by_services)
        check(f"{name}: every SESAME_* variable it sets is read by the services", not unknown, f"unknown: {unknown}")
        command = services.get(name, {}).get("command") or []
        deployment_checks.check_settings(name, command, environment, environment.get("SESAME_ENVIRONMENT") == "production")

    example = (DEPLOY / ".env.example").read_text()
    documented = set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]*)=", example, re.MULTILINE))
    interpolated = set(re.findall(r"\$\{([A-Z][A-Z0-9_]*)", text))
    check("every interpolated variable is in deploy/.env.example", interpolated <= documented, f"missing: {sorted(interpolated - documented)}")
    check("deploy/.env is ignored by git and by docker builds",
          "deploy/.env" in (ROOT / ".gitignore").read_text().split() and "deploy/.env" in (ROOT / ".dockerignore").read_text().split())

    expected = {"postgres", "kafka", "migrate", "gateway", *SESAME_SERVICES}
    check("the services are PostgreSQL, Kafka, migrate, auth, delivery, admin and the gateway", set(services) == expected,
          f"found {sorted(services)}")
    kafka = services.get("kafka", {})
    check("Kafka is the official image in KRaft mode",
          str(kafka.get("image", "")).startswith("apache/kafka:") and "KAFKA_PROCESS_ROLES" in kafka.get("environment", {}))
    kafka_environment = kafka.get("environment", {})
    protocols = dict(item.split(":", 1) for item in str(kafka_environment.get("KAFKA_LISTENER_SECURITY_PROTOCOL_MAP", "")).split(","))
    advertised = [item.split("://", 1) for item in str(kafka_environment.get("KAFKA_ADVERTISED_LISTENERS", "")).split(",")]
    reachable = [listener for listener, address in advertised if not address.startswith("127.0.0.1")]
    check("every Kafka listener other containers reach demands SASL/SCRAM",
          reachable and all(protocols.get(listener, "").startswith("SASL_") for listener in reachable)
          and "SCRAM" in str(kafka_environment.get("KAFKA_SASL_ENABLED_MECHANISMS", "")), f"{advertised} {protocols}")
    for name in ("migrate",) + SESAME_SERVICES:
        environment = services.get(name, {}).get("environment", {})
        check(f"{name} authenticates to Kafka with SCRAM",
              str(environment.get("SESAME_KAFKA_SECURITY_PROTOCOL", "")).startswith("sasl_")
              and str(environment.get("SESAME_KAFKA_SASL_MECHANISM", "")).startswith("scram-"))
    for name in ("postgres", "kafka", "gateway") + SESAME_SERVICES:
        check(f"{name} has a health check", "test" in services.get(name, {}).get("healthcheck", {}))
    for name in SESAME_SERVICES:
        depends = services.get(name, {}).get("depends_on", {})
        check(f"{name} starts after a successful migration and a healthy Kafka",
              depends.get("migrate", {}).get("condition") == "service_completed_successfully"
              and depends.get("kafka", {}).get("condition") == "service_healthy")
    gateway_depends = services.get("gateway", {}).get("depends_on", {})
    check("the gateway starts after healthy services",
          all(gateway_depends.get(n, {}).get("condition") == "service_healthy" for n in SESAME_SERVICES))
    delivery = services.get("delivery", {})
    check("delivery can be scaled (no container_name, no host port)", "container_name" not in delivery and "ports" not in delivery)
    check("PostgreSQL keeps its data in a named volume",
          any(str(v).startswith("postgres-data:") for v in services.get("postgres", {}).get("volumes", []))
          and "postgres-data" in compose.get("volumes", {}))

    mounts = " ".join(services.get("gateway", {}).get("volumes", []))
    nginx = (DEPLOY / "gateway" / "compose-nginx.conf").read_text()
    runner = (ROOT / "Tools" / "DevSuite" / "Gateway.swift").read_text()
    check("the gateway mounts the shared routes file, which the local suite (./sesame-dev) includes too",
          "./gateway/sesame-routes.conf:/etc/nginx/sesame-routes.conf" in mounts
          and "include /etc/nginx/sesame-routes.conf;" in nginx and "deploy/gateway/sesame-routes.conf" in runner)
    check("both gateways log with the shared format, which leaves query strings out",
          "./gateway/sesame-log-format.conf:/etc/nginx/sesame-log-format.conf" in mounts
          and "access_log /dev/stdout sesame;" in nginx and "deploy/gateway/sesame-log-format.conf" in runner
          and "$request " not in (DEPLOY / "gateway" / "sesame-log-format.conf").read_text())
    routes = (DEPLOY / "gateway" / "sesame-routes.conf").read_text()
    used = set(re.findall(r"http://(sesame_[a-z]+)", routes)) | {"sesame_" + s for s in SESAME_SERVICES}
    defined = set(re.findall(r"upstream (sesame_[a-z]+)", nginx))
    check("the compose gateway defines every upstream the routes use", used <= defined, f"missing: {sorted(used - defined)}")
    limits = (DEPLOY / "gateway" / "sesame-limits.conf").read_text()
    zones = set(re.findall(r"limit_conn_zone \S+ zone=([a-z_]+):", limits))
    limited = set(re.findall(r"limit_conn ([a-z_]+) \d+;", routes))
    check("both gateways include the shared limits, which define every connection zone the routes use",
          "./gateway/sesame-limits.conf:/etc/nginx/sesame-limits.conf" in mounts
          and "include /etc/nginx/sesame-limits.conf;" in nginx and "deploy/gateway/sesame-limits.conf" in runner
          and bool(limited) and limited <= zones, f"zones {sorted(zones)}, used {sorted(limited)}")
    check_client_prefixes(limits)
    stream_route = routes.split("location = /v1/config/updates", 1)[-1].split("}", 1)[0]
    check("live-config streams are limited per client address at the gateway", "limit_conn sesame_streams_per_address" in stream_route)

    print(f"deployment: {deployment_checks.failures} failed")
    return 1 if deployment_checks.failures else 0


def client_of(limits, address):
    """What the gateway's `$sesame_client` map makes of `address`, evaluated as nginx does: the
    regular expressions in order, the first that matches, its captures put into the value."""
    block = limits.split("map $remote_addr $sesame_client {", 1)[1].split("\n}", 1)[0]
    for pattern, value in re.findall(r'"~([^"]+)"\s+(\S+);', block):
        found = re.match(pattern.replace("(?<", "(?P<"), address)
        if found:
            return re.sub(r"\$([a-z0-9]+)", lambda name: found.group(name.group(1)) or "", value)
    return address


def check_client_prefixes(limits):
    """The gateway counts an IPv6 client by its /64, as the services do, for every compressed form
    nginx writes (random addresses with runs of zero groups in every place), and an IPv4 or
    IPv4-mapped client by its IPv4 address."""
    import ipaddress
    import random
    generator = random.Random(64)
    wrong = []
    for _ in range(20000):
        groups = [generator.choice([0, 0, 0, generator.randrange(1, 1 << 16)]) for _ in range(8)]
        address = ipaddress.IPv6Address(bytes(b for g in groups for b in g.to_bytes(2, "big")))
        if address.ipv4_mapped:
            continue
        expected = ":".join(f"{g:x}" for g in groups[:4])
        if client_of(limits, address.compressed) != expected:
            wrong.append((address.compressed, client_of(limits, address.compressed), expected))
    for text, expected in [("203.0.113.9", "203.0.113.9"), ("::ffff:203.0.113.9", "203.0.113.9"), ("2001:db8:1:2::9", "2001:db8:1:2")]:
        if client_of(limits, text) != expected:
            wrong.append((text, client_of(limits, text), expected))
    check("the gateway counts an IPv6 client by its /64 and an IPv4 client by its address, as the services do",
          not wrong, f"{len(wrong)} wrong, e.g. {wrong[:3]}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
