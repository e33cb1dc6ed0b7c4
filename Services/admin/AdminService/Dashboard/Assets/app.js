"use strict";
// The Sesame dashboard: a small app on the management API (/v1/admin/…) and the passkey
// ceremonies (/dashboard/api/…). It holds no secret: the session is an HttpOnly cookie, and every
// change carries the session's CSRF token.

const state = { session: null, app: null, role: null, flash: null, renders: 0, generation: 0, inFlight: 0 };

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "text") node.textContent = value;
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function toBase64url(buffer) {
  let text = "";
  for (const byte of new Uint8Array(buffer)) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64url(text) {
  const base64 = text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4);
  return Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
}

class APIError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

async function request(url, method, body, appScoped) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (appScoped && state.app) headers["X-Sesame-App"] = state.app;
  if (method !== "GET" && state.session) headers["X-CSRF-Token"] = state.session.csrfToken;
  const response = await fetch(url, { method, headers, credentials: "same-origin", body: body === undefined ? undefined : JSON.stringify(body) });
  const json = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = json.error || {};
    throw new APIError(error.code || String(response.status), error.message || "Sesame answered " + response.status);
  }
  return json;
}

const api = (method, path, body) => request("/v1/admin/" + path, method, body, true);
const dashboard = (method, path, body) => request("/dashboard/api/" + path, method, body, false);

// Shows `message` now and keeps it through the re-render that usually follows a change.
function say(message, kind = "info") {
  state.flash = { message, kind };
  showFlash();
}

function showFlash() {
  const status = document.getElementById("status");
  if (!status || !state.flash) return;
  status.textContent = state.flash.message;
  status.className = "status " + state.flash.kind;
}

function failed(error) {
  if (error.code === "session_expired") return render();
  say(error.message, "error");
}

const canEdit = () => state.role === "editor" || state.role === "owner";
const isOwner = () => state.role === "owner";
const table = (headers, rows) =>
  el("table", {}, el("thead", {}, el("tr", {}, headers.map((h) => el("th", { text: h })))), el("tbody", {}, rows));
const when = (iso) => (iso ? new Date(iso).toLocaleString() : "–");
const pretty = (value) => JSON.stringify(value, null, 2);

// MARK: Signing in

// The passkey sign-in ceremony; the session cookie is set when it succeeds.
async function passkeySignIn() {
  const options = await dashboard("POST", "signin/options", {});
  const credential = await navigator.credentials.get({
    publicKey: { challenge: fromBase64url(options.challenge), rpId: options.rpId, userVerification: options.userVerification, timeout: options.timeout },
  });
  await dashboard("POST", "signin", {
    challenge: options.challenge,
    credentialId: toBase64url(credential.rawId),
    authenticatorData: toBase64url(credential.response.authenticatorData),
    clientDataJSON: toBase64url(credential.response.clientDataJSON),
    signature: toBase64url(credential.response.signature),
  });
}

async function signIn() {
  try {
    await passkeySignIn();
    await show("overview");
  } catch (error) {
    failed(error);
  }
}

// An invitation for someone who has an account already: they sign in with their own passkey,
// then the invitation is accepted for that account (a new passkey never joins an existing one).
async function acceptAsAccount(invitation) {
  try {
    await passkeySignIn();
    state.session = await dashboard("GET", "session");
    await dashboard("POST", "invitation/accept", { invitation });
    await show("overview");
  } catch (error) {
    failed(error);
  }
}

async function register(invitation) {
  try {
    const options = await dashboard("POST", "register/options", { invitation });
    const credential = await navigator.credentials.create({
      publicKey: {
        challenge: fromBase64url(options.challenge),
        rp: options.rp,
        user: { id: fromBase64url(options.user.id), name: options.user.name, displayName: options.user.displayName },
        pubKeyCredParams: options.pubKeyCredParams,
        authenticatorSelection: options.authenticatorSelection,
        attestation: options.attestation,
        timeout: options.timeout,
      },
    });
    await dashboard("POST", "register", {
      invitation,
      challenge: options.challenge,
      attestationObject: toBase64url(credential.response.attestationObject),
      clientDataJSON: toBase64url(credential.response.clientDataJSON),
    });
    await show("overview");
  } catch (error) {
    failed(error);
  }
}

function signInPage() {
  return el("section", { class: "card narrow" },
    el("h1", { text: "Sign in to Sesame" }),
    el("p", { class: "muted", text: "Use the passkey you registered from your invitation." }),
    el("button", { id: "sign-in", class: "primary", onclick: signIn, text: "Sign in with a passkey" }));
}

async function invitationPage(token) {
  try {
    // The token goes in a body, never in a URL: URLs end up in access logs.
    const invitation = await dashboard("POST", "invitation", { token });
    const invited = el("p", {}, "You are invited as ", el("strong", { text: invitation.role }), " (" + invitation.email + ").");
    if (invitation.accountExists) {
      return el("section", { class: "card narrow" },
        el("h1", { text: "Join " + invitation.appId }), invited,
        el("p", { class: "muted", text: "You already have a Sesame account: sign in with your passkey to accept." }),
        el("button", { id: "accept", class: "primary", onclick: () => acceptAsAccount(token), text: "Sign in and accept" }));
    }
    return el("section", { class: "card narrow" },
      el("h1", { text: "Join " + invitation.appId }), invited,
      el("p", { class: "muted", text: "Create a passkey on this device: it is how you sign in from now on. There is no password." }),
      el("button", { id: "register", class: "primary", onclick: () => register(token), text: "Create your passkey" }));
  } catch (error) {
    return el("section", { class: "card narrow" }, el("h1", { text: "This invitation cannot be used" }), el("p", { text: error.message }));
  }
}

// MARK: Pages

const pages = {
  overview: { title: "Overview", render: overviewPage },
  configs: { title: "Configs", render: configsPage },
  safety: { title: "Kill switch & revoke", render: safetyPage },
  devices: { title: "Devices", render: devicesPage },
  keys: { title: "Keys", render: keysPage },
  "debug-tokens": { title: "Debug tokens", render: debugTokensPage },
  pins: { title: "Pins", render: pinsPage },
  relays: { title: "Relays", render: relaysPage },
  apple: { title: "Apple", render: applePage },
  changes: { title: "Approvals", render: changesPage },
  audit: { title: "Audit log", render: auditPage },
  policy: { title: "Policy", render: policyPage },
  people: { title: "People", render: peoplePage },
};

async function overviewPage() {
  const [manifest, killed, revoked, audit] = await Promise.all([
    api("GET", "config"), api("GET", "kill-switch"), api("GET", "emergency-revoke"), api("GET", "audit?limit=10&newest=true")]);
  return el("div", { class: "grid" },
    el("section", { class: "card" }, el("h2", { text: "Published patterns" }),
      manifest.patterns.length === 0
        ? el("p", { class: "muted", text: "Nothing is published yet: open Configs to publish a first config." })
        : table(["Pattern", "Revision", "Bytes", "Zero-knowledge", "Updated"], manifest.patterns.map((p) =>
            el("tr", {}, el("td", {}, el("code", { text: p.pattern })), el("td", { text: p.revision }), el("td", { text: p.sizeBytes }),
              el("td", { text: p.zeroKnowledge ? "yes" : "no" }), el("td", { text: when(p.updatedAt) }))))),
    el("section", { class: "card" }, el("h2", { text: "Switched-off versions" }),
      killed.killed.length === 0
        ? el("p", { class: "muted", text: "Every version is served." })
        : table(["Version", "Reason", "Since"], killed.killed.map((k) =>
            el("tr", {}, el("td", {}, el("code", { text: k.version })), el("td", { text: k.reason }), el("td", { text: when(k.createdAt) }))))),
    el("section", { class: "card" }, el("h2", { text: "Emergency revocations" }), revocationTable(revoked.revocations)),
    el("section", { class: "card wide" }, el("h2", { text: "Recent activity" }), auditTable(audit.entries.slice(-10).reverse())));
}

function revocationTable(revocations) {
  if (revocations.length === 0) return el("p", { class: "muted", text: "No token has been revoked." });
  return table(["Versions", "Tokens issued before", "Refresh window"], revocations.map((r) =>
    el("tr", {}, el("td", {}, el("code", { text: r.versionPattern })), el("td", { text: when(r.issuedBefore) }), el("td", { text: r.forceRefreshTTL + " s" }))));
}

