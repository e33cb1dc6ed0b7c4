"""What the deployment checks (check_compose.py, check_observability.py, check_kubernetes.py) share:
a check that prints its line and counts failures, and what the code says a deployment must match."""
import functools
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
# What production mode refuses to start without (Shared/SesameConfiguration), and what only
# admin's server reads and requires besides: no other workload may hold it.
REQUIRED_IN_PRODUCTION = ("SESAME_DATABASE_URL", "SESAME_KAFKA_BROKERS", "SESAME_MASTER_KEY")
ADMIN_ONLY = ("SESAME_OPERATOR_TOKEN",)


def serves_admin(command):
    """Whether a workload's command is admin's server (not a one-shot such as `sesame-admin migrate`)."""
    return command[:2] in (["sesame-admin"], ["sesame-admin", "serve"])


def check_settings(name, command, environment, production):
    """Checks that workload `name` runs in production with every setting it needs, and that only
    admin's server is given what only it reads."""
    wanted = REQUIRED_IN_PRODUCTION + (ADMIN_ONLY if serves_admin(command) else ())
    missing = [v for v in wanted if v not in environment]
    check(f"{name}: production mode with every required setting", production and not missing, f"missing: {missing}")
    if not serves_admin(command):
        held = [v for v in ADMIN_ONLY if v in environment]
        check(f"{name}: not given what only admin's server reads", not held, f"given: {held}")

failures = 0


def check(description, passed, detail=""):
    """Prints `ok` or `FAIL` and the description (and `detail` when it failed), counting failures."""
    global failures
    print(f"  {'ok  ' if passed else 'FAIL'}  {description}" + (f": {detail}" if detail and not passed else ""))
    failures += 0 if passed else 1


@functools.cache
def swift_sources():
    """The services' Swift sources (Shared and Services) as one text, read once per check."""
    return "\n".join(p.read_text() for folder in ("Shared", "Services") for p in (ROOT / folder).rglob("*.swift"))


def variables_read_by_services():
    """Every SESAME_* variable the services' sources name."""
    return set(re.findall(r'"(SESAME_[A-Z0-9_]+)"', swift_sources()))


@functools.cache
def products_and_dockerfile():
    """Package.swift's executable products, and deploy/Dockerfile's text, read once per check."""
    products = set(re.findall(r'\.executable\(name: "([^"]+)"', (ROOT / "Package.swift").read_text()))
    return products, (ROOT / "deploy" / "Dockerfile").read_text()


def ships(executable):
    """Whether `executable` is a Package.swift product that deploy/Dockerfile builds and copies."""
    products, dockerfile = products_and_dockerfile()
    return executable in products and re.search(rf"\b{re.escape(executable)}\b", dockerfile) is not None


def with_grafana_variables(expression, values):
    """A dashboard query with Grafana's variables (`$__rate_interval`, `$job`, …) replaced by `values`."""
    for variable, value in values.items():
        expression = expression.replace(variable, value)
    return expression
