"""The dashboard in a real headless Chromium (Debian's chromium and chromium-driver, Selenium),
signed in with passkeys held by Chromium's virtual WebAuthn authenticator, against a running local
suite. Run by `./sesame-dev test` (and `./sesame-dev dashboard`):

    python dashboard_test.py --url http://localhost:PORT --runner .../sesame-suite --screenshots DIR

Every step prints one line; any failure raises and exits non-zero. The device side is plain HTTP:
a debug token fetches what the dashboard published."""
import argparse
import base64
import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.virtual_authenticator import VirtualAuthenticatorOptions
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

TEAM = "DASHTEAM01"
BUNDLE = "com.example.dash"
APP = f"{TEAM}.{BUNDLE}"
OTHER_BUNDLE = "com.example.other"


class Failure(Exception):
    pass


class AppleStandIn:
    """Apple's DeviceCheck server as the admin service meets it when it checks a key: every call
    answered `status` in plain text (401: Apple refuses the JWT; 400: it accepted the JWT and refused
    the device token, which is how a good key shows)."""

    def __init__(self, port):
        self.status = 401
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                message = b"Unable to verify authorization token" if stand_in.status == 401 else b"Missing or incorrectly formatted device token payload"
                self.send_response(stand_in.status)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(message)))
                self.end_headers()
                self.wfile.write(message)

            def log_message(self, *arguments):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def new_device_check_key():
    """A P-256 key as Apple's .p8 file holds it (PKCS#8 PEM)."""
    return subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"],
                          check=True, capture_output=True, text=True).stdout


def expect(condition, message):
    if not condition:
        raise Failure(message)


def run(runner, *arguments):
    """The last line sesame-admin prints."""
    return run_lines(runner, *arguments)[-1]


def run_lines(runner, *arguments):
    """Every line sesame-admin prints."""
    result = subprocess.run([runner, "run", "admin", *arguments], capture_output=True, text=True, timeout=300)
    expect(result.returncode == 0, f"sesame-admin {' '.join(arguments)}: {result.stderr}")
    return result.stdout.strip().splitlines()


def psql(database_url, statement):
    """Runs one SQL statement against the suite's database, as the services would have written it."""
    subprocess.run(["psql", database_url, "-v", "ON_ERROR_STOP=1", "-q", "-c", statement], check=True)


