#!/usr/bin/env python3
"""A local HTTP server for the model-config fetch tests (stdlib only).

Listens on 127.0.0.1 (port 0 picks a free one), prints the port on the
first line of stdout, and serves:

  /ok             a small model config (tests/data/fetch/ok.json)
  /counted        the same, counted apart from /ok for cache tests
  /flaky          HTTP 500 on the first request, then as /ok
  /hits?path=P    how many requests P (path and query) has had, as text
  /slow           sleeps 10 s (?s=N: N s), then as /ok
  /big            300 KiB with a Content-Length
  /exact          exactly 256 KiB with a Content-Length
  /chunked-big    300 KiB, chunked, no Content-Length
  /chunked-exact  exactly 256 KiB, chunked
  /404            HTTP 404
  /big-404        HTTP 404 with a 300 KiB body
  /redirect-ok    302 to /ok on this host
  /redirect-away  302 to http://127.0.0.2:PORT/ok (another host)
  /redirect-creds 302 to http://user:secret@127.0.0.2:PORT/ok
  /redirect-port  302 to http://127.0.0.1:1/ok (another port)
  /redirect-https 302 to https://evil.invalid/ok
  /redirect-loop  302 to itself
  /redirect-n?n=K K redirects in a row, then /ok
  /truncated      Content-Length 1000, 100 bytes, then the connection closes
  /notjson        200, text that is not JSON

Anything else is 404.
"""
import argparse
import http.server
import os
import sys
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
OK = open(os.path.join(HERE, "..", "data", "fetch", "ok.json"), "rb").read()
KIB = 1024

hits = {}
hits_lock = threading.Lock()


def filler(n):
    """n bytes of a JSON string: what a too-big config might look like."""
    head, tail = b'{"pad": "', b'"}'
    return head + b"x" * (n - len(head) - len(tail)) + tail


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        if os.environ.get("FETCHSERVER_VERBOSE"):
            sys.stderr.write("fetchserver: " + fmt % args + "\n")

    def send(self, code, body=b"", ctype="application/json", headers=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def redirect(self, where):
        self.send(302, b"", "text/plain", [("Location", where)])

    def chunked(self, total):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        body = filler(total)
        for i in range(0, total, 16 * KIB):
            part = body[i:i + 16 * KIB]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
        self.wfile.write(b"0\r\n\r\n")

    def truncated(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "1000")
        self.end_headers()
        self.wfile.write(OK[:100])
        self.wfile.flush()
        self.close_connection = True

    def handle(self):
        # Clients that give up on a big or slow answer hang up; that is
        # what the tests expect, not an error worth a traceback.
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def do_GET(self):
        try:
            self.route()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def route(self):
        url = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(url.query)
        with hits_lock:
            hits[self.path] = hits.get(self.path, 0) + 1
            count = hits[self.path]
        port = self.server.server_address[1]
        p = url.path
        if p in ("/ok", "/counted"):
            self.send(200, OK)
        elif p == "/flaky":
            self.send(500 if count == 1 else 200,
                      b"" if count == 1 else OK)
        elif p == "/hits":
            with hits_lock:
                n = hits.get(q.get("path", [""])[0], 0)
            self.send(200, b"%d\n" % n, "text/plain")
        elif p == "/slow":
            time.sleep(float(q.get("s", ["10"])[0]))
            self.send(200, OK)
        elif p == "/big":
            self.send(200, filler(300 * KIB))
        elif p == "/exact":
            self.send(200, filler(256 * KIB))
        elif p == "/chunked-big":
            self.chunked(300 * KIB)
        elif p == "/chunked-exact":
            self.chunked(256 * KIB)
        elif p == "/big-404":
            self.send(404, filler(300 * KIB))
        elif p == "/redirect-ok":
            self.redirect("/ok")
        elif p == "/redirect-away":
            self.redirect("http://127.0.0.2:%d/ok" % port)
        elif p == "/redirect-creds":
            self.redirect("http://user:secret@127.0.0.2:%d/ok" % port)
        elif p == "/redirect-port":
            self.redirect("http://127.0.0.1:1/ok")
        elif p == "/redirect-https":
            self.redirect("https://evil.invalid/ok")
        elif p == "/redirect-loop":
            self.redirect("/redirect-loop")
        elif p == "/redirect-n":
            n = int(q.get("n", ["0"])[0])
            self.redirect("/redirect-n?n=%d" % (n - 1) if n > 1 else "/ok")
        elif p == "/truncated":
            self.truncated()
        elif p == "/notjson":
            self.send(200, b"this is not JSON\n", "text/plain")
        elif p == "/partial":
            self.send(200, b'{"hidden_size": 4096}')
        else:
            self.send(404, b'{"error": "not found"}')


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()
    srv = http.server.ThreadingHTTPServer((args.host, args.port), Handler)
    srv.daemon_threads = True
    print(srv.server_address[1], flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