function auditTable(entries) {
  return table(["When", "Who", "What", "Pattern", "Revision"], entries.map((e) =>
    el("tr", {}, el("td", { text: when(e.at) }), el("td", { text: e.actor }), el("td", {}, el("code", { text: e.action })),
      el("td", { text: e.pattern || "–" }), el("td", { text: e.revision || "–" }))));
}

function changesOf(before, after, path = []) {
  const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
  if (isObject(before) && isObject(after)) {
    return [...new Set([...Object.keys(before), ...Object.keys(after)])].sort().flatMap((key) => {
      if (!(key in after)) return [{ kind: "removed", path: [...path, key], from: before[key] }];
      if (!(key in before)) return [{ kind: "added", path: [...path, key], to: after[key] }];
      return changesOf(before[key], after[key], [...path, key]);
    });
  }
  return JSON.stringify(before) === JSON.stringify(after) ? [] : [{ kind: "changed", path, from: before, to: after }];
}

function changeList(changes) {
  if (changes.length === 0) return el("p", { class: "muted", text: "No change." });
  const mark = { added: "+", removed: "−", changed: "~" };
  return el("ul", { class: "diff" }, changes.map((c) =>
    el("li", { class: c.kind }, mark[c.kind] + " ", el("code", { text: c.path.join(".") || "(whole config)" }),
      c.kind === "added" ? ": " + JSON.stringify(c.to) : c.kind === "removed" ? ": " + JSON.stringify(c.from) : ": " + JSON.stringify(c.from) + " → " + JSON.stringify(c.to))));
}

async function configsPage() {
  const manifest = await api("GET", "config");
  const patterns = manifest.patterns.map((p) => p.pattern);
  const selected = new URLSearchParams(location.hash.split("?")[1] || "").get("pattern") || patterns[0] || "*";
  let published = null;
  try {
    published = await api("GET", "config/body?version=" + encodeURIComponent(selected));
  } catch (error) {
    if (error.code !== "pattern_not_found") throw error;
  }
  const history = published ? await api("GET", "config/history?version=" + encodeURIComponent(selected)) : { revisions: [] };
  const [rollouts, overrides] = await Promise.all([
    api("GET", "config/rollouts?version=" + encodeURIComponent(selected)).then((r) => r.rollouts),
    api("GET", "config/overrides").then((r) => r.overrides.filter((o) => o.pattern === selected))]);
  const rolling = rollouts.find((r) => r.state === "active" || r.state === "paused");
  const editor = el("textarea", { id: "config-editor", class: "code", spellcheck: "false", rows: 18 });
  editor.value = published ? pretty(published.config) : "{\n  \n}";
  const tiers = el("textarea", { id: "tiers-editor", class: "code", spellcheck: "false", rows: 3 });
  tiers.value = published && published.tiers ? pretty(published.tiers) : "{}";
  const review = el("div", { id: "review" });
  const rolloutPercent = el("input", { id: "rollout-percent", type: "number", min: "0", max: "99.99", step: "0.01", placeholder: "every install" });
  const newPattern = el("input", { id: "new-pattern", placeholder: "2.1.*" });

  function draft() {
    let config, tierMarks;
    try { config = JSON.parse(editor.value); } catch (e) { throw new APIError("invalid_json", "The config is not valid JSON: " + e.message); }
    if (config === null || typeof config !== "object" || Array.isArray(config)) throw new APIError("invalid_json", "The config must be a JSON object.");
    try { tierMarks = JSON.parse(tiers.value || "{}"); } catch (e) { throw new APIError("invalid_json", "The tiers are not valid JSON: " + e.message); }
    return { config, tierMarks };
  }

  async function showReview() {
    try {
      const { config } = draft();
      const changes = changesOf(published ? published.config : {}, config);
      // The schemas attached to the app and this pattern, checked before anything is published.
      const verdict = await api("POST", "config/validate", { version: selected, config });
      const violations = verdict.valid ? null : el("div", { id: "violations", class: "error" },
        el("p", { text: "The config does not match its schema; fix it before publishing:" }),
        el("ul", {}, verdict.violations.map((v) => el("li", {}, el("code", { text: v.path || "(the config)" }), " " + v.message + " (" + v.keyword + ", schema of the " + v.schema + ")"))));
      // replaceChildren, unlike el, would show a null as the text "null".
      review.replaceChildren(...[el("h3", { text: published ? "Changes against revision " + published.revision : "A new pattern" }), changeList(changes),
        violations,
        verdict.valid ? el("label", { for: "rollout-percent", text: "Staged rollout: the percentage of installs that get it first (leave empty for every install)" }) : null,
        verdict.valid ? rolloutPercent : null,
        verdict.valid ? el("button", { id: "publish", class: "primary", onclick: publish, text: "Publish to " + selected }) : null].filter(Boolean));
    } catch (error) {
      failed(error);
    }
  }

  async function publish() {
    try {
      const { config, tierMarks } = draft();
      const share = rolloutPercent.value.trim();
      const reply = await api("POST", "config/upload", {
        version: selected, config, tiers: Object.keys(tierMarks).length ? tierMarks : undefined, rollout: share === "" ? undefined : Number(share) });
      say(reply.message, "ok");
      await show("configs?pattern=" + encodeURIComponent(selected));
    } catch (error) {
      failed(error);
    }
  }

  async function rollback(revision) {
    if (!confirm("Publish the config of revision " + revision + " of " + selected + " again, as a new revision?")) return;
    try {
      say((await api("POST", "config/rollback", { version: selected, revision })).message, "ok");
      await show("configs?pattern=" + encodeURIComponent(selected));
    } catch (error) {
      failed(error);
    }
  }

  const widenPercent = el("input", { id: "widen-percent", type: "number", min: "0", max: "100", step: "0.01", placeholder: "25" });
  async function steer(action, question) {
    if (question && !confirm(question)) return;
    try {
      const body = { version: selected, action };
      if (action === "widen") body.percent = Number(widenPercent.value);
      say((await api("POST", "config/rollout", body)).message, "ok");
      await show("configs?pattern=" + encodeURIComponent(selected));
    } catch (error) {
      failed(error);
    }
  }
  function rolloutCard() {
    if (!rolling) return null;
    const rest = rolling.previousRevision ? "revision " + rolling.previousRevision : "the next pattern that matches";
    return el("div", { id: "rollout", class: "notice" },
      el("h3", {}, "Staged rollout ", el("span", { class: "badge", text: rolling.state })),
      el("p", { id: "rollout-summary", text: "Revision " + rolling.revision + " reaches " + rolling.percent + " % of installs" +
        (rolling.state === "paused" ? " once resumed; while paused every install gets " + rest + "." : "; the others get " + rest + ".") }),
      rolling.installs ? el("p", { id: "rollout-installs", text: "Installs counted so far (delivery reports every half minute): about " +
        rolling.installs.included + " got revision " + rolling.revision + ", " + rolling.installs.excluded + " got " + rest + "." }) : null,
      el("p", { class: "muted", text: "Publishing, rolling back or deleting this pattern waits until the rollout is completed or rolled back." }),
      canEdit() ? el("div", { class: "row" },
        widenPercent, el("button", { id: "widen", onclick: () => steer("widen"), text: "Widen" }),
        rolling.state === "paused"
          ? el("button", { id: "resume", onclick: () => steer("resume"), text: "Resume" })
          : el("button", { id: "pause", onclick: () => steer("pause"), text: "Pause" }),
        el("button", { id: "complete", onclick: () => steer("complete", "Give revision " + rolling.revision + " to every install?"), text: "Complete" }),
        el("button", { id: "rollout-rollback", onclick: () => steer("rollback", "Give every install " + rest + " again?"), text: "Roll back" })) : null);
  }

  // Test devices: one install (a device's key id) pinned to a revision of this pattern.
  const overrideInstall = el("input", { id: "override-install", placeholder: "key id, from Devices" });
  const overrideLabel = el("input", { id: "override-label", placeholder: "Ana's iPhone" });
  const overrideRevision = el("select", { id: "override-revision" }, history.revisions.filter((r) => r.action !== "delete").map((r) =>
    el("option", { value: r.revision, text: "revision " + r.revision + (published && r.revision === published.revision ? " (published)" : "") })));
  async function pin() {
    try {
      say((await api("POST", "config/overrides", {
        version: selected, install: overrideInstall.value.trim(), revision: Number(overrideRevision.value), label: overrideLabel.value })).message, "ok");
      await show("configs?pattern=" + encodeURIComponent(selected));
    } catch (error) {
      failed(error);
    }
  }
  async function unpin(install) {
    try {
      say((await api("DELETE", "config/overrides?version=" + encodeURIComponent(selected) + "&install=" + encodeURIComponent(install))).message, "ok");
      await show("configs?pattern=" + encodeURIComponent(selected));
    } catch (error) {
      failed(error);
    }
  }
  function overridesCard() {
    if (!published && overrides.length === 0) return null;
    return el("div", { id: "overrides" },
      el("h2", { text: "Test devices" }),
      el("p", { class: "muted", text: "A pinned device gets its revision of " + selected + ", whatever is published or rolling out here; kill switches and revocations still apply." }),
      overrides.length === 0 ? el("p", { class: "muted", text: "No device is pinned to a revision of this pattern." }) :
        table(["Device", "Key id", "Revision", "Since", ""], overrides.map((o) =>
          el("tr", {}, el("td", { text: o.label }), el("td", {}, el("code", { class: "id", text: o.install })), el("td", { text: o.revision }),
            el("td", { text: when(o.createdAt) }),
            el("td", {}, canEdit() ? el("button", { class: "unpin small", onclick: () => unpin(o.install), text: "Unpin" }) : null)))),
      canEdit() && published ? el("div", { class: "row" }, overrideLabel, overrideInstall, overrideRevision,
        el("button", { id: "pin", onclick: pin, text: "Pin this device" })) : null);
  }

  const resolverInput = el("input", { id: "resolve-version", placeholder: "2.1.3" });
  const resolverInstall = el("input", { id: "resolve-install", placeholder: "key id (optional)" });
  const resolverAnswer = el("p", { id: "resolve-answer", class: "muted" });
  const because = { deviceOverride: " (pinned for this test device)" };
  async function resolve() {
    try {
      const install = resolverInstall.value.trim();
      const r = await api("GET", "config/resolve?version=" + encodeURIComponent(resolverInput.value.trim()) + (install ? "&install=" + encodeURIComponent(install) : ""));
      resolverAnswer.textContent = r.outcome === "serve"
        ? r.requestedVersion + " gets pattern " + r.matchedPattern + ", revision " + r.revision + (because[r.decidedBy] || "") +
          (r.rollout ? (r.rollout.included ? " (inside" : " (outside") + " the staged rollout at " + r.rollout.percent + " %)" : "") + "."
        : r.outcome === "disabled" ? r.requestedVersion + " is switched off: “" + r.reason + "”." : r.requestedVersion + " is revoked.";
    } catch (error) {
      resolverAnswer.textContent = error.message;
    }
  }

  return el("div", { class: "grid" },
    el("section", { class: "card side" }, el("h2", { text: "Patterns" }),
      el("ul", { class: "patterns" }, patterns.map((p) =>
        el("li", {}, el("a", { href: "#/configs?pattern=" + encodeURIComponent(p), class: p === selected ? "active" : null, text: p })))),
      canEdit() ? el("div", { class: "row" }, newPattern,
        el("button", { id: "add-pattern", onclick: () => show("configs?pattern=" + encodeURIComponent(newPattern.value.trim() || "*")), text: "Edit" })) : null,
      el("h2", { text: "Which config does a version get?" }),
      el("div", { class: "row" }, resolverInput, resolverInstall, el("button", { id: "resolve", onclick: resolve, text: "Resolve" })), resolverAnswer),
    el("section", { class: "card main" },
      el("h2", {}, "Pattern ", el("code", { text: selected }), published ? el("span", { class: "badge", text: "revision " + published.revision }) : el("span", { class: "badge", text: "not published" })),
      published && published.zeroKnowledge ? el("p", { class: "notice", text: "Zero-knowledge: Sesame stores ciphertext; edit it with 'sesame encrypt'." }) : null,
      rolloutCard(),
      el("label", { for: "config-editor", text: "Config (JSON object)" }), editor,
      el("label", { for: "tiers-editor", text: "Keys opened to lower tiers, e.g. {\"features\": \"unattested\"} (others need attested)" }), tiers,
      !canEdit() ? el("p", { class: "muted", text: "Viewers cannot publish." })
        : rolling ? null : el("button", { id: "review-changes", onclick: showReview, text: "Review changes" }),
      review,
      el("h2", { text: "History" }),
      table(["Revision", "Action", "Bytes", "When", "By", ""], history.revisions.slice().reverse().map((r) =>
        el("tr", {}, el("td", { text: r.revision }), el("td", { text: r.action + (r.restoredFrom ? " of " + r.restoredFrom : "") }),
          el("td", { text: r.sizeBytes }), el("td", { text: when(r.createdAt) }), el("td", { text: r.createdBy || "–" }),
          el("td", {}, canEdit() && !rolling && r.action !== "delete" && published && r.revision !== published.revision
            ? el("button", { class: "rollback", "data-revision": r.revision, onclick: () => rollback(r.revision), text: "Roll back to this" }) : null)))),
      overridesCard()));
}

