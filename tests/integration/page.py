"""page.py BASE_URL CHROMIUM OUTDIR: memfloord's web page in a real browser.

Starts CHROMIUM headless and drives it through the DevTools protocol over
--remote-debugging-pipe (JSON messages ended by a NUL byte, written to the
browser's fd 3 and read from its fd 4).  Every figure the page must show is
asked of the daemon's API here too, with the same manifest, and compared
with the page's data-mf elements (data-value holds the API's figure; the
text is what a person reads).  Saves OUTDIR/page-desktop.png,
page-phone.png, page-reject.png and page-serve.png.

Prints one "ok - " or "FAIL - " line per check; exits 1 when a check
failed, 2 when the browser could not be driven at all.
"""
import base64
import fcntl
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

BASE, CHROMIUM, OUT = sys.argv[1], sys.argv[2], sys.argv[3]
failed = 0



def js_json(v):
    """v as the page's JSON.stringify writes it: a whole float without
    its '.0' (JavaScript has one number type), the rest as json.dumps."""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return json.dumps(v)

def ok(name):
    print("ok - " + name, flush=True)


def fail(name, why):
    global failed
    failed += 1
    print("FAIL - %s: %s" % (name, why), flush=True)


def check(name, got, want):
    if got == want:
        ok(name)
    else:
        fail(name, "got %r, expected %r" % (got, want))


# --- the API, asked directly ------------------------------------------------