def http(url, method="GET", body=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


class Browser:
    """One person's Chromium, with a passkey authenticator of their own."""

    def __init__(self, base, screenshots):
        options = Options()
        options.binary_location = "/usr/bin/chromium"
        for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1440,1000"):
            options.add_argument(argument)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        authenticator = VirtualAuthenticatorOptions()
        authenticator.protocol = VirtualAuthenticatorOptions.Protocol.CTAP2
        authenticator.transport = VirtualAuthenticatorOptions.Transport.INTERNAL
        authenticator.has_resident_key = True
        authenticator.has_user_verification = True
        authenticator.is_user_verified = True
        self.driver.add_virtual_authenticator(authenticator)
        self.base = base
        self.screenshots = screenshots
        self.wait = WebDriverWait(self.driver, 20)

    def open(self, path):
        self.driver.get(self.base + path)

    def find(self, css):
        return self.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, css)))

    def click(self, css):
        self.wait.until(EC.element_to_be_clickable((By.CSS_SELECTOR, css))).click()

    def text_appears(self, css, text):
        try:
            self.wait.until(EC.text_to_be_present_in_element((By.CSS_SELECTOR, css), text))
        except TimeoutException:
            found = self.driver.find_element(By.CSS_SELECTOR, css).text if self.driver.find_elements(By.CSS_SELECTOR, css) else "(absent)"
            raise Failure(f"'{text}' never appeared in {css}: {found!r}")

    def console_errors(self):
        """What the page has logged as errors since the last call (a missing icon is one)."""
        return [entry["message"] for entry in self.driver.get_log("browser") if entry["level"] == "SEVERE"]

    def renders(self):
        return int(self.driver.execute_script("return document.body.dataset.rendered || '0'"))

    def rerendering(self, action):
        """Does `action`, then waits until the page it leads to has finished rendering."""
        before = self.renders()
        action()
        try:
            self.wait.until(lambda _: self.renders() > before and self.driver.execute_script("return document.body.dataset.busy") == "0")
        except TimeoutException:
            raise Failure("the page did not render after the action")

    def go(self, page):
        self.rerendering(lambda: self.click(f"#nav-{page}"))

    def confirming(self, css):
        """Clicks `css` and accepts the confirmation it asks for."""
        self.click(css)
        self.wait.until(EC.alert_is_present()).accept()

    def shot(self, name):
        self.driver.save_screenshot(str(self.screenshots / f"{name}.png"))

    def fetch(self, method, path, body=None, app=APP, csrf=True):
        """A request from the page's own script, as the dashboard makes it (or without the CSRF token)."""
        return self.driver.execute_async_script(
            """
            const [method, path, body, app, csrf, done] = arguments;
            (async () => {
              const session = await (await fetch('/dashboard/api/session')).json();
              const headers = {'Content-Type': 'application/json', 'X-Sesame-App': app};
              if (csrf) headers['X-CSRF-Token'] = session.csrfToken;
              const response = await fetch(path, {method, headers, body: body === null ? undefined : JSON.stringify(body)});
              done({status: response.status, body: await response.json().catch(() => ({}))});
            })().catch((error) => done({status: 0, body: {error: String(error)}}));
            """, method, path, body, app, csrf)

    def quit(self):
        self.driver.quit()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True, help="the gateway, as http://localhost:PORT")
    parser.add_argument("--runner", required=True, help="sesame-suite (./sesame-dev passes it), to run sesame-admin against the suite")
    parser.add_argument("--screenshots", required=True)
    parser.add_argument("--apple-port", type=int, required=True, help="where admin finds Apple's DeviceCheck (SESAME_APPLE_DEVICECHECK_URL)")
    parser.add_argument("--database-url-file", required=True, help="the suite's database URL, to record an attested install as auth would")
    arguments = parser.parse_args()
    base = arguments.url.rstrip("/")
    screenshots = Path(arguments.screenshots)
    screenshots.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()

    def step(number, title):
        print(f"dashboard {number} ok   {title} ({time.monotonic() - started:.1f} s)", flush=True)

    apple = AppleStandIn(arguments.apple_port)
    key = run(arguments.runner, "keys", "create", "--team-id", TEAM, "--bundle-id", BUNDLE, "--name", "dashboard-test")
    owner_invite = run(arguments.runner, "accounts", "invite", "--app", APP, "--email", "owner@example.com", "--role", "owner")
    expect(owner_invite.startswith(base + "/dashboard/#invite="), f"the invitation link: {owner_invite}")

    # Security headers on every dashboard page.
    request = urllib.request.Request(base + "/dashboard")
    with urllib.request.urlopen(request, timeout=30) as response:
        csp = response.headers.get("Content-Security-Policy", "")
        expect("script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp, f"CSP: {csp}")
        expect(response.headers.get("X-Content-Type-Options") == "nosniff", "nosniff")
        expect(response.headers.get("Referrer-Policy") == "no-referrer", "referrer policy")
    step(1, "the page carries a CSP without inline script, frame-ancestors none, nosniff, no referrer")

    # The operator lists an app's open invitations and cancels one sent to the wrong address: its link closes.
    wrong_invite = run(arguments.runner, "accounts", "invite", "--app", APP, "--email", "wrong@example.com", "--role", "editor")
    listed = run_lines(arguments.runner, "accounts", "invitations", "--app", APP)
    wrong_rows = [line.split("\t") for line in listed[1:] if "\twrong@example.com\t" in line]
    expect(len(wrong_rows) == 1 and wrong_rows[0][2] == "editor", f"the open invitations: {listed}")
    expect(any("\towner@example.com\t" in line for line in listed), f"the owner's invitation is open too: {listed}")
    run(arguments.runner, "accounts", "cancel-invitation", "--app", APP, wrong_rows[0][0])
    status, body = http(base + "/dashboard/api/register/options", "POST", {"invitation": wrong_invite.split("#invite=")[1]})
    expect(status == 404 and body["error"]["code"] == "invitation_invalid", f"a cancelled invitation: {status} {body}")
    listed = run_lines(arguments.runner, "accounts", "invitations", "--app", APP)
    expect(not any("wrong@example.com" in line for line in listed), f"a cancelled invitation is listed: {listed}")
    step("1b", "the operator lists the open invitations (sesame-admin accounts invitations) and cancels one: its link no longer opens")

    owner = Browser(base, screenshots)
    viewer = stranger = None
    try:
        owner.open(owner_invite[len(base):])
        owner.text_appears("h1", "Join " + APP)
        owner.shot("01-invitation")
        icon = owner.driver.execute_script("return document.querySelector('link[rel=icon]').href")
        with urllib.request.urlopen(icon, timeout=30) as response:
            expect(response.headers["Content-Type"] == "image/svg+xml", f"the page's icon {icon}: {response.headers['Content-Type']}")
        errors = owner.console_errors()
        expect(errors == [], f"the page logged errors on load: {errors}")
        owner.click("#register")
        owner.find("#nav-overview")
        cookie = owner.driver.get_cookie("__Host-sesame_session")
        expect(cookie and cookie["httpOnly"] and cookie["secure"] and cookie.get("sameSite") == "Strict", f"session cookie: {cookie}")
        expect(owner.driver.execute_script("return document.cookie").find("__Host-sesame_session") < 0, "the session cookie is readable by script")
        owner.text_appears("#who", "owner@example.com")
        owner.text_appears("#page", "Nothing is published yet")
        owner.shot("02-overview-empty")
        # The invitation is single use.
        status, body = http(base + "/dashboard/api/register/options", "POST", {"invitation": owner_invite.split("#invite=")[1]})
        expect(status == 404 and body["error"]["code"] == "invitation_invalid", f"a used invitation: {status} {body}")
        step(2, "invite → a passkey registered with Chromium's virtual authenticator → signed in (HttpOnly, Secure, SameSite=Strict)")

        # Edit and publish a config for every version, its flags opened to the debug tier.
        owner.go("configs")
        editor = owner.find("#config-editor")
        editor.clear()
        editor.send_keys(json.dumps({"features": {"chat": True}, "api_keys": {"stripe": "sk_dash_1"}}))
        tiers = owner.find("#tiers-editor")
        tiers.clear()
        tiers.send_keys(json.dumps({"features": "debug"}))
        owner.click("#review-changes")
        owner.text_appears("#review", "+ features")
        owner.shot("03-config-review")
        owner.rerendering(lambda: owner.click("#publish"))
        owner.text_appears("#status", "Published revision 1")
        step(3, "the config editor shows the changes, then publishes revision 1 with a tier mark")

        # The device side: a debug token sees what its tier may, the rest withheld.
        status, created = http(base + "/v1/admin/debug-tokens", "POST", {"name": "dashboard-test", "ttl": "1h"}, {"Authorization": "Bearer " + key})
        expect(status == 200, f"debug token: {status} {created}")
        status, tokens = http(base + "/v1/auth/debug", "POST", {"debugToken": created["debugToken"], "teamId": TEAM, "bundleId": BUNDLE, "appVersion": "1.0"})
        expect(status == 200, f"debug exchange: {status} {tokens}")
        device = {"Authorization": "Bearer " + tokens["accessToken"]}

        def device_fetch():
            return http(base + "/v1/config?version=1.0", headers=device)

        def eventually(what, check, timeout=15):
            deadline = time.monotonic() + timeout
            while True:
                status, body = device_fetch()
                if check(status, body):
                    return body
                if time.monotonic() > deadline:
                    raise Failure(f"{what}: {status} {body}")
                time.sleep(0.2)

        served = eventually("the device gets revision 1", lambda s, b: s == 200 and b.get("revision") == 1)
        expect(served["config"] == {"features": {"chat": True}} and served.get("withheld") == ["api_keys"], f"served: {served}")
        step(4, "a device (debug tier) fetches the published config; the attested-only key is withheld")

        # A second revision, then a one-click rollback to the first.
        owner.go("configs")
        editor = owner.find("#config-editor")
        editor.clear()
        editor.send_keys(json.dumps({"features": {"chat": False}, "api_keys": {"stripe": "sk_dash_2"}}))
        owner.click("#review-changes")
        owner.text_appears("#review", "true → false")
        owner.rerendering(lambda: owner.click("#publish"))
        owner.text_appears("#status", "Published revision 2")
        eventually("the device gets revision 2", lambda s, b: s == 200 and b.get("revision") == 2 and b["config"]["features"]["chat"] is False)
        owner.rerendering(lambda: owner.confirming("button.rollback[data-revision='1']"))
        owner.text_appears("#status", "as revision 3")
        owner.shot("04-config-history")
        eventually("the device gets the rollback", lambda s, b: s == 200 and b.get("revision") == 3 and b["config"]["features"]["chat"] is True)
        owner.find("#resolve-version").send_keys("1.0")
        owner.click("#resolve")
        owner.text_appears("#resolve-answer", "revision 3")
        step(5, "a second revision reaches the device; rolled back in one click (revision 3); the resolver agrees")

        # A staged rollout from the editor: 0 % first (the device keeps revision 3), widened to
        # every install, then completed.
        owner.go("configs")
        editor = owner.find("#config-editor")
        editor.clear()
        editor.send_keys(json.dumps({"features": {"chat": True, "beta": True}, "api_keys": {"stripe": "sk_dash_4"}}))
        owner.click("#review-changes")
        owner.find("#rollout-percent").send_keys("0")
        owner.rerendering(lambda: owner.click("#publish"))
        owner.text_appears("#status", "to 0 % of installs")
        owner.text_appears("#rollout-summary", "Revision 4 reaches 0 % of installs; the others get revision 3")
        expect(not owner.driver.find_elements(By.CSS_SELECTOR, "#review-changes"), "publishing is offered during a rollout")
        eventually("the device stays outside the rollout", lambda s, b: s == 200 and b.get("revision") == 3
                   and b.get("rollout", {}).get("included") is False)
        owner.find("#widen-percent").send_keys("100")
        owner.rerendering(lambda: owner.click("#widen"))
        owner.text_appears("#rollout-summary", "Revision 4 reaches 100 % of installs")
        owner.shot("04b-rollout")
        eventually("the device is in the rollout", lambda s, b: s == 200 and b.get("revision") == 4
                   and b.get("rollout", {}).get("included") is True and b["config"]["features"]["beta"] is True)
        owner.rerendering(lambda: owner.confirming("#complete"))
        owner.text_appears("#status", "Completed")
        eventually("the rollout is over", lambda s, b: s == 200 and b.get("revision") == 4 and "rollout" not in b)
        step(6, "a staged rollout published from the editor at 0 %, widened to every install, completed; the device follows each step")

        # A test device pinned to revision 3 from the pattern's page, whatever is published (4).
        claims = tokens["accessToken"].split(".")[1]
        install = json.loads(base64.urlsafe_b64decode(claims + "=" * (-len(claims) % 4)))["sub"]
        owner.go("configs")
        owner.find("#override-label").send_keys("Dashboard test phone")
        owner.find("#override-install").send_keys(install)
        Select(owner.find("#override-revision")).select_by_value("3")
        owner.rerendering(lambda: owner.click("#pin"))
        owner.text_appears("#status", "now gets revision 3")
        owner.text_appears("#overrides", "Dashboard test phone")
        eventually("the pinned device gets revision 3", lambda s, b: s == 200 and b.get("revision") == 3 and b.get("deviceOverride") is True)
        owner.find("#resolve-version").send_keys("1.0")
        owner.find("#resolve-install").send_keys(install)
        owner.click("#resolve")
        owner.text_appears("#resolve-answer", "revision 3 (pinned for this test device)")
        owner.driver.execute_script("document.getElementById('overrides').scrollIntoView()")
        owner.shot("04c-test-device")
        owner.rerendering(lambda: owner.click("#overrides button.unpin"))
        owner.text_appears("#overrides", "No device is pinned")
        eventually("the unpinned device gets what is published", lambda s, b: s == 200 and b.get("revision") == 4 and "deviceOverride" not in b)
        step(7, "a test device pinned to revision 3 from the pattern's page gets it while 4 is published; the resolver names the pin; unpinned, it gets 4")

        # A schema attached to the app: the editor checks a draft against it before offering to publish.
        status, attached = http(base + "/v1/admin/config/schema", "PUT",
                                {"schema": {"properties": {"features": {"type": "object", "additionalProperties": {"type": "boolean"}}}}},
                                {"Authorization": "Bearer " + key})
        expect(status == 200, f"schema: {status} {attached}")
        owner.go("configs")
        editor = owner.find("#config-editor")
        editor.clear()
        editor.send_keys(json.dumps({"features": {"chat": "yes", "beta": True}, "api_keys": {"stripe": "sk_dash_5"}}))
        owner.click("#review-changes")
        owner.text_appears("#violations", "/features/chat")
        owner.text_appears("#violations", "must be a boolean, not a string")
        expect(not owner.driver.find_elements(By.CSS_SELECTOR, "#publish"), "publishing is offered for a config its schema refuses")
        expect("null" not in owner.find("#review").text, "the review shows a stray null")
        owner.driver.execute_script("document.getElementById('violations').scrollIntoView()")
        owner.shot("04d-schema-violations")
        editor.clear()
        editor.send_keys(json.dumps({"features": {"chat": False, "beta": True}, "api_keys": {"stripe": "sk_dash_5"}}))
        owner.click("#review-changes")
        owner.find("#publish")
        owner.rerendering(lambda: owner.click("#publish"))
        owner.text_appears("#status", "Published revision 5")
        status, _ = http(base + "/v1/admin/config/schema", "DELETE", None, {"Authorization": "Bearer " + key})
        expect(status == 200, f"detaching the schema: {status}")
        step(8, "with a schema attached, the editor lists a draft's violations by path and offers no publish; the fixed draft publishes (revision 5)")

        # The two-person rule: a publish from the editor is proposed; its proposer cannot approve it.
        status, current = http(base + "/v1/admin/policy", headers={"Authorization": "Bearer " + key})
        owner.go("policy")
        owner.click("#policy-approve-publish")
        owner.click("#save-policy")
        owner.text_appears("#status", "requireApproval")
        status, guarded = http(base + "/v1/admin/policy", headers={"Authorization": "Bearer " + key})
        expect(guarded["policy"].get("requireApproval") == ["publish"], f"the policy page saved {guarded}")
        owner.go("configs")
        editor = owner.find("#config-editor")
        editor.clear()
        editor.send_keys(json.dumps({"features": {"chat": True, "beta": True}, "api_keys": {"stripe": "sk_dash_6"}}))
        owner.click("#review-changes")
        owner.rerendering(lambda: owner.click("#publish"))
        owner.text_appears("#status", "proposed as change")
        owner.go("changes")
        owner.text_appears("#page", "publish '*'")
        change_id = owner.find("tr[data-change]").get_attribute("data-change")
        owner.click("tr[data-change] button.inspect")
        owner.text_appears("#change-detail", "sk_dash_6")
        owner.confirming("tr[data-change] button.approve")
        owner.text_appears("#status", "second person")
        status, approved = http(base + f"/v1/admin/changes/{change_id}/approve", "POST", {}, {"Authorization": "Bearer " + key})
        expect(status == 200 and "Published revision 6" in approved.get("message", ""), f"approval by the key: {status} {approved}")
        owner.go("changes")
        owner.text_appears("tr[data-change]", "applied")
        owner.shot("04e-approvals")
        status, _ = http(base + "/v1/admin/policy", "PUT", current["policy"], {"Authorization": "Bearer " + key})
        expect(status == 200, f"lifting the rule: {status}")
        step(9, "publishing guarded from the policy page; the editor's publish is proposed; its proposer cannot approve it on the Approvals page; another key does (revision 6)")

        # Kill switch, with confirmation.
        owner.go("safety")
        owner.find("#kill-versions").send_keys("1.*")
        owner.find("#kill-reason").send_keys("Please update from the App Store")
        owner.rerendering(lambda: owner.confirming("#kill"))
        owner.text_appears("#status", "Switched 1.* off")
        owner.shot("05-kill-switch")
        eventually("the device is switched off", lambda s, b: s == 403 and b["error"]["code"] == "version_disabled"
                   and b["error"]["message"] == "Please update from the App Store")
        owner.find("#revoke-pattern").send_keys("3.*")
        owner.rerendering(lambda: owner.confirming("#revoke"))
        owner.text_appears("#page", "3.*")
        step(10, "kill switch on 1.* (confirmed): the device at 1.0 is told the reason; an emergency revocation of 3.* is listed")

        # The other pages render with the app's data.
        for page, text in (("devices", "Attested devices"), ("keys", "dashboard-test"), ("audit", "config.rollback"), ("policy", "Security policy"),
                           ("people", "owner@example.com"), ("overview", "Recent activity")):
            owner.go(page)
            owner.text_appears("#page", text)
            owner.shot(f"06-{page}")
            if page == "audit":
                owner.text_appears("#audit-chain", "The audit log is intact")
                expect("config.read" in owner.find("#page").text, "reading a config in the editor is not in the audit log")
        owner.go("keys")
        owner.find("#key-name").send_keys("browser-ci")
        owner.rerendering(lambda: owner.click("#create-key"))
        owner.text_appears("#new-key", "sk_prod_")
        new_key = owner.find("#new-key code").text
        status, _ = http(base + "/v1/admin/config", headers={"Authorization": "Bearer " + new_key})
        expect(status == 200, f"the key the dashboard made: {status}")
        # Who made each key: the person, for the key made here.
        made = owner.driver.find_element(By.XPATH, "//tr[td[1][normalize-space()='browser-ci']]").text
        expect("owner@example.com" in made, f"the dashboard's key row does not name its maker: {made!r}")
        owner.shot("06-keys-created")
        # A backend key made on the same page: it redeems nothing here, but Sesame knows it, and the
        # management API refuses it.
        owner.find("#backend-key-name").send_keys("browser-backend")
        owner.rerendering(lambda: owner.click("#create-backend-key"))
        owner.text_appears("#new-backend-key", "bk_prod_")
        backend_key = owner.find("#new-backend-key code").text
        # Known to verification: past the key's check, the malformed key id is what is refused.
        status, refused = http(base + "/v1/verify/assertion", "POST", {"keyId": "AAAA", "clientData": "AA==", "assertion": "AA=="},
                               {"Authorization": "Bearer " + backend_key})
        expect(status == 400 and refused["error"]["code"] == "invalid_request", f"the backend key the dashboard made, at verify: {status} {refused}")
        status, _ = http(base + "/v1/admin/config", headers={"Authorization": "Bearer " + backend_key})
        expect(status == 401, f"the backend key managed: {status}")
        owner.text_appears("#page", "browser-backend")
        owner.shot("06-backend-keys-created")
        owner.go("debug-tokens")
        owner.find("#debug-token-name").send_keys("browser")
        owner.rerendering(lambda: owner.click("#create-debug-token"))
        owner.text_appears("#new-debug-token", "sesame_debug_")
        owner.go("pins")
        pin = base64.b64encode(bytes(range(32))).decode()
        owner.find("#pin-domain").send_keys("api.example.com")
        owner.find("#pin-key").send_keys(pin)
        owner.rerendering(lambda: owner.click("#add-pin"))
        owner.text_appears("#page", pin)
        signing_key = owner.find("#pin-signing-key").text
        status, registry = http(base + f"/v1/pins/{APP}.json")
        deadline = time.monotonic() + 15
        while not (status == 200 and any(k["key"] == pin for k in registry["payload"]["keys"])) and time.monotonic() < deadline:
            time.sleep(0.2)
            status, registry = http(base + f"/v1/pins/{APP}.json")
        expect(status == 200 and registry["payload"]["keys"][0]["domainName"] == "api.example.com" and signing_key, f"the pin registry: {status} {registry}")
        owner.shot("06-pins")
        # Attested relays: made on the page with a key that is never shown back, listed by header name.
        owner.go("relays")
        relay_secret = "sk-dashboard-relay-0123456789"
        owner.find("#relay-name").send_keys("llm")
        owner.find("#relay-upstream").send_keys("http://127.0.0.1:9/v1")
        owner.find("#relay-paths").send_keys("/chat/completions\n/models/*")
        owner.find("#relay-headers").send_keys("Authorization: Bearer " + relay_secret)
        owner.find("#relay-perInstallPerDay").send_keys("200")
        owner.rerendering(lambda: owner.click("#set-relay"))
        owner.text_appears("#status", "The relay llm is made")
        owner.text_appears("#page", "200/install/day")
        expect(relay_secret not in owner.driver.page_source, "the relays page shows an injected header's value")
        status, relays = http(base + "/v1/admin/relays", headers={"Authorization": "Bearer " + key})
        expect(status == 200 and relays["relays"][0]["headerNames"] == ["Authorization"] and relays["relays"][0]["paths"] == ["/chat/completions", "/models/*"],
               f"the relays page saved {relays}")
        owner.shot("06-relays")
        # The Apple page: a key Apple refuses is kept and shown as the error it is; checked again once
        # Apple accepts it; never shown back.
        owner.go("apple")
        owner.text_appears("#apple-not-set", "No key is set")
        device_check_key = new_device_check_key()
        owner.find("#apple-key-id").send_keys("DASHKEY001")
        owner.find("#apple-private-key").send_keys(device_check_key)
        owner.rerendering(lambda: owner.click("#set-apple-key"))
        owner.text_appears("#apple-verdict", "Apple refused the key (401)")
        expect("error" in owner.find("#status").get_attribute("class"), "a key Apple refuses is not shown as an error")
        owner.shot("06-apple-refused")
        apple.status = 400
        owner.rerendering(lambda: owner.click("#check-apple-key"))
        owner.text_appears("#apple-verdict", "Apple accepted the key")
        key_body = device_check_key.splitlines()[1]
        expect(key_body not in owner.driver.page_source, "the Apple page shows the private key")
        owner.shot("06-apple-accepted")
        # Bans: with the key accepted, the policy names the DeviceCheck bit that bans; the device
        # list says which installs sent no DeviceCheck token (those can be revoked, not banned).
        owner.go("policy")
        Select(owner.find("#policy-deviceBanBit")).select_by_value("1")
        owner.click("#save-policy")
        owner.text_appears("#status", "deviceBanBit")
        status, banning = http(base + "/v1/admin/policy", headers={"Authorization": "Bearer " + key})
        expect(banning["policy"].get("deviceBanBit") == 1, f"the policy page saved {banning}")
        # An install that attested without a DeviceCheck token, recorded as auth records one (no App
        # Attest device takes part in this test): listed as one that cannot be banned.
        with open(arguments.database_url_file) as file:
            database_url = file.read().strip()
        psql(database_url,
             "INSERT INTO attested_keys (key_id, app_id, public_key, receipt, counter, environment) "
             f"SELECT decode(repeat('ab', 32), 'hex'), app_id, '\\x00'::bytea, '\\x00'::bytea, 0, 'production' FROM apps WHERE bundle_id = '{BUNDLE}'")
        owner.go("devices")
        owner.text_appears("#page", "no DeviceCheck token")
        owner.shot("06-devices-bans")
        # The attestation ramp: made automatic on the policy page, then shown on the devices page with
        # the last day's counts as auth writes them (an hour of them put in as auth would).
        status, before = http(base + "/v1/admin/policy", headers={"Authorization": "Bearer " + key})
        owner.go("policy")
        owner.find("#policy-attestationRamp").send_keys("1")
        if not owner.find("#policy-admitUnattested").is_selected():
            owner.click("#policy-admitUnattested")
        owner.click("#policy-attestationRampAutomatic")
        owner.click("#save-policy")
        owner.text_appears("#status", "attestationRampAutomatic")
        psql(database_url,
             "INSERT INTO attestation_outcomes (app_id, hour, attested, refused, device_failed, rate_limited, unsupported, outside_ramp) "
             f"SELECT app_id, date_trunc('hour', now()), 96, 2, 1, 1, 3, 40 FROM apps WHERE bundle_id = '{BUNDLE}'")
        owner.go("devices")
        owner.text_appears("#attestation-ramp", "1 % of new installs attest (automatic")
        owner.text_appears("#attestation-success", "96 % succeeded (96 attested, 2 refused, 1 failed on the device, 1 rate-limited")
        owner.shot("06-devices-attestation")
        status, _ = http(base + "/v1/admin/policy", "PUT", before["policy"], headers={"Authorization": "Bearer " + key})
        expect(status == 200, f"the policy put back: {status}")
        owner.go("policy")
        Select(owner.find("#policy-deviceBanBit")).select_by_value("none")
        owner.click("#save-policy")
        owner.text_appears("#status", "deviceBanBit")
        owner.go("overview")
        owner.text_appears("#page", "Emergency revocations")
        step(11, "devices, keys, debug tokens, pins, Apple (a refused key shown as an error, accepted once checked; then the ban bit set and cleared on the policy page), audit log (its chain intact, config reads in it), policy, people and overview pages show the app; a key made there works, a backend key made there is known to verification and refused by management, a pin is served")

        # A change without the CSRF token, and one from another origin, are refused.
        forged = owner.fetch("POST", "/v1/admin/kill-switch", {"versions": ["2.0"], "enabled": False, "reason": "forged"}, csrf=False)
        expect(forged["status"] == 403 and forged["body"]["error"]["code"] == "csrf_refused", f"no CSRF token: {forged}")
        session_cookie = owner.driver.get_cookie("__Host-sesame_session")["value"]
        status, body = http(base + "/v1/admin/kill-switch", "POST", {"versions": ["2.0"], "enabled": False, "reason": "forged"},
                            {"Cookie": "__Host-sesame_session=" + session_cookie, "X-Sesame-App": APP, "Origin": "https://evil.example",
                             "X-CSRF-Token": owner.fetch("GET", "/dashboard/api/session")["body"]["csrfToken"]})
        expect(status == 403 and body["error"]["code"] == "csrf_refused", f"another origin: {status} {body}")
        step(12, "a change without the CSRF token, or from another origin, is refused (403 csrf_refused)")

        # A viewer reads but cannot publish.
        viewer_invite = run(arguments.runner, "accounts", "invite", "--app", APP, "--email", "viewer@example.com", "--role", "viewer")
        viewer = Browser(base, screenshots)
        viewer.open(viewer_invite[len(base):])
        viewer.click("#register")
        viewer.find("#nav-configs")
        viewer.text_appears("#role", "viewer")
        viewer.go("configs")
        viewer.text_appears("#page", "Viewers cannot publish")
        expect(not viewer.driver.find_elements(By.CSS_SELECTOR, "#review-changes"), "a viewer is offered publishing")
        refused = viewer.fetch("POST", "/v1/admin/config/upload", {"version": "*", "config": {"hacked": True}})
        expect(refused["status"] == 403 and refused["body"]["error"]["code"] == "role_too_low", f"viewer publish: {refused}")
        viewer.shot("07-viewer-configs")
        step(13, "a viewer sees the configs but cannot publish (403 role_too_low)")

        # An account of another app sees nothing of this one.
        run(arguments.runner, "keys", "create", "--team-id", TEAM, "--bundle-id", OTHER_BUNDLE)
        stranger_invite = run(arguments.runner, "accounts", "invite", "--app", f"{TEAM}.{OTHER_BUNDLE}", "--email", "stranger@example.com")
        stranger = Browser(base, screenshots)
        stranger.open(stranger_invite[len(base):])
        stranger.click("#register")
        stranger.find("#nav-overview")
        for path in ("/v1/admin/config", "/v1/admin/audit", "/v1/admin/devices"):
            seen = stranger.fetch("GET", path)
            expect(seen["status"] == 404 and seen["body"]["error"]["code"] == "app_not_found", f"another app's account, {path}: {seen}")
        step(14, "an account of another app gets 404 for every resource of this app")

        # An owner of another app invites this app's owner by email and keeps the link: it cannot
        # register a new passkey into the existing account, nor be accepted by another account.
        other_app = f"{TEAM}.{OTHER_BUNDLE}"
        invited = stranger.fetch("POST", "/v1/admin/accounts/invite", {"email": "owner@example.com", "role": "viewer"}, app=other_app)
        expect(invited["status"] == 200, f"the stranger's invitation: {invited}")
        token = invited["body"]["inviteURL"].split("#invite=")[1]
        status, body = http(base + "/dashboard/api/invitation", "POST", {"token": token})
        expect(status == 200 and body["accountExists"] is True, f"the invitation for an existing account: {status} {body}")
        status, body = http(base + "/dashboard/api/register/options", "POST", {"invitation": token})
        expect(status == 409 and body["error"]["code"] == "account_exists", f"a new passkey for an existing account: {status} {body}")
        taken = stranger.fetch("POST", "/dashboard/api/invitation/accept", {"invitation": token})
        expect(taken["status"] == 403 and taken["body"]["error"]["code"] == "invitation_for_another_account", f"accepted as another account: {taken}")
        owner.open(invited["body"]["inviteURL"][len(base):])
        owner.text_appears("h1", "Join " + other_app)
        owner.shot("09-invitation-existing-account")
        owner.rerendering(lambda: owner.click("#accept"))
        owner.find("#nav-overview")
        # Signing in again ended the session the browser held before.
        status, _ = http(base + "/v1/admin/config", headers={"Cookie": "__Host-sesame_session=" + session_cookie, "X-Sesame-App": APP})
        expect(status == 401, f"the browser's previous session after signing in again: {status}")
        session_cookie = owner.driver.get_cookie("__Host-sesame_session")["value"]
        apps = sorted(a["appId"] for a in owner.fetch("GET", "/dashboard/api/session")["body"]["apps"])
        expect(apps == sorted([APP, other_app]), f"the owner's apps after accepting: {apps}")
        step(15, "an invitation for an existing account is refused a new passkey and another account; its owner accepts by signing in")

        # Login CSRF: the ceremonies take JSON from the dashboard's origin only; the session is never cached.
        status, body = http(base + "/dashboard/api/signin/options", "POST", {}, {"Origin": "https://evil.example"})
        expect(status == 403 and body["error"]["code"] == "origin_refused", f"a ceremony from another origin: {status} {body}")
        plain = urllib.request.Request(base + "/dashboard/api/signin", data=b"challenge=x", method="POST", headers={"Content-Type": "text/plain"})
        try:
            urllib.request.urlopen(plain, timeout=30)
            raise Failure("a text/plain sign-in was accepted")
        except urllib.error.HTTPError as error:
            expect(error.code == 415, f"a text/plain sign-in: {error.code}")
        cache = owner.driver.execute_async_script(
            "const done = arguments[0]; fetch('/dashboard/api/session').then((r) => done(r.headers.get('Cache-Control')));")
        expect(cache == "no-store", f"the session answer's Cache-Control: {cache}")
        step(16, "sign-in from another origin is 403, a form-encodable body 415; the session answer is no-store")

        # People: an owner changes a role, looks at a person's passkeys and removes them; their session ends at once.
        owner.go("people")
        owner.text_appears("#page", "Your passkeys")
        owner.shot("10-people")
        owner.rerendering(lambda: Select(owner.find("select.member-role[data-email='viewer@example.com']")).select_by_value("editor"))
        owner.text_appears("#status", "viewer@example.com is now editor")
        owner.click("button.show-passkeys[data-email='viewer@example.com']")
        owner.text_appears("#person-detail", "Passkeys of viewer@example.com")
        owner.shot("11-person-passkeys")
        owner.rerendering(lambda: owner.confirming("button.remove-member[data-email='viewer@example.com']"))
        owner.text_appears("#status", "viewer@example.com was removed")
        gone = viewer.fetch("GET", "/v1/admin/config")
        expect(gone["status"] == 401, f"a removed person's session: {gone}")
        refused = owner.fetch("DELETE", "/v1/admin/accounts/owner%40example.com")
        expect(refused["status"] == 409 and refused["body"]["error"]["code"] == "last_owner", f"removing the last owner: {refused}")
        step(17, "people: a role changed, a person's passkeys shown, the person removed (their session ends); the last owner stays")

        # Open invitations: an owner sees the one they sent and cancels it; its link stops opening.
        pending = owner.fetch("POST", "/v1/admin/accounts/invite", {"email": "later@example.com", "role": "viewer"})
        expect(pending["status"] == 200, f"an invitation to cancel: {pending}")
        owner.go("people")
        owner.text_appears("#invitations", "later@example.com")
        owner.shot("11b-invitations")
        owner.rerendering(lambda: owner.confirming("button.cancel-invitation[data-email='later@example.com']"))
        owner.text_appears("#status", "The invitation of later@example.com is cancelled")
        owner.text_appears("#invitations", "No invitation is waiting")
        closed = http(base + "/dashboard/api/register/options", "POST", {"invitation": pending["body"]["inviteURL"].split("#invite=")[1]})
        expect(closed[0] in (404, 410), f"a cancelled invitation's link: {closed[0]} {closed[1]}")
        step("17b", "people: an open invitation listed for the owner and cancelled; its link no longer opens")

        # Sign out, then in again with the same passkey; sign out everywhere ends every session.
        owner.click("#sign-out")
        owner.find("#sign-in")
        owner.shot("08-sign-in")
        status, _ = http(base + "/v1/admin/config", headers={"Cookie": "__Host-sesame_session=" + session_cookie, "X-Sesame-App": APP})
        expect(status == 401, f"the old session after sign-out: {status}")
        owner.click("#sign-in")
        owner.find("#nav-overview")
        second_session = owner.driver.get_cookie("__Host-sesame_session")["value"]
        owner.click("#sign-out-everywhere")
        owner.find("#sign-in")
        status, _ = http(base + "/v1/admin/config", headers={"Cookie": "__Host-sesame_session=" + second_session, "X-Sesame-App": APP})
        expect(status == 401, f"a session after signing out everywhere: {status}")
        step(18, "sign out; sign in again with the passkey; sign out everywhere ends the session")
    finally:
        for browser in (owner, viewer, stranger):
            if browser:
                browser.quit()
    print(f"dashboard: every step passed; screenshots in {screenshots}")


if __name__ == "__main__":
    try:
        main()
    except Failure as failure:
        print(f"dashboard FAILED: {failure}", file=sys.stderr)
        sys.exit(1)