async function safetyPage() {
  const [killed, revoked] = await Promise.all([api("GET", "kill-switch"), api("GET", "emergency-revoke")]);
  const versions = el("input", { id: "kill-versions", placeholder: "2.1.3, 1.*" });
  const reason = el("input", { id: "kill-reason", placeholder: "What users read, e.g. Please update from the App Store" });
  const revokePattern = el("input", { id: "revoke-pattern", placeholder: "2.*" });
  const ttl = el("input", { id: "revoke-ttl", type: "number", value: "300", min: "0" });
  async function killSwitch() {
    const list = versions.value.split(",").map((v) => v.trim()).filter(Boolean);
    if (!confirm("Switch off " + list.join(", ") + "? Apps at these versions stop working and show your reason.")) return;
    try {
      say((await api("POST", "kill-switch", { versions: list, enabled: false, reason: reason.value })).message, "ok");
      await show("safety");
    } catch (error) {
      failed(error);
    }
  }
  async function switchOn(version) {
    try {
      say((await api("POST", "kill-switch", { versions: [version], enabled: true })).message, "ok");
      await show("safety");
    } catch (error) {
      failed(error);
    }
  }
  async function revoke() {
    if (!confirm("Revoke every token issued until now for " + revokePattern.value + "? Those apps must attest again.")) return;
    try {
      say((await api("POST", "emergency-revoke", { version: revokePattern.value.trim(), force_refresh_ttl: Number(ttl.value) })).message, "ok");
      await show("safety");
    } catch (error) {
      failed(error);
    }
  }
  return el("div", { class: "grid" },
    el("section", { class: "card" }, el("h2", { text: "Kill switch" }),
      el("p", { class: "muted", text: "Switched-off versions get an error carrying your reason; their saved config is purged on the device." }),
      el("label", { for: "kill-versions", text: "Versions or patterns" }), versions,
      el("label", { for: "kill-reason", text: "Reason shown to users" }), reason,
      canEdit() ? el("button", { id: "kill", class: "danger", onclick: killSwitch, text: "Switch off" }) : null,
      killed.killed.length ? table(["Version", "Reason", ""], killed.killed.map((k) =>
        el("tr", {}, el("td", {}, el("code", { text: k.version })), el("td", { text: k.reason }),
          el("td", {}, canEdit() ? el("button", { class: "switch-on", onclick: () => switchOn(k.version), text: "Switch back on" }) : null)))) : null),
    el("section", { class: "card" }, el("h2", { text: "Emergency revocation" }),
      el("p", { class: "muted", text: "Every token issued until now for versions under the pattern is refused; the apps attest again." }),
      el("label", { for: "revoke-pattern", text: "Version pattern" }), revokePattern,
      el("label", { for: "revoke-ttl", text: "Seconds apps may keep refreshing before it bites" }), ttl,
      canEdit() ? el("button", { id: "revoke", class: "danger", onclick: revoke, text: "Revoke" }) : null,
      revocationTable(revoked.revocations)));
}