def api(path, body=None, ctype="application/json"):
    data = body if isinstance(body, (bytes, type(None))) else \
        json.dumps(body).encode()
    req = urllib.request.Request(BASE + path, data=data, headers={
        "Content-Type": ctype, "Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def job(workload, model="meta-llama/Llama-3.1-8B", name="my-job", **spec):
    """The manifest the page builds for a link: the defaults it leaves out
    are left out here too."""
    s = {"model": {"name": model}, "workload": workload}
    s.update(spec)
    return {"apiVersion": "memfloor.dev/v1", "kind": "Job",
            "metadata": {"name": name}, "spec": s}


def gb(b):
    return "%.1f GB" % (b / 1e9)


# --- the browser ------------------------------------------------------------

class Browser:
    def __init__(self):
        to_b_r, to_b_w = os.pipe()
        from_b_r, from_b_w = os.pipe()
        # Out of the way of 3 and 4, which os.pipe may have handed out.
        ends = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
                for fd in (to_b_r, from_b_w)]
        for fd in (to_b_r, from_b_w):
            os.close(fd)

        def child():
            os.dup2(ends[0], 3)
            os.dup2(ends[1], 4)

        self.profile = tempfile.mkdtemp(prefix="mf-page-chromium.")
        args = [CHROMIUM, "--headless=new", "--remote-debugging-pipe",
                "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
                "--disable-extensions", "--disable-background-networking",
                "--disable-component-update", "--disable-sync",
                "--user-data-dir=" + self.profile, "about:blank"]
        if os.getuid() == 0:
            args.insert(1, "--no-sandbox")
        self.log = open(os.path.join(OUT, "page-chromium.log"), "w")
        # A session of its own: close() ends the browser's helpers too.
        self.proc = subprocess.Popen(args, preexec_fn=child, close_fds=False,
                                     start_new_session=True,
                                     stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=self.log)
        for fd in ends:
            os.close(fd)
        self.w = os.fdopen(to_b_w, "wb", buffering=0)
        self.r = os.fdopen(from_b_r, "rb", buffering=0)
        self.next_id = 0
        self.replies = {}
        self.events = queue.Queue()
        self.cond = threading.Condition()
        threading.Thread(target=self.reader, daemon=True).start()
        self.session = None

    def reader(self):
        buf = b""
        while True:
            chunk = self.r.read(65536)
            if not chunk:
                with self.cond:
                    self.replies[None] = True
                    self.cond.notify_all()
                return
            buf += chunk
            while b"\0" in buf:
                msg, buf = buf.split(b"\0", 1)
                m = json.loads(msg)
                if "id" in m:
                    with self.cond:
                        self.replies[m["id"]] = m
                        self.cond.notify_all()
                else:
                    self.events.put(m)

    def send(self, method, params=None, session=True, timeout=30):
        self.next_id += 1
        i = self.next_id
        m = {"id": i, "method": method, "params": params or {}}
        if session and self.session:
            m["sessionId"] = self.session
        self.w.write(json.dumps(m).encode() + b"\0")
        deadline = time.time() + timeout
        with self.cond:
            while i not in self.replies:
                if None in self.replies:
                    raise RuntimeError("chromium closed the pipe")
                left = deadline - time.time()
                if left <= 0:
                    raise RuntimeError(method + ": no answer")
                self.cond.wait(left)
            m = self.replies.pop(i)
        if "error" in m:
            raise RuntimeError("%s: %s" % (method, m["error"]))
        return m["result"]

    def close(self):
        try:
            self.send("Browser.close", session=False, timeout=5)
        except RuntimeError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        shutil.rmtree(self.profile, ignore_errors=True)


class Page:
    """One tab, with what it logged and requested kept."""

    def __init__(self, b):
        self.b = b
        t = b.send("Target.createTarget", {"url": "about:blank"},
                   session=False)
        b.session = b.send("Target.attachToTarget", {
            "targetId": t["targetId"], "flatten": True},
            session=False)["sessionId"]
        for d in ("Page", "Runtime", "Log", "Network"):
            b.send(d + ".enable")
        self.console = []    # (where, text): script errors and the like
        self.network = []    # (url, status) of every response
        self.failures = []   # (url, text) of requests that failed
        self.requests = []   # (method, url, postData)
        self.loaded = False

    def drain(self):
        while True:
            try:
                m = self.b.events.get_nowait()
            except queue.Empty:
                return
            self.event(m["method"], m.get("params", {}))

    def event(self, method, p):
        if method == "Runtime.exceptionThrown":
            d = p["exceptionDetails"]
            text = d.get("exception", {}).get("description") or d["text"]
            self.console.append(("exception", text))
        elif method == "Runtime.consoleAPICalled" and p["type"] in (
                "error", "assert", "warning"):
            text = " ".join(str(a.get("value", a.get("description", "")))
                            for a in p["args"])
            self.console.append(("console." + p["type"], text))
        elif method == "Log.entryAdded":
            e = p["entry"]
            if e["level"] in ("error", "warning"):
                self.console.append((e["source"] + " " + e["level"],
                                     e["text"] + " " + e.get("url", "")))
        elif method == "Network.requestWillBeSent":
            r = p["request"]
            self.requests.append((r["method"], r["url"],
                                  r.get("postData")))
        elif method == "Network.responseReceived":
            self.network.append((p["response"]["url"],
                                 p["response"]["status"]))
        elif method == "Network.loadingFailed":
            self.failures.append((p.get("requestId"), p["errorText"]))
        elif method == "Page.loadEventFired":
            self.loaded = True

    def js(self, expr):
        r = self.b.send("Runtime.evaluate", {
            "expression": expr, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in r:
            raise RuntimeError("%s: %s" % (expr, r["exceptionDetails"]))
        return r["result"].get("value")

    def settle(self, timeout=15):
        """Wait until the page has put its answers up."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            self.drain()
            try:
                if self.loaded and self.js(
                        "document.body && document.body.dataset.state") \
                        == "ready":
                    time.sleep(0.05)
                    self.drain()
                    if self.js("document.body.dataset.state") == "ready":
                        return True
            except RuntimeError:
                pass
            time.sleep(0.05)
        raise RuntimeError("the page did not settle: state %r" % self.js(
            "document.body && document.body.dataset.state"))

    def open(self, path):
        self.loaded = False
        self.b.send("Page.navigate", {"url": BASE + path})
        self.settle()

    def mf(self, name):
        """[value, text] of the data-mf element NAME, or None."""
        return self.js("(() => { const e = document.querySelector("
                       "'[data-mf=\"%s\"]'); return e ? [e.getAttribute("
                       "'data-value'), e.textContent] : null; })()" % name)

    def key(self, key, code, vk, text=None, modifiers=0, commands=None):
        for t in ("keyDown", "keyUp"):
            p = {"type": t, "key": key, "code": code,
                 "windowsVirtualKeyCode": vk, "modifiers": modifiers}
            if text and t == "keyDown":
                p["text"] = text
            if commands and t == "keyDown":
                p["commands"] = commands
            self.b.send("Input.dispatchKeyEvent", p)

    def tab_to(self, elem_id, most=80):
        """Press Tab until the element with id ELEM_ID has the focus."""
        for _ in range(most):
            self.key("Tab", "Tab", 9)
            if self.js("document.activeElement && "
                       "document.activeElement.id") == elem_id:
                return True
        return False

    def size(self, width, height, mobile):
        self.b.send("Emulation.setDeviceMetricsOverride", {
            "width": width, "height": height, "deviceScaleFactor": 1,
            "mobile": mobile})

    def screenshot(self, name):
        m = self.b.send("Page.getLayoutMetrics")["cssContentSize"]
        shot = self.b.send("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": m["width"],
                     "height": m["height"], "scale": 1}})
        path = os.path.join(OUT, name)
        with open(path, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
        return path


# --- the checks -------------------------------------------------------------

def same_figures(pg, name, decision, estimate):
    """The page's figures are the API's for the same manifest."""
    check(name + ": admitted", pg.mf("admitted"),
          ["yes" if decision["admitted"] else "no"] * 2)
    check(name + ": minMemory", pg.mf("minMemory"), [decision["minMemory"]] * 2)
    need = decision["need"]["perGpuBytes"]
    check(name + ": per-GPU need", pg.mf("perGpuBytes"), [str(need), gb(need)])
    if decision["admitted"]:
        p = decision["placement"]
        check(name + ": placement", [pg.mf("placement-gpu"),
                                     pg.mf("placement-count")],
              [[p["gpu"]] * 2, [str(p["count"])] * 2])
    shown = pg.js("[...document.querySelectorAll('[data-mf^=bucket-]')]"
                  ".map(e => [e.dataset.mf, e.dataset.value, e.textContent])")
    want = [["bucket-" + b["name"], str(b["bytes"]), gb(b["bytes"])]
            for b in estimate["buckets"]]
    check(name + ": buckets", shown, want)
    formulas = pg.js("[...document.querySelectorAll('.chart .formula')]"
                     ".map(e => e.textContent)")
    check(name + ": bucket formulas", formulas,
          [b["formula"] for b in estimate["buckets"]])


def sent_body(pg, since):
    """The body of the page's last POST /v1/admit after request SINCE."""
    posts = [r for r in pg.requests[since:]
             if r[0] == "POST" and urllib.parse.urlsplit(r[1]).path
             == "/v1/admit"]
    return posts[-1][2] if posts else None


def sent_manifest(pg, since):
    body = sent_body(pg, since)
    return json.loads(body) if body is not None else None


def placed(manifest, decision):
    """The manifest with the fields the placement's fixes set (its
    manifestChange, dotted paths), as the job was placed."""
    m = json.loads(json.dumps(manifest))
    change = (decision.get("placement") or {}).get("manifestChange") or {}
    for path, value in change.items():
        keys = path.split(".")
        o = m
        for k in keys[:-1]:
            o = o.setdefault(k, {})
        o[keys[-1]] = value
    return m, bool(change)


def other_estimator(pg, name, manifest, decision, main):
    """The other estimator's need for the job as placed (the applied fixes'
    fields set) is shown beside the need, labelled so when fixes were
    applied, exactly when the API has one that differs from the need."""
    other = "post" if main.get("estimator", "pytorch") != "post" else "pytorch"
    m, as_placed = placed(manifest, decision)
    st, ans = api("/v1/estimate?estimator=" + other, m)
    shown = pg.mf("other-perGpuBytes")
    need = decision["need"]["perGpuBytes"]
    if st == 200 and ans.get("estimator") == other and \
            ans["perGpuBytes"] != need:
        check(name + ": %s estimator's need%s beside it" %
              (other, " for the job as placed" if as_placed else ""), shown,
              [str(ans["perGpuBytes"]), gb(ans["perGpuBytes"])])
        label = pg.js("(e => e && e.closest('dd').previousElementSibling"
                      ".textContent)(document.querySelector("
                      "'[data-mf=other-perGpuBytes]'))")
        check(name + ": labelled", label,
              "With " + other + (", as placed" if as_placed else ""))
    else:
        check(name + ": no other estimator's need (the API has none that "
              "differs)", shown, None)


def wraps(pg, name, selector):
    """The elements SELECTOR matches stay inside their boxes and the
    screen: long text wraps rather than running past the edge."""
    got = pg.js(
        "[...document.querySelectorAll(%s)].filter(e => e.offsetParent)"
        ".map(e => [e.scrollWidth <= e.clientWidth + 1, "
        "e.getBoundingClientRect().right <= innerWidth + 1])" %
        json.dumps(selector))
    check(name, bool(got) and all(a and b for a, b in got), True)


def shown_fields(pg, names):
    """Those of the form's fields NAMES (query names) that are shown."""
    return pg.js("%s.filter(q => { const w = document.getElementById("
                 "'w-f-' + q.replace('.', '-')); return w && !w.hidden; })"
                 % json.dumps(names))


SERVING_FIELDS = ["weightsDtype", "groupSize", "server",
                  "gpuMemoryUtilization", "maxNumBatchedTokens", "blockSize"]


def serving_figures(pg, name, decision, estimate):
    """An inference job's figures: each placement's maxConcurrency and
    maxContextLength, the chosen one's as data-mf; each bucket's per-GPU
    share where it differs from the whole job's."""
    p = decision["placement"]
    check(name + ": the placement's maxConcurrency and maxContextLength",
          [pg.mf("maxConcurrency"), pg.mf("maxContextLength")],
          [[str(p["maxConcurrency"]), "{:,}".format(p["maxConcurrency"])],
           [str(p["maxContextLength"]),
            "{:,}".format(p["maxContextLength"])]])
    cols = pg.js("(() => { const h = [...document.querySelectorAll("
                 "'#placement thead th')].map(c => c.textContent); "
                 "const i = h.indexOf('Max sequences'), "
                 "j = h.indexOf('Max context'); "
                 "return [...document.querySelectorAll('#placement tbody tr')]"
                 ".map(r => [r.cells[i].textContent, r.cells[j].textContent])"
                 "; })()")
    check(name + ": every placement's sequences and context, as the API's",
          cols, [["{:,}".format(a["maxConcurrency"]),
                  "{:,}".format(a["maxContextLength"])]
                 for a in [p] + decision["alternatives"]])
    shown = pg.js("[...document.querySelectorAll('[data-mf^=perGpu-]')]"
                  ".map(e => [e.dataset.mf, e.dataset.value, e.textContent])")
    check(name + ": per-GPU bucket figures where they differ", shown,
          [["perGpu-" + b["name"], str(b["perGpuBytes"]),
            gb(b["perGpuBytes"]) + " per GPU"]
           for b in estimate["buckets"] if b["perGpuBytes"] != b["bytes"]])


def serving(pg):
    # 8. Serving: Llama 3.1 70B in int4 under vLLM, from a link.
    m = job({"kind": "inference", "server": "vllm", "weightsDtype": "int4",
             "concurrency": 16, "contextLength": 8192},
            model="meta-llama/Llama-3.1-70B")
    n0 = len(pg.requests)
    pg.open("/?model=meta-llama/Llama-3.1-70B&kind=inference&server=vllm"
            "&weightsDtype=int4&concurrency=16&contextLength=8192")
    st, d = api("/v1/admit", m)
    _, e = api("/v1/estimate", m)
    check("the API admits the served 70B", st, 200)
    check("serve: the page sent the link's manifest", sent_manifest(pg, n0),
          m)
    check("serve: the serving fields are shown, training's are not",
          shown_fields(pg, SERVING_FIELDS + ["sequenceLength", "optimizer"]),
          SERVING_FIELDS)
    same_figures(pg, "serve", d, e)
    serving_figures(pg, "serve", d, e)
    print("# " + pg.screenshot("page-serve.png"))

    # 9. Tensor parallel over 4 GPUs: the placement takes 4, and each
    # bucket shows what one GPU holds.
    wl = {"kind": "inference", "server": "vllm", "concurrency": 16,
          "contextLength": 8192, "blockSize": 32,
          "parallelism": {"tensor": 4}}
    m = job(wl, model="meta-llama/Llama-3.1-70B")
    n0 = len(pg.requests)
    pg.open("/?model=meta-llama/Llama-3.1-70B&kind=inference&server=vllm"
            "&concurrency=16&contextLength=8192&blockSize=32&tensor=4")
    st, d = api("/v1/admit", m)
    _, e = api("/v1/estimate", m)
    check("the API admits the 70B over 4 GPUs", [st, d["placement"]["count"]],
          [200, 4])
    check("tensor: the page sent parallelism.tensor 4",
          sent_manifest(pg, n0), m)
    same_figures(pg, "tensor", d, e)
    serving_figures(pg, "tensor", d, e)
    check("tensor: some bucket is split over the GPUs",
          any(b["perGpuBytes"] != b["bytes"] for b in e["buckets"]), True)
    # Back to no server: vLLM's fields leave the manifest.
    n0 = len(pg.requests)
    pg.js("(() => { const c = document.getElementById('f-server'); "
          "c.value = 'none'; c.dispatchEvent(new Event('change', "
          "{bubbles: true})); })()")
    pg.settle()
    wl2 = {k: v for k, v in wl.items() if k not in ("server", "blockSize")}
    m2 = job(wl2, model="meta-llama/Llama-3.1-70B")
    check("tensor: without a server, vLLM's fields are left out",
          [sent_manifest(pg, n0), shown_fields(pg, SERVING_FIELDS)],
          [m2, ["weightsDtype", "server"]])
    st, d = api("/v1/admit", m2)
    check("tensor: the API takes it", st in (200, 403), True)
    check("tensor: the page shows the API's decision",
          [pg.mf("admitted"), pg.mf("perGpuBytes")[0]],
          [["yes" if d["admitted"] else "no"] * 2,
           str(d["need"]["perGpuBytes"])])
    # Training: the serving fields leave too, parallelism stays.
    n0 = len(pg.requests)
    pg.js("(() => { const c = document.getElementById('f-kind'); "
          "c.value = 'training'; c.dispatchEvent(new Event('change', "
          "{bubbles: true})); })()")
    pg.settle()
    m3 = job({"sequenceLength": 4096, "parallelism": {"tensor": 4}},
             model="meta-llama/Llama-3.1-70B")
    check("tensor: training sends no serving field",
          [sent_manifest(pg, n0), shown_fields(pg, SERVING_FIELDS + [
              "tensor", "pipeline", "expert"])],
          [m3, ["tensor", "pipeline", "expert"]])
    st, d = api("/v1/admit", m3)
    check("tensor: the API takes the training job", st in (200, 403), True)
    check("tensor: the page shows its decision", pg.mf("admitted"),
          ["yes" if d["admitted"] else "no"] * 2)
    check("tensor: the link carries tensor=4 and no server",
          [("tensor=4" in pg.js("location.search")),
           ("server=" in pg.js("location.search"))], [True, False])

    # 10. An inference job that fits nowhere: its own fixes, each with its
    # manifest change; applying the tensor fix sets parallelism.tensor.
    m = job({"kind": "inference", "concurrency": 16, "contextLength": 8192},
            model="meta-llama/Llama-3.1-70B")
    pg.open("/?model=meta-llama/Llama-3.1-70B&kind=inference&concurrency=16"
            "&contextLength=8192")
    st, d = api("/v1/admit", m)
    check("the API rejects the served 70B in bf16 with 403", st, 403)
    check("serve-reject: suggested fix", pg.mf("suggested"),
          [d["suggested"]] * 2)
    rows = pg.js("[...document.querySelectorAll('#rejection tr[data-fix]')]"
                 ".map(r => [r.dataset.fix, r.nextElementSibling"
                 ".querySelector('[data-part=manifest]').textContent, "
                 "!!r.querySelector('button.apply')])")
    check("serve-reject: each fix, its manifest change, and Apply", rows,
          [[f["fix"], "\n".join("%s: %s" % (k, js_json(v))
                                 for k, v in f["manifestChange"].items()),
            True] for f in d["fixes"]])
    tp = [f for f in d["fixes"] if f["fix"] == "tensor"]
    if not tp or not tp[0]["placement"]:
        fail("serve-reject: a tensor fix that fits", "none in %r" % d["fixes"])
        return
    tp = tp[0]
    n0 = len(pg.requests)
    pg.js("document.querySelector('#rejection tr[data-fix=tensor] "
          "button').click()")
    pg.settle()
    sent = sent_manifest(pg, n0)
    check("serve-reject: Apply sent the fix's manifest change", sent,
          job({"kind": "inference", "concurrency": 16, "contextLength": 8192,
               "parallelism": {"tensor": tp["gpus"]}},
              model="meta-llama/Llama-3.1-70B"))
    st, d = api("/v1/admit", sent) if sent else (None, None)
    check("serve-reject: the API admits the fixed job", st, 200)
    if d:
        check("serve-reject: on the fix's card and count",
              [pg.mf("admitted"), pg.mf("placement-gpu"),
               pg.mf("placement-count")],
              [["yes"] * 2, [tp["placement"]["gpu"]] * 2,
               [str(tp["placement"]["count"])] * 2])
        serving_figures(pg, "serve-reject", d, api("/v1/estimate", sent)[1])


def signed(f):
    """An error as the page writes it: a signed percentage."""
    if f is None:
        return "\u2014"
    return ("+" if f > 0 else "") + "%.1f%%" % (f * 100)


def calibration(pg):
    """The section shows GET /v1/calibration's groups, formatted; page.sh
    posted peaks 1.2 and 0.9 times the estimate at 1/1.25 and 1/0.5 of the
    modelled tokens/s, so the errors (estimate / observed - 1) are
    1/1.2 - 1 and 1/0.9 - 1, and 1.25 - 1 and 0.5 - 1."""
    st, cal = api("/v1/calibration")
    groups = cal.get("groups", []) if st == 200 else []
    rows = pg.js("[...document.querySelectorAll('#calibration tbody tr')]"
                 ".map(r => [...r.cells].map(c => c.textContent))")
    want = [[g["method"] or "\u2014", g["precision"] or "\u2014",
             g["gradientCheckpointing"] or "\u2014",
             g["framework"] or "\u2014", g["card"],
             "{:,}".format(g["count"]),
             signed(g["memory"] and g["memory"]["median"]),
             signed(g["memory"] and g["memory"]["worst"]),
             signed(g["speed"] and g["speed"]["median"]),
             signed(g["speed"] and g["speed"]["worst"])] for g in groups]
    check("calibration: the section shows GET /v1/calibration's groups",
          rows, want)
    hi, lo = 1 / 1.2 - 1, 1 / 0.9 - 1
    fast, slow = 1.25 - 1, 0.5 - 1
    g = groups[0] if len(groups) == 1 else None
    check("calibration: one recipe and card, two runs, the errors' median "
          "and worst",
          g is not None and g["count"] == 2 and g["method"] == "lora"
          and abs(g["memory"]["median"] - (hi + lo) / 2) < 1e-3
          and abs(g["memory"]["worst"] - hi) < 1e-3
          and abs(g["speed"]["median"] - (fast + slow) / 2) < 1e-3
          and abs(g["speed"]["worst"] - slow) < 1e-3, True)
    check("calibration: the figures as the API gave them",
          pg.mf("calibration-memory-worst"),
          [str(g["memory"]["worst"]), signed(g["memory"]["worst"])]
          if g else None)


def run(pg):
    # 1. A shared link: Llama 3.1 8B, checkpointing, 8-bit Adam.
    link = ("/?model=meta-llama/Llama-3.1-8B&sequenceLength=4096"
            "&gradientCheckpointing=true&optimizer=adam8bit&referenceHours=12")
    wl = {"sequenceLength": 4096, "gradientCheckpointing": True,
          "optimizer": "adam8bit"}
    m = job(wl, duration={"referenceHours": 12})
    pg.size(1280, 900, False)
    n0 = len(pg.requests)
    pg.open(link)
    st, d = api("/v1/admit", m)
    st_e, e = api("/v1/estimate", m)
    check("the API admits the link's job", [st, st_e], [200, 200])
    check("link: the page sent the link's manifest", sent_manifest(pg, n0), m)
    same_figures(pg, "link", d, e)
    other_estimator(pg, "link", m, d, e)
    p = d["placement"]
    check("link: placement cost", pg.mf("placement-cost"),
          [str(p["cost"]), "$%.2f" % p["cost"]])
    rows = pg.js("[...document.querySelectorAll('#placement tbody tr')]"
                 ".map(r => r.cells[0].textContent)")
    check("link: placement and alternatives, in the API's order", rows,
          [p["gpu"]] + [a["gpu"] for a in d["alternatives"]])
    # Design 21: the modelled speed and bound beside the hours.
    # (Math.round: halves up.)
    tps = pg.mf("placement-tokensPerSecond")
    check("link: placement tokens a second and bound",
          [[float(tps[0]), tps[1]] if tps else None, pg.mf("placement-bound")],
          [[p["tokensPerSecond"],
            "{:,}".format(int(p["tokensPerSecond"] + 0.5))],
           [p["bound"], p["bound"]]])
    speeds = pg.js("(() => { const h = [...document.querySelectorAll("
                   "'#placement thead th')].map(c => c.textContent); "
                   "const i = h.indexOf('Tokens/s'), j = h.indexOf('Bound'); "
                   "return [...document.querySelectorAll('#placement tbody tr')]"
                   ".map(r => [r.cells[i].textContent, r.cells[j].textContent])"
                   "; })()")
    check("link: every placement's tokens a second and bound, as the API's",
          speeds, [["{:,}".format(int(a["tokensPerSecond"] + 0.5)),
                    a["bound"]] for a in [p] + d["alternatives"]])
    calibration(pg)
    _, cat = api("/v1/catalog")
    check("link: the catalogue in service",
          pg.js("[...document.querySelectorAll('#catalog tbody th')]"
                ".map(c => c.textContent)"), [g["name"] for g in cat["gpus"]])
    check("link: catalogue version", pg.mf("catalog-version"),
          [str(cat["version"])] * 2)
    yaml = pg.js("document.getElementById('yaml').textContent")
    check("link: the YAML shown gets the same decision",
          api("/v1/admit", yaml.encode(), "application/yaml"), (st, d))
    for line in ("name: meta-llama/Llama-3.1-8B", "optimizer: adam8bit",
                 "gradientCheckpointing: true", "sequenceLength: 4096",
                 "referenceHours: 12"):
        if line not in yaml:
            fail("link: the manifest shown", "no %r in %r" % (line, yaml))
            break
    else:
        ok("link: the manifest shown has the link's fields")
    unlabelled = pg.js(
        "[...document.querySelectorAll('input, select, textarea, button')]"
        ".filter(c => !(c.labels && c.labels.length) && !c.getAttribute("
        "'aria-label') && !c.textContent.trim()).map(c => c.id || c.outerHTML)")
    check("every control has a label", unlabelled, [])
    check("link: a training job shows no serving field",
          shown_fields(pg, SERVING_FIELDS), [])
    print("# " + pg.screenshot("page-desktop.png"))
    pg.size(390, 844, True)
    time.sleep(0.3)
    check("phone width: nothing wider than the screen",
          pg.js("document.documentElement.scrollWidth <= innerWidth"), True)
    wraps(pg, "phone width: the bucket formulas wrap", ".chart .formula")
    check("phone width: the longest formula takes more than one line",
          pg.js("Math.max(...[...document.querySelectorAll('.chart .formula')]"
                ".map(e => e.getClientRects().length && e.offsetHeight))"
                " > 1.6 * parseFloat(getComputedStyle(document.querySelector("
                "'.chart .formula')).fontSize)"), True)
    print("# " + pg.screenshot("page-phone.png"))
    pg.size(1280, 900, False)

    # 2. With the keyboard alone: Tab to gradient checkpointing (false,
    # true, op: the schema's values) and press Up, from true to false; then
    # Tab to the micro-batch and type; the figures follow each change.
    check("keyboard: gradient checkpointing offers the schema's values",
          pg.js("[...document.getElementById('f-gradientCheckpointing')"
                ".options].map(o => o.value)"), ["false", "true", "op"])
    pg.js("document.activeElement && document.activeElement.blur()")
    if not pg.tab_to("f-gradientCheckpointing"):
        fail("keyboard: Tab reaches gradient checkpointing", "it did not")
        return
    ok("keyboard: Tab reaches gradient checkpointing")
    n0 = len(pg.requests)
    pg.key("ArrowUp", "ArrowUp", 38)
    pg.settle()
    wl2 = dict(wl)
    del wl2["gradientCheckpointing"]
    m2 = job(wl2, duration={"referenceHours": 12})
    check("up: the page sent the job without checkpointing",
          sent_manifest(pg, n0), m2)
    _, d2 = api("/v1/admit", m2)
    _, e2 = api("/v1/estimate", m2)
    if d2["need"]["perGpuBytes"] == d["need"]["perGpuBytes"]:
        fail("up: the API's need changed", "it did not")
    same_figures(pg, "up", d2, e2)
    check("up: the address is the new view",
          "gradientCheckpointing" in pg.js("location.search"), False)
    if not pg.tab_to("f-microBatch"):
        fail("keyboard: Tab reaches the micro-batch", "it did not")
        return
    n0 = len(pg.requests)
    pg.key("a", "KeyA", 65, modifiers=2,      # Ctrl+A, then type over it
           commands=["selectAll"])
    pg.b.send("Input.insertText", {"text": "4"})
    pg.settle()
    wl3 = dict(wl2, microBatch=4)
    m3 = job(wl3, duration={"referenceHours": 12})
    check("typed: the page sent micro-batch 4", sent_manifest(pg, n0), m3)
    _, d3 = api("/v1/admit", m3)
    _, e3 = api("/v1/estimate", m3)
    same_figures(pg, "typed", d3, e3)
    check("typed: the link carries it",
          "microBatch=4" in pg.js("location.search"), True)

    # 3. A rejecting link: Llama 3.1 70B, full fine-tune with AdamW.
    n0 = len(pg.requests)
    pg.open("/?model=meta-llama/Llama-3.1-70B&sequenceLength=4096"
            "&referenceHours=100")
    m = job({"sequenceLength": 4096}, model="meta-llama/Llama-3.1-70B",
            duration={"referenceHours": 100})
    st, d = api("/v1/admit", m)
    _, e = api("/v1/estimate", m)
    check("the API rejects the 70B job with 403", st, 403)
    check("reject: the page sent the link's manifest", sent_manifest(pg, n0),
          m)
    same_figures(pg, "reject", d, e)
    check("reject: reason", pg.mf("reason"), [d["reason"]] * 2)
    check("reject: suggested fix", pg.mf("suggested"), [d["suggested"]] * 2)
    sug = [f for f in d["fixes"] if f["fix"] == d["suggested"]][0]
    row = pg.js("(() => { const r = document.querySelector("
                "'#rejection tr.suggested'); return r ? [r.dataset.fix, "
                "r.cells[3].textContent, r.cells[6].textContent, "
                "r.nextElementSibling.querySelector('[data-part=manifest]')"
                ".textContent] : null; })()")
    pl = sug["placement"]
    check("reject: the suggested row, its card, cost and manifest change",
          row, [sug["fix"], "%s × %d" % (pl["gpu"], pl["count"]),
                "$%.2f" % pl["cost"],
                "\n".join("%s: %s" % (k, js_json(v))
                          for k, v in sug["manifestChange"].items())])
    codes = pg.js("[...document.querySelectorAll('#rejection "
                  "[data-part=code]')].map(e => e.textContent)")
    check("reject: each fix's code change", codes,
          ["\n".join(f["codeChange"]) for f in d["fixes"]])
    check("reject: one row a fix, in the API's order",
          pg.js("[...document.querySelectorAll('#rejection tbody tr[data-fix]')]"
                ".map(r => r.dataset.fix)"), [f["fix"] for f in d["fixes"]])
    print("# " + pg.screenshot("page-reject.png"))
    # Apply the suggested fix, from the keyboard: its manifest change lands
    # in the controls and the job is admitted where the fix said.
    pg.js("document.querySelector('#rejection tr.suggested button').focus()")
    n0 = len(pg.requests)
    pg.key("Enter", "Enter", 13, text="\r")
    pg.settle()
    sent = sent_manifest(pg, n0)
    st, d = api("/v1/admit", sent) if sent else (None, None)
    check("apply: the API admits the fixed job", st, 200)
    if d:
        check("apply: the page shows it admitted on the fix's card",
              [pg.mf("admitted"), pg.mf("placement-gpu"),
               pg.mf("placement-count")],
              [["yes"] * 2, [pl["gpu"]] * 2, [str(pl["count"])] * 2])
        check("apply: on the card the API places it", pl["gpu"],
              d["placement"]["gpu"])

    # 3b. Admission applies FSDP (Llama 3.1 70B over one node of B200s, with
    # checkpointing, which keeps FSDP's all-gathers on NVSwitch: design 21,
    # examples/llama-70b-fsdp-nodes.yaml): the need is the job as placed,
    # and so is the other estimator's figure beside it (not the 1 TB of the
    # unsharded job as written).
    link70 = ("/?model=meta-llama/Llama-3.1-70B&sequenceLength=2048"
              "&referenceHours=100&allowedFixes=checkpointing,fsdp")
    m70 = job({"sequenceLength": 2048}, model="meta-llama/Llama-3.1-70B",
              duration={"referenceHours": 100},
              allowedFixes=["checkpointing", "fsdp"])
    pg.open(link70)
    st, d70 = api("/v1/admit", m70)
    _, e70 = api("/v1/estimate", m70)
    check("the API places the 70B job with FSDP", [st, (d70.get(
        "placement") or {}).get("fixes"), bool((d70.get("placement") or
        {}).get("manifestChange"))], [200, ["checkpointing", "fsdp"], True])
    same_figures(pg, "fsdp", d70, e70)
    other_estimator(pg, "fsdp", m70, d70, e70)
    wraps(pg, "fsdp: the bucket formulas stay inside the page",
          ".chart .formula")

    # 4. An error next to the field it names.
    pg.open("/?model=meta-llama/Llama-3.1-8B&sequenceLength=0")
    st, err = api("/v1/admit", job({"sequenceLength": 0}))
    check("the API refuses sequenceLength 0 with 400",
          [st, err.get("field")], [400, "spec.workload.sequenceLength"])
    check("error: shown beside the sequence length", pg.js(
        "[document.getElementById('err-f-sequenceLength').textContent, "
        "document.getElementById('f-sequenceLength')"
        ".getAttribute('aria-invalid')]"), [err["error"], "true"])

    pg.open("/?model=meta-llama/Llama-3.1-8B&sequenceLength=4096"
            "&precision=fp64")
    st, err = api("/v1/admit", job({"sequenceLength": 4096,
                                    "precision": "fp64"}))
    check("the API refuses precision fp64 with 400",
          [st, err.get("field")], [400, "spec.workload.precision"])
    check("error: shown beside the precision", pg.js(
        "[document.getElementById('err-f-precision').textContent, "
        "document.getElementById('f-precision').value]"),
          [err["error"], "fp64"])

    # A long error, a model name of 150 characters without a space, wraps
    # on a phone instead of running off its edge.
    long_name = "acme/" + "x" * 145
    pg.size(390, 844, True)
    pg.open("/?model=" + long_name + "&sequenceLength=4096")
    st, err = api("/v1/admit", job({"sequenceLength": 4096},
                                   model=long_name))
    check("the API refuses the unknown model", [st, err.get("field")],
          [400, "spec.model.name"])
    shown = pg.js("[...document.querySelectorAll('.err')]"
                  ".filter(e => e.textContent).map(e => e.textContent)")
    check("long error: shown", err["error"] in shown, True)
    wraps(pg, "long error: it wraps", ".err")
    check("long error: nothing wider than the screen",
          pg.js("document.documentElement.scrollWidth <= innerWidth"), True)
    pg.size(1280, 900, False)

    # 5. Text from a request stays text.
    name = '<img src=x onerror="window.__mf=1"><b>x</b>'
    pg.open("/?model=meta-llama/Llama-3.1-8B&sequenceLength=4096&name=" +
            urllib.parse.quote(name))
    _, d = api("/v1/admit", job({"sequenceLength": 4096}, name=name))
    check("injection: the API answers with the name", d.get("job"), name)
    check("injection: the page shows the name as text", pg.mf("job"),
          [name, name])
    check("injection: no element made of it", pg.js(
        "document.querySelectorAll('#results img, #results b').length"), 0)

    # 6. A pasted config.json, sent as spec.model.config.
    with open("catalog/models/meta-llama/Llama-3.1-8B.json") as f:
        cfg = f.read()
    n0 = len(pg.requests)
    pg.open("/?config=" + urllib.parse.quote(cfg) + "&sequenceLength=2048")
    m = {"apiVersion": "memfloor.dev/v1", "kind": "Job",
         "metadata": {"name": "my-job"},
         "spec": {"model": {"config": json.loads(cfg)},
                  "workload": {"sequenceLength": 2048}}}
    check("config: the page sent the config inline", sent_manifest(pg, n0),
          m)
    _, d = api("/v1/admit", m)
    _, e = api("/v1/estimate", m)
    same_figures(pg, "config", d, e)
    yaml = pg.js("document.getElementById('yaml').textContent")
    check("config: the YAML shown gets the same decision",
          api("/v1/admit", yaml.encode(), "application/yaml")[1], d)
    # Switching to a pasted manifest starts from the one shown.
    pg.js("document.getElementById('src-manifest').focus()")
    n0 = len(pg.requests)
    pg.key(" ", "Space", 32, text=" ")
    pg.settle()
    check("config: switched to the manifest, the YAML shown is sent",
          [pg.js("document.getElementById('manifest').value"),
           sent_body(pg, n0)], [yaml, yaml])
    check("config: and gets the same decision", pg.mf("perGpuBytes"),
          [str(d["need"]["perGpuBytes"]), gb(d["need"]["perGpuBytes"])])

    # 7. A pasted YAML manifest goes as it is; a floor needs no estimate.
    with open("examples/min-memory-88Gi.yaml") as f:
        text = f.read()
    n0 = len(pg.requests)
    pg.open("/?manifest=" + urllib.parse.quote(text))
    check("manifest: the page sent the YAML as pasted", sent_body(pg, n0),
          text)
    _, d = api("/v1/admit", text.encode(), "application/yaml")
    check("manifest: admitted, floor and placement as the API says",
          [pg.mf("admitted"), pg.mf("minMemory"), pg.mf("placement-gpu"),
           pg.mf("minMemoryBytes")[0]],
          [["yes"] * 2, [d["minMemory"]] * 2, [d["placement"]["gpu"]] * 2,
           str(d["need"]["minMemoryBytes"])])
    check("manifest: no chart without a model",
          pg.js("document.querySelectorAll('[data-mf^=bucket-]').length"), 0)
    bad = text.replace("88Gi", "88Gx")
    pg.open("/?manifest=" + urllib.parse.quote(bad))
    st, err = api("/v1/admit", bad.encode(), "application/yaml")
    check("the API names the bad quantity's line", [st, err.get("field"),
          err.get("line") is not None], [400, "spec.resources.gpu.minMemory",
                                         True])
    check("manifest: the error, with its line, beside the manifest",
          pg.js("document.getElementById('err-manifest').textContent"),
          err["error"])

    serving(pg)

    # 11. Every request stayed on the origin; no script error; the only
    # errors logged are the API's own non-2xx answers (a rejection is 403).
    pg.drain()
    off = [u for _, u, _ in pg.requests
           if not u.startswith(BASE + "/") and not u.startswith("data:")
           and u != "about:blank"]
    check("every request went to memfloord", off, [])
    api_errors = {u for u, s in pg.network
                  if s >= 400 and urllib.parse.urlsplit(u).path
                  in ("/v1/admit", "/v1/estimate")}
    other = [s for u, s in pg.network if s >= 400 and u not in api_errors]
    check("no answer but the API's was an error", other, [])
    bad, told = [], 0
    for where, text in pg.console:
        if where == "network error" and any(u in text for u in api_errors):
            told += 1
            continue
        bad.append("%s: %s" % (where, text))
    # The log is read: the 403 of the rejection and the 400s are in it.
    check("the API's non-2xx answers were logged and told apart",
          told > 0 and any(s == 403 for _, s in pg.network), True)
    check("no console error or warning but the API's answers", bad, [])
    check("no request failed", pg.failures, [])


def main():
    # timeout(1) sends SIGTERM: end the browser on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        b = Browser()
        b.send("Browser.getVersion", session=False, timeout=30)
    except (OSError, RuntimeError) as e:
        print("FAIL - chromium did not start: %s (see %s)" % (
            e, os.path.join(OUT, "page-chromium.log")))
        sys.exit(2)
    try:
        pg = Page(b)
        run(pg)
    except RuntimeError as e:
        fail("driving the page", str(e))
    finally:
        b.close()
    sys.exit(1 if failed else 0)


main()