// The attestation ramp and how attestations went (auth's counts, what SesameKit reported).
function attestationCard(status) {
  const percent = (value) => (Math.round(value * 10) / 10) + " %";
  const ramp = status.ramp;
  const rampText = (ramp.percent === undefined || ramp.percent === null ? "every install attests" : percent(ramp.percent) + " of new installs attest") +
    (ramp.automatic ? " (automatic" + (ramp.startedFrom !== undefined && ramp.startedFrom !== null ? ", from " + percent(ramp.startedFrom) : "") + ")" : "");
  const day = status.lastDay;
  const rate = (counts) => counts.successRate === undefined || counts.successRate === null ? "–" : percent(counts.successRate * 100);
  const meter = (counts) => counts.successRate === undefined || counts.successRate === null ? "" :
    el("meter", { min: "0", max: "1", low: "0.95", optimum: "1", value: String(counts.successRate), title: rate(counts) });
  return el("section", { class: "card wide", id: "attestation" }, el("h2", { text: "Attestation" }),
    el("p", { id: "attestation-ramp", text: "Ramp: " + rampText + "." }),
    ramp.widenedAt ? el("p", { class: "muted", text: "Started or last widened " + when(ramp.widenedAt) + "; due again a day later, while 95 % of a day's attempts succeed." }) : null,
    ramp.holdReason ? el("p", { class: "notice", id: "attestation-hold", text: "Held: " + ramp.holdReason }) : null,
    el("p", { id: "attestation-success", text: "Last day: " + rate(day) + " succeeded (" + day.attested + " attested, " + day.refused + " refused, " +
      day.deviceFailed + " failed on the device, " + day.rateLimited + " rate-limited by Apple); " + day.unsupported + " without App Attest, " +
      day.outsideRamp + " outside the ramp." }),
    status.hours.length === 0 ? el("p", { class: "muted", text: "No attestation in the last day." }) :
    table(["Hour", "Attested", "Refused", "Failed on device", "Rate limited", "Success", ""], status.hours.map((h) =>
      el("tr", {}, el("td", { text: when(h.hour) }), el("td", { text: h.counts.attested }), el("td", { text: h.counts.refused }),
        el("td", { text: h.counts.deviceFailed }), el("td", { text: h.counts.rateLimited }), el("td", { text: rate(h.counts) }), el("td", {}, meter(h.counts))))));
}

async function devicesPage() {
  const [page, attestation] = await Promise.all([api("GET", "devices?limit=200"), api("GET", "attestation")]);
  async function act(path, body, question) {
    const reason = prompt(question);
    if (!reason) return;
    try {
      say((await api("POST", path, Object.assign({ reason }, body))).message, "ok");
      await show("devices");
    } catch (error) {
      failed(error);
    }
  }
  const revoke = (keyId) => act("devices/revoke", { keyId }, "Why revoke this device? (kept in the audit log)");
  const ban = (keyId) => act("devices/revoke", { keyId, ban: true }, "Why ban this device? It stays out after a reinstall, until the ban is lifted. (kept in the audit log)");
  const unban = (keyId) => act("devices/unban", { keyId }, "Why lift this device's ban? (kept in the audit log)");
  const actions = (d) => isOwner() ? [
    !d.revokedAt ? el("button", { class: "danger small", onclick: () => revoke(d.keyId), text: "Revoke" }) : null,
    d.deviceCheck && !d.bannedAt ? el("button", { class: "danger small", onclick: () => ban(d.keyId), text: "Ban" }) : null,
    d.bannedAt ? el("button", { class: "small", onclick: () => unban(d.keyId), text: "Lift ban" }) : null,
  ] : null;
  return el("div", { class: "grid" }, attestationCard(attestation), el("section", { class: "card wide" }, el("h2", { text: "Attested devices" }),
    page.devices.length === 0 ? el("p", { class: "muted", text: "No device has attested yet." }) :
    table(["Key id", "Environment", "Version", "First seen", "Last seen", "Counter", "Risk", "Revoked", "Banned", ""], page.devices.map((d) =>
      el("tr", {}, el("td", {}, el("code", { class: "id", text: d.keyId })), el("td", { text: d.environment }), el("td", { text: d.appVersion || "–" }),
        el("td", { text: when(d.firstSeen) }), el("td", { text: when(d.lastSeen) }), el("td", { text: d.counter }),
        el("td", { text: d.riskMetric !== undefined && d.riskMetric !== null ? d.riskMetric + " keys (" + when(d.riskAt) + ")" : (d.receipt === "invalid" ? "receipt invalid" : "–") }),
        el("td", { text: d.revokedAt ? when(d.revokedAt) + " (" + d.revokedReason + ")" : "–" }),
        el("td", { text: d.bannedAt ? when(d.bannedAt) : (d.deviceCheck ? "–" : "– (no DeviceCheck token)") }),
        el("td", {}, actions(d)))))));
}

async function keysPage() {
  const [listing, backend] = await Promise.all([api("GET", "keys"), api("GET", "backend-keys")]);
  const name = el("input", { id: "key-name", placeholder: "ci" });
  const created = el("div", { id: "new-key" });
  async function create() {
    const dot = state.app.indexOf(".");
    try {
      const reply = await api("POST", "keys/create", { teamId: state.app.slice(0, dot), bundleId: state.app.slice(dot + 1), keyName: name.value });
      await show("keys");
      // Under the two-person rule the key waits for a second person: the message says so.
      const notice = reply.proposal ? reply.message : "Copy it now: Sesame keeps only its hash.";
      document.getElementById("new-key").replaceChildren(el("p", { class: "notice", text: notice }), el("code", { class: "secret", text: reply.key }));
    } catch (error) {
      failed(error);
    }
  }
  async function revoke(key) {
    if (!confirm("Revoke key " + key.name + " (" + key.hint + ")? Whatever uses it is refused from now on.")) return;
    try {
      say((await api("POST", "keys/revoke", { keyId: key.keyId })).message, "ok");
      await show("keys");
    } catch (error) {
      failed(error);
    }
  }
  return el("div", { class: "grid" },
    el("section", { class: "card wide" }, el("h2", { text: "Provisioning keys" }),
      el("p", { class: "muted", text: "For CI and the sesame CLI (SESAME_KEY). Sesame shows a key once, when it is created." }),
      isOwner() ? el("div", { class: "row" }, name, el("button", { id: "create-key", onclick: create, text: "Create key" })) : null, created,
      table(["Name", "Hint", "Created", "Made by", "Last used", "Revoked", ""], listing.keys.map((k) =>
        el("tr", {}, el("td", { text: k.name }), el("td", {}, el("code", { text: k.hint })), el("td", { text: when(k.createdAt) }),
          el("td", { text: k.createdBy || "–" }), el("td", { text: when(k.lastUsedAt) }), el("td", { text: when(k.revokedAt) }),
          el("td", {}, isOwner() && !k.revokedAt ? el("button", { class: "danger small", onclick: () => revoke(k), text: "Revoke" }) : null))))),
    backendKeysCard(backend.keys));
}

// Backend keys: what the app's own API presents to Sesame's /v1/verify/… (single-use tokens, assertions).
function backendKeysCard(keys) {
  const name = el("input", { id: "backend-key-name", placeholder: "payments-api" });
  const created = el("div", { id: "new-backend-key" });
  async function create() {
    try {
      const reply = await api("POST", "backend-keys", { name: name.value.trim() });
      await show("keys");
      document.getElementById("new-backend-key").replaceChildren(el("p", { class: "notice", text: reply.message }), el("code", { class: "secret", text: reply.backendKey }));
    } catch (error) {
      failed(error);
    }
  }
  async function revoke(key) {
    if (!confirm("Revoke backend key " + key.name + " (" + key.hint + ")? Your backend is refused from now on.")) return;
    try {
      say((await api("DELETE", "backend-keys/" + encodeURIComponent(key.keyId))).message, "ok");
      await show("keys");
    } catch (error) {
      failed(error);
    }
  }
  return el("section", { class: "card wide" }, el("h2", { text: "Backend keys" }),
    el("p", { class: "muted", text: "For your API's backend: it redeems single-use tokens and checks assertions with Sesame, and can do nothing else. Shown once." }),
    isOwner() ? el("div", { class: "row" }, name, el("button", { id: "create-backend-key", onclick: create, text: "Create backend key" })) : null, created,
    table(["Name", "Hint", "Created", "Last used", "Revoked", ""], keys.map((k) =>
      el("tr", {}, el("td", { text: k.name }), el("td", {}, el("code", { text: k.hint })), el("td", { text: when(k.createdAt) }),
        el("td", { text: when(k.lastUsedAt) }), el("td", { text: when(k.revokedAt) }),
        el("td", {}, isOwner() && !k.revokedAt ? el("button", { class: "danger small revoke-backend-key", onclick: () => revoke(k), text: "Revoke" }) : null)))));
}

async function debugTokensPage() {
  const listing = await api("GET", "debug-tokens");
  const name = el("input", { id: "debug-token-name", placeholder: "ci" });
  const ttl = el("input", { id: "debug-token-ttl", value: "7d" });
  const created = el("div", { id: "new-debug-token" });
  async function create() {
    try {
      const reply = await api("POST", "debug-tokens", { name: name.value.trim(), ttl: ttl.value.trim() });
      await show("debug-tokens");
      document.getElementById("new-debug-token").replaceChildren(el("p", { class: "notice", text: reply.message }), el("code", { class: "secret", text: reply.debugToken }));
    } catch (error) {
      failed(error);
    }
  }
  async function revoke(token) {
    if (!confirm("Revoke debug token " + token.name + "? It is exchanged no more.")) return;
    try {
      say((await api("DELETE", "debug-tokens/" + encodeURIComponent(token.tokenId))).message, "ok");
      await show("debug-tokens");
    } catch (error) {
      failed(error);
    }
  }
  return el("section", { class: "card wide" }, el("h2", { text: "Debug tokens" }),
    el("p", { class: "muted", text: "For the Simulator and CI: they get the debug tier, which sees only the config keys opened to it. Every use is audited." }),
    isOwner() ? el("div", { class: "row" }, name, ttl, el("button", { id: "create-debug-token", onclick: create, text: "Create debug token" })) : null, created,
    table(["Name", "Expires", "Uses", "Last used", "Revoked", ""], listing.tokens.map((t) =>
      el("tr", {}, el("td", { text: t.name }), el("td", { text: when(t.expiresAt) }), el("td", { text: t.uses }), el("td", { text: when(t.lastUsedAt) }),
        el("td", { text: when(t.revokedAt) }),
        el("td", {}, isOwner() && !t.revokedAt ? el("button", { class: "danger small", onclick: () => revoke(t), text: "Revoke" }) : null)))));
}

async function pinsPage() {
  const [listing, keys] = await Promise.all([api("GET", "pins"), api("GET", "pins/signing-key").catch(() => ({}))]);
  const domain = el("input", { id: "pin-domain", placeholder: "api.example.com or *.example.com" });
  const key = el("input", { id: "pin-key", placeholder: "base64 SHA-256 of the SPKI" });
  async function add() {
    try {
      say((await api("POST", "pins", { domainName: domain.value.trim(), key: key.value.trim() })).message, "ok");
      await show("pins");
    } catch (error) {
      failed(error);
    }
  }
  async function remove(pin) {
    if (!confirm("Remove the pin of " + pin.domainName + "? Apps stop requiring that key at their next registry fetch.")) return;
    try {
      say((await api("DELETE", "pins?domainName=" + encodeURIComponent(pin.domainName) + "&key=" + encodeURIComponent(pin.key))).message, "ok");
      await show("pins");
    } catch (error) {
      failed(error);
    }
  }
  return el("section", { class: "card wide" }, el("h2", { text: "Certificate pins" }),
    el("p", { class: "muted", text: "Served signed at /v1/pins/" + state.app + ".json for the SslPinning SDK and SesameKit." }),
    isOwner() ? el("div", { class: "row" }, domain, key, el("button", { id: "add-pin", onclick: add, text: "Add pin" })) : null,
    table(["Domain", "SPKI SHA-256", "Expires", "Added", ""], listing.pins.map((p) =>
      el("tr", {}, el("td", {}, el("code", { text: p.domainName })), el("td", {}, el("code", { class: "id", text: p.key })),
        el("td", { text: p.expire ? when(new Date(p.expire * 1000).toISOString()) : "–" }), el("td", { text: when(p.date) }),
        el("td", {}, isOwner() ? el("button", { class: "danger small", onclick: () => remove(p), text: "Remove" }) : null)))),
    keys.active ? el("div", {}, el("h3", { text: "Registry signing key (the app's signingKeyBase64)" }), el("code", { id: "pin-signing-key", class: "secret", text: keys.active.base64 })) : null);
}

// Attested relays: third-party APIs the app calls through Sesame, which adds their keys. The keys
// are write-only: the page lists the header names a relay injects, never their values.
async function relaysPage() {
  const listing = await api("GET", "relays");
  const input = (id, placeholder, value = "") => el("input", { id: "relay-" + id, placeholder, value });
  const fields = {
    name: input("name", "openai"), upstream: input("upstream", "https://api.openai.com"), methods: input("methods", "POST", "POST"),
    paths: el("textarea", { id: "relay-paths", class: "key-text", rows: 3, placeholder: "/v1/chat/completions  (a pattern a line; * one segment, a final ** the rest)" }),
    headers: el("textarea", { id: "relay-headers", class: "key-text", rows: 2, placeholder: "Authorization: Bearer sk-…  (one a line; left empty, a change keeps the relay's)" }),
    leastTier: el("select", { id: "relay-leastTier" }, ...["attested", "debug", "unattested"].map((tier) => el("option", { value: tier, text: "least tier: " + tier }))),
    proof: el("select", { id: "relay-proof" }, ...["none", "limitedUseToken", "assertion"].map((proof) => el("option", { value: proof, text: "proof: " + proof }))),
    perInstallPerMinute: input("perInstallPerMinute", "calls / install / minute"), perInstallPerDay: input("perInstallPerDay", "calls / install / day"),
    perAppPerDay: input("perAppPerDay", "calls / app / day"),
  };
  function edit(relay) {
    fields.name.value = relay.name;
    fields.upstream.value = relay.upstream;
    fields.methods.value = relay.methods.join(", ");
    fields.paths.value = relay.paths.join("\n");
    fields.headers.value = "";
    fields.leastTier.value = relay.leastTier;
    fields.proof.value = relay.proof;
    for (const quota of ["perInstallPerMinute", "perInstallPerDay", "perAppPerDay"]) fields[quota].value = relay[quota] == null ? "" : String(relay[quota]);
  }
  async function save() {
    const body = {
      upstream: fields.upstream.value.trim(), methods: fields.methods.value.split(",").map((m) => m.trim().toUpperCase()).filter(Boolean),
      paths: fields.paths.value.split("\n").map((p) => p.trim()).filter(Boolean), leastTier: fields.leastTier.value, proof: fields.proof.value,
    };
    for (const quota of ["perInstallPerMinute", "perInstallPerDay", "perAppPerDay"]) {
      if (fields[quota].value.trim()) body[quota] = Number(fields[quota].value.trim());
    }
    const lines = fields.headers.value.split("\n").map((line) => line.trim()).filter(Boolean);
    if (lines.length) {
      body.headers = {};
      for (const line of lines) {
        const colon = line.indexOf(":");
        if (colon < 1) return say("Each header line is 'Name: value'.", "error");
        body.headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
      }
    }
    try {
      const reply = await api("PUT", "relays/" + encodeURIComponent(fields.name.value.trim()), body);
      fields.headers.value = "";
      say(reply.message, "ok");
      await show("relays");
    } catch (error) {
      failed(error);
    }
  }
  async function remove(relay) {
    if (!confirm("Remove the relay " + relay.name + "? The app's calls through it are refused from then on.")) return;
    try {
      say((await api("DELETE", "relays/" + encodeURIComponent(relay.name))).message, "ok");
      await show("relays");
    } catch (error) {
      failed(error);
    }
  }
  const quotas = (r) => [r.perInstallPerMinute != null ? r.perInstallPerMinute + "/install/min" : null, r.perInstallPerDay != null ? r.perInstallPerDay + "/install/day" : null,
    r.perAppPerDay != null ? r.perAppPerDay + "/app/day" : null].filter(Boolean).join(", ") || "none";
  return el("section", { class: "card wide" }, el("h2", { text: "Attested relays" }),
    el("p", { class: "muted", text: "An app calls /v1/relay/<name>/… with its access token; Sesame checks the install as for a config, adds the headers below, and forwards the call to the upstream. The header values never leave Sesame." }),
    table(["Name", "Upstream", "Methods", "Paths", "Injects", "Least tier", "Proof", "Quotas", ""], listing.relays.map((r) =>
      el("tr", {}, el("td", {}, el("code", { text: r.name })), el("td", {}, el("code", { text: r.upstream })), el("td", { text: r.methods.join(", ") }),
        el("td", {}, ...r.paths.map((p) => el("code", { class: "path", text: p }))), el("td", { text: r.headerNames.join(", ") + (r.headersUsable ? "" : " (unusable: sealed for another upstream; set them again)") }),
        el("td", { text: r.leastTier }), el("td", { text: r.proof }), el("td", { text: quotas(r) }),
        el("td", {}, isOwner() ? el("button", { class: "small", onclick: () => edit(r), text: "Edit" }) : null,
          isOwner() ? el("button", { class: "danger small", onclick: () => remove(r), text: "Remove" }) : null)))),
    isOwner() ? el("div", {}, el("h3", { text: "Make or change a relay" }),
      el("div", { class: "row" }, fields.name, fields.upstream, fields.methods, fields.leastTier, fields.proof),
      el("div", { class: "row" }, fields.paths, fields.headers),
      el("div", { class: "row" }, fields.perInstallPerMinute, fields.perInstallPerDay, fields.perAppPerDay,
        el("button", { id: "set-relay", class: "primary", onclick: save, text: "Save relay" }))) : null);
}

// Apple: the team's DeviceCheck key, which signs Sesame's calls to Apple for the app. Write-only:
// the page shows its id and what Apple made of it, never the key.
async function applePage() {
  if (!isOwner()) {
    return el("section", { class: "card" }, el("h2", { text: "Apple DeviceCheck key" }), el("p", { class: "muted", text: "Only owners see and set the app's Apple key." }));
  }
  let current = null;
  try {
    current = await api("GET", "apple/credentials");
  } catch (error) {
    if (error.code !== "apple_credentials_not_set") throw error;
  }
  const keyID = el("input", { id: "apple-key-id", placeholder: "ABCDE12345", value: current ? current.keyId : "" });
  const privateKey = el("textarea", { id: "apple-private-key", class: "key-text", rows: 5, placeholder: "-----BEGIN PRIVATE KEY-----  (the .p8 file's text)" });
  async function change(method, path, body, confirmation) {
    if (confirmation && !confirm(confirmation)) return;
    try {
      const reply = await api(method, path, body);
      // Setting or checking answers Apple's verdict: a refusal is shown as the error it is.
      const check = (reply.credentials || reply).check;
      say(reply.message || (check ? check.message : "Done."), check && check.outcome !== "accepted" ? "error" : "ok");
      await show("apple");
    } catch (error) {
      failed(error);
    }
  }
  const verdict = current && current.check
    ? el("p", { id: "apple-verdict", class: "notice " + (current.check.outcome === "accepted" ? "ok" : "error"),
      text: "Apple: " + current.check.outcome.replace("_", " ") + " (" + when(current.check.checkedAt) + "). " + current.check.message })
    : null;
  return el("section", { class: "card wide" }, el("h2", { text: "Apple DeviceCheck key" }),
    el("p", { class: "muted", text: "The .p8 key from your Apple developer account signs Sesame's calls to Apple for this app (DeviceCheck bits, App Attest receipts). Sesame keeps it sealed and never shows it again." }),
    current
      ? table(["Key id", "Team", "Set by", "Set"], [el("tr", {}, el("td", {}, el("code", { text: current.keyId })), el("td", { text: current.teamId }),
        el("td", { text: current.setBy }), el("td", { text: when(current.setAt) }))])
      : el("p", { id: "apple-not-set", text: "No key is set: Sesame asks Apple nothing for this app." }),
    verdict,
    el("div", { class: "row" }, keyID, privateKey,
      el("button", { id: "set-apple-key", class: "primary", onclick: () => change("PUT", "apple/credentials", { keyId: keyID.value.trim(), privateKey: privateKey.value }), text: current ? "Replace key" : "Set key" })),
    current ? el("div", { class: "row" },
      el("button", { id: "check-apple-key", onclick: () => change("POST", "apple/credentials/check"), text: "Check with Apple" }),
      el("button", { id: "remove-apple-key", class: "danger", onclick: () => change("DELETE", "apple/credentials", undefined, "Remove the app's Apple key? Sesame then asks Apple nothing for it."), text: "Remove key" })) : null);
}

async function changesPage() {
  const { changes } = await api("GET", "changes");
  const detail = el("div", { id: "change-detail" });
  async function inspect(id) {
    try {
      const shown = await api("GET", "changes/" + id);
      detail.replaceChildren(el("h3", { text: shown.change.summary + " (proposed by " + shown.change.proposer + ")" }),
        el("pre", { class: "code", text: pretty(shown.request) }));
    } catch (error) {
      failed(error);
    }
  }
  async function decide(id, decision) {
    const body = {};
    if (decision === "reject") {
      const reason = prompt("Why reject it? (kept in the audit log)");
      if (reason === null) return;
      body.reason = reason;
    } else if (!confirm("Apply this change now, exactly as proposed?")) {
      return;
    }
    try {
      say((await api("POST", "changes/" + id + "/" + decision, body)).message, "ok");
      await show("changes");
    } catch (error) {
      failed(error);
    }
  }
  return el("section", { class: "card wide" }, el("h2", { text: "Changes waiting for a second person" }),
    el("p", { class: "muted", text: "The app's policy (requireApproval) holds these changes until another member or key approves them; nobody approves their own. Proposals expire after 24 hours." }),
    changes.length === 0 ? el("p", { class: "muted", text: "No change has been proposed." }) :
      table(["Proposed", "What", "By", "State", "Decided by", ""], changes.map((c) =>
        el("tr", { "data-change": c.id.toLowerCase() }, el("td", { text: when(c.createdAt) }), el("td", { text: c.summary }), el("td", { text: c.proposer }),
          el("td", {}, el("span", { class: "badge", text: c.state }), c.outcome ? el("span", { class: "muted", text: " " + c.outcome }) : null),
          el("td", { text: c.decidedBy || "–" }),
          el("td", {}, el("button", { class: "small inspect", onclick: () => inspect(c.id), text: "Show" }),
            canEdit() && c.state === "pending" ? el("button", { class: "small approve", onclick: () => decide(c.id, "approve"), text: "Approve" }) : null,
            canEdit() && c.state === "pending" ? el("button", { class: "small reject", onclick: () => decide(c.id, "reject"), text: "Reject" }) : null)))),
    detail);
}

async function auditPage() {
  const [audit, chain] = await Promise.all([api("GET", "audit?limit=1000&newest=true"), api("GET", "audit/verify")]);
  const action = el("input", { id: "audit-action", placeholder: "config.upload" });
  const actor = el("input", { id: "audit-actor", placeholder: "account:…" });
  const body = el("div", {});
  const refresh = () => body.replaceChildren(auditTable(audit.entries.slice().reverse()
    .filter((e) => e.action.includes(action.value.trim()) && e.actor.includes(actor.value.trim()))));
  action.addEventListener("input", refresh);
  actor.addEventListener("input", refresh);
  refresh();
  return el("section", { class: "card wide" }, el("h2", { text: "Audit log" }),
    el("p", { id: "audit-chain", class: chain.intact ? "notice" : "error" }, chain.message,
      chain.intact && chain.head ? el("span", { class: "muted", text: " Keep the head outside Sesame; 'sesame audit verify --head HASH' checks the log still reaches it." }) : null),
    el("div", { class: "row" }, el("label", { for: "audit-action", text: "Action" }), action, el("label", { for: "audit-actor", text: "Who" }), actor), body);
}

async function policyPage() {
  const { policy } = await api("GET", "policy");
  const tiers = ["attested", "debug", "unattested"];
  const fields = {
    allowDevelopmentKeys: el("select", { id: "policy-allowDevelopmentKeys" }, ["default", "true", "false"].map((v) => el("option", { value: v, text: v }))),
    refreshRequiresAssertion: el("input", { id: "policy-refreshRequiresAssertion", type: "checkbox" }),
    allowDebugTokensInProduction: el("input", { id: "policy-allowDebugTokensInProduction", type: "checkbox" }),
    admitUnattested: el("input", { id: "policy-admitUnattested", type: "checkbox" }),
    blobTier: el("select", { id: "policy-blobTier" }, tiers.map((v) => el("option", { value: v, text: v }))),
    userDataTier: el("select", { id: "policy-userDataTier" }, tiers.map((v) => el("option", { value: v, text: v }))),
    userDocumentQuota: el("input", { id: "policy-userDocumentQuota", type: "number", min: "1" }),
    maxRiskMetric: el("input", { id: "policy-maxRiskMetric", type: "number", min: "1", placeholder: "no limit" }),
    attestationRamp: el("input", { id: "policy-attestationRamp", type: "number", min: "0", max: "100", step: "any", placeholder: "every install" }),
    attestationRampAutomatic: el("input", { id: "policy-attestationRampAutomatic", type: "checkbox" }),
    deviceBanBit: el("select", { id: "policy-deviceBanBit" }, [["none", "no bans"], ["0", "bit 0"], ["1", "bit 1"]].map(([v, t]) => el("option", { value: v, text: t }))),
  };
  fields.attestationRamp.value = policy.attestationRamp === undefined || policy.attestationRamp === null ? "" : String(policy.attestationRamp);
  fields.maxRiskMetric.value = policy.maxRiskMetric === undefined || policy.maxRiskMetric === null ? "" : String(policy.maxRiskMetric);
  fields.deviceBanBit.value = policy.deviceBanBit === undefined || policy.deviceBanBit === null ? "none" : String(policy.deviceBanBit);
  fields.allowDevelopmentKeys.value = policy.allowDevelopmentKeys === undefined || policy.allowDevelopmentKeys === null ? "default" : String(policy.allowDevelopmentKeys);
  for (const name of ["refreshRequiresAssertion", "allowDebugTokensInProduction", "admitUnattested", "attestationRampAutomatic"]) fields[name].checked = !!policy[name];
  fields.blobTier.value = policy.blobTier;
  fields.userDataTier.value = policy.userDataTier;
  fields.userDocumentQuota.value = policy.userDocumentQuota;
  // The two-person rule: which changes wait for a second member's approval.
  const guarded = { publish: "Publishing a config", rollback: "Rolling a config back, and device overrides", kill_switch: "Kill switches",
    revocation: "Revocations (emergency, and of a device) and lifted bans", policy: "This policy", schema: "Config schemas",
    relay: "Attested relays", apple_key: "The DeviceCheck key", pins: "Certificate pins" };
  const approvals = Object.fromEntries(Object.keys(guarded).map((kind) =>
    [kind, el("input", { id: "policy-approve-" + kind, type: "checkbox" })]));
  for (const kind of policy.requireApproval || []) if (approvals[kind]) approvals[kind].checked = true;
  async function save() {
    const next = Object.assign({}, policy, {
      refreshRequiresAssertion: fields.refreshRequiresAssertion.checked,
      allowDebugTokensInProduction: fields.allowDebugTokensInProduction.checked,
      admitUnattested: fields.admitUnattested.checked,
      attestationRampAutomatic: fields.attestationRampAutomatic.checked,
      blobTier: fields.blobTier.value, userDataTier: fields.userDataTier.value,
      userDocumentQuota: Number(fields.userDocumentQuota.value),
      requireApproval: Object.keys(guarded).filter((kind) => approvals[kind].checked),
    });
    if (fields.attestationRamp.value === "") delete next.attestationRamp;
    else next.attestationRamp = Number(fields.attestationRamp.value);
    if (fields.maxRiskMetric.value === "") delete next.maxRiskMetric;
    else next.maxRiskMetric = Number(fields.maxRiskMetric.value);
    if (fields.deviceBanBit.value === "none") delete next.deviceBanBit;
    else next.deviceBanBit = Number(fields.deviceBanBit.value);
    if (fields.allowDevelopmentKeys.value === "default") delete next.allowDevelopmentKeys;
    else next.allowDevelopmentKeys = fields.allowDevelopmentKeys.value === "true";
    try {
      say((await api("PUT", "policy", next)).message, "ok");
    } catch (error) {
      failed(error);
    }
  }
  const row = (label, field) => el("div", { class: "field" }, el("label", { for: field.id, text: label }), field);
  return el("section", { class: "card narrow" }, el("h2", { text: "Security policy" }),
    row("Accept App Attest development keys", fields.allowDevelopmentKeys),
    row("Refresh needs an App Attest assertion", fields.refreshRequiresAssertion),
    row("Debug tokens in production", fields.allowDebugTokensInProduction),
    row("Admit devices without App Attest (unattested tier)", fields.admitUnattested),
    row("Least tier for blobs", fields.blobTier), row("Least tier for user data", fields.userDataTier),
    row("User documents quota", fields.userDocumentQuota),
    row("DeviceCheck bit that bans a device (needs the Apple key; the same in every app of the team)", fields.deviceBanBit),
    row("Highest risk metric (keys Apple counts for the device; above it an install is revoked)", fields.maxRiskMetric),
    row("Attestation ramp: % of new installs that attest (the others need the unattested tier)", fields.attestationRamp),
    row("Widen the ramp automatically (doubled daily while 95 % of attempts succeed; see Devices)", fields.attestationRampAutomatic),
    el("h3", { text: "Changes that need a second person" }),
    el("p", { class: "muted", text: "A checked change is proposed, not applied, until another member or key approves it on the Approvals page." }),
    Object.entries(guarded).map(([kind, label]) => row(label, approvals[kind])),
    el("p", { class: "muted", text: "User identity: " + policy.userIdentity + (policy.identityIssuer ? " via " + policy.identityIssuer.issuer : " (no issuer set; use the API)") }),
    isOwner() ? el("button", { id: "save-policy", class: "primary", onclick: save, text: "Save policy" }) : el("p", { class: "muted", text: "Only owners change the policy." }));
}

async function peoplePage() {
  const [{ members }, own, { invitations }] = await Promise.all([api("GET", "accounts"), dashboard("GET", "passkeys"),
    isOwner() ? api("GET", "accounts/invitations") : Promise.resolve({ invitations: [] })]);
  const email = el("input", { id: "invite-email", type: "email", placeholder: "name@example.com" });
  const role = el("select", { id: "invite-role" }, ["viewer", "editor", "owner"].map((v) => el("option", { value: v, text: v })));
  const link = el("div", { id: "invite-link" });
  const detail = el("div", { id: "person-detail" });
  const person = (address) => "accounts/" + encodeURIComponent(address);
  async function act(change, message) {
    try {
      await change();
      say(message);
      await show("people");
    } catch (error) {
      failed(error);
    }
  }
  async function invite() {
    try {
      const reply = await api("POST", "accounts/invite", { email: email.value, role: role.value });
      link.replaceChildren(el("p", { class: "notice", text: reply.message }), el("code", { class: "secret", text: reply.inviteURL }));
    } catch (error) {
      failed(error);
    }
  }
  // An owner of every app the person works on sees their passkeys and may end their sessions.
  async function showPasskeys(address) {
    try {
      const { passkeys } = await api("GET", person(address) + "/passkeys");
      detail.replaceChildren(el("h3", { text: "Passkeys of " + address }),
        passkeyTable(passkeys, (id) => act(() => api("DELETE", person(address) + "/passkeys/" + id), "Passkey revoked; " + address + " is signed out.")),
        el("button", { class: "danger", id: "end-sessions", text: "End every session of " + address,
          onclick: () => confirm("Sign " + address + " out of every browser?") && act(() => api("DELETE", person(address) + "/sessions"), address + " is signed out everywhere.") }));
    } catch (error) {
      failed(error);
    }
  }
  const rows = members.map((m) => {
    const roleCell = isOwner()
      ? el("select", { class: "member-role", "data-email": m.email,
          onchange: (e) => act(() => api("PUT", person(m.email), { role: e.target.value }), m.email + " is now " + e.target.value + ".") },
          ["viewer", "editor", "owner"].map((v) => el("option", { value: v, selected: v === m.role, text: v })))
      : m.role;
    const actions = isOwner()
      ? el("td", {},
          el("button", { class: "quiet show-passkeys", "data-email": m.email, onclick: () => showPasskeys(m.email), text: "Passkeys" }),
          el("button", { class: "danger remove-member", "data-email": m.email, text: "Remove",
            onclick: () => confirm("Remove " + m.email + " from " + state.app + "? Their access ends now, and the keys, debug tokens and webhooks they made are revoked.")
              && act(() => api("DELETE", person(m.email) + "?revokeWhatTheyMade=true"), m.email + " was removed, with what they made.") }))
      : el("td", {});
    return el("tr", {}, el("td", { text: m.email }), el("td", {}, roleCell), el("td", { text: when(m.grantedAt) }), actions);
  });
  // Open invitations (owners only): who invited whom, until when; cancelling one closes its link.
  const invitationRows = invitations.map((i) => el("tr", {}, el("td", { text: i.email }), el("td", { text: i.role }),
    el("td", { text: i.invitedBy }), el("td", { text: i.pendingApproval ? "waiting for approval" : when(i.expiresAt) }),
    el("td", {}, el("button", { class: "danger cancel-invitation", "data-email": i.email, text: "Cancel",
      onclick: () => confirm("Cancel the invitation of " + i.email + "? Its link stops opening.")
        && act(() => api("DELETE", "accounts/invitations/" + i.id), "The invitation of " + i.email + " is cancelled.") }))));
  return el("div", { class: "grid" },
    el("section", { class: "card wide" }, el("h2", { text: "People" }),
      table(["Email", "Role", "Since", ""], rows),
      isOwner() ? el("div", { class: "row" }, email, role, el("button", { id: "invite", onclick: invite, text: "Invite" })) : null, link, detail,
      isOwner() ? el("div", { id: "invitations" }, el("h3", { text: "Open invitations" }),
        invitations.length ? table(["Email", "Role", "Invited by", "Expires", ""], invitationRows)
          : el("p", { class: "muted", text: "No invitation is waiting." })) : null),
    el("section", { class: "card wide" }, el("h2", { text: "Your passkeys" }),
      passkeyTable(own.passkeys, (id) => act(() => dashboard("DELETE", "passkeys/" + id), "Passkey revoked; your other sessions ended.")),
      el("button", { id: "add-passkey", onclick: () => act(addPasskey, "Passkey added: sign in with either from now on."), text: "Add a passkey on this device" })));
}

function passkeyTable(passkeys, revoke) {
  return table(["Passkey", "Added", "Last used", ""], passkeys.map((p) =>
    el("tr", {}, el("td", {}, el("code", { text: p.credentialId.slice(0, 12) + "…" })), el("td", { text: when(p.createdAt) }),
      el("td", { text: when(p.lastUsedAt) }),
      el("td", {}, el("button", { class: "danger revoke-passkey", "data-id": p.credentialId, text: "Revoke",
        onclick: () => confirm("Revoke this passkey?") && revoke(p.credentialId) })))));
}

// Registers another passkey for the signed-in person (a second device, a security key).
async function addPasskey() {
  const options = await dashboard("POST", "passkeys/options", {});
  const credential = await navigator.credentials.create({
    publicKey: {
      challenge: fromBase64url(options.challenge),
      rp: options.rp,
      user: { id: fromBase64url(options.user.id), name: options.user.name, displayName: options.user.displayName },
      pubKeyCredParams: options.pubKeyCredParams,
      authenticatorSelection: options.authenticatorSelection,
      excludeCredentials: (options.excludeCredentials || []).map((c) => ({ type: c.type, id: fromBase64url(c.id) })),
      attestation: options.attestation,
      timeout: options.timeout,
    },
  });
  await dashboard("POST", "passkeys", {
    challenge: options.challenge,
    attestationObject: toBase64url(credential.response.attestationObject),
    clientDataJSON: toBase64url(credential.response.clientDataJSON),
  });
}

// MARK: The shell

async function signOut(everywhere) {
  try {
    await dashboard("POST", everywhere ? "signout-everywhere" : "signout", {});
  } catch (error) {
    // Signed out already, or the session ended: the sign-in page follows either way.
  }
  state.session = null;
  history.pushState(null, "", "/dashboard/");
  await render();
}

function shell(pageName) {
  const select = el("select", { id: "app-select", onchange: (e) => { state.app = e.target.value; render(); } },
    state.session.apps.map((a) => el("option", { value: a.appId, selected: a.appId === state.app, text: a.appId })));
  return el("div", { class: "shell" },
    el("header", {},
      el("span", { class: "brand", text: "Sesame" }), select, el("span", { class: "badge", id: "role", text: state.role }),
      el("span", { class: "spacer" }),
      el("span", { class: "muted", id: "who", text: state.session.email }),
      el("button", { id: "sign-out", onclick: () => signOut(false), text: "Sign out" }),
      el("button", { id: "sign-out-everywhere", class: "quiet", onclick: () => signOut(true), text: "Sign out everywhere" })),
    el("nav", {}, Object.entries(pages).map(([name, page]) =>
      el("a", { href: "#/" + name, class: name === pageName ? "active" : null, id: "nav-" + name, text: page.title,
        onclick: (event) => { event.preventDefault(); show(name); } }))),
    el("div", { id: "status", class: "status" }),
    el("main", { id: "page" }));
}

// Shows `route` now (and records it in the history), whether or not the hash changes.
async function show(route) {
  const target = "#/" + route;
  if (location.hash !== target) history.pushState(null, "", target);
  await render();
}

// Renders the page the address names. A newer render supersedes one still loading, so a slow
// page never paints over the one asked for after it. `data-rendered` on <body> counts finished
// renders and `data-busy` says whether one is under way, so a test (or anything else) can wait for
// the page an action leads to.
async function render() {
  const generation = ++state.generation;
  state.inFlight += 1;
  document.body.dataset.busy = "1";
  try {
    await renderPage(() => generation === state.generation);
  } finally {
    state.inFlight -= 1;
    document.body.dataset.rendered = String(++state.renders);
    document.body.dataset.busy = state.inFlight > 0 ? "1" : "0";
  }
}

async function renderPage(isCurrent) {
  const root = document.getElementById("root");
  const hash = location.hash;
  if (hash.startsWith("#invite=")) {
    const page = await invitationPage(hash.slice("#invite=".length));
    if (isCurrent()) root.replaceChildren(el("div", { id: "status", class: "status" }), page);
    return;
  }
  try {
    state.session = await dashboard("GET", "session");
  } catch (error) {
    state.session = null;
    if (isCurrent()) root.replaceChildren(el("div", { id: "status", class: "status" }), signInPage());
    return;
  }
  if (!isCurrent()) return;
  if (state.session.apps.length === 0) {
    root.replaceChildren(el("section", { class: "card narrow" }, el("h1", { text: "No app yet" }), el("p", { text: "Ask an owner for an invitation." })));
    return;
  }
  if (!state.session.apps.some((a) => a.appId === state.app)) state.app = state.session.apps[0].appId;
  state.role = state.session.apps.find((a) => a.appId === state.app).role;
  const pageName = (hash.slice(2).split("?")[0] || "overview");
  const page = pages[pageName] || pages.overview;
  root.replaceChildren(shell(pageName));
  showFlash();
  state.flash = null;
  document.title = page.title + " · Sesame";
  try {
    const content = await page.render();
    if (isCurrent()) document.getElementById("page").replaceChildren(content);
  } catch (error) {
    if (isCurrent()) failed(error);
  }
}

window.addEventListener("hashchange", render);
document.addEventListener("DOMContentLoaded", render);
