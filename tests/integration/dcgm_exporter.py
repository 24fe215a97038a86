"""A stand-in for dcgm-exporter: serves the series a test writes, in the
Prometheus text exposition format dcgm-exporter writes, on any path.

    python3 dcgm_exporter.py PORTFILE SERIESFILE [AUTHFILE [CERT KEY]]

Listens on a free loopback port, written to PORTFILE once it listens.
Each request reads SERIESFILE afresh: one series a line, as the part
after the metric's name ({labels} value); an empty file serves the HELP
and TYPE lines alone (the run's pod is gone).  The labels are those
dcgm-exporter writes for DCGM_FI_DEV_FB_USED with --kubernetes and
--kubernetes-enable-pod-labels (NVIDIA/dcgm-exporter:
internal/pkg/transformation/kubernetes.go copies the pod's labels with
their names sanitized, so memfloor.dev/fingerprint is
memfloor_dev_fingerprint, beside pod, namespace and container; the GPU's
gpu, UUID, device, modelName and Hostname come from its collector, and
older releases wrote hostname).  The HELP text is the counter's in
etc/default-counters.csv.

Any request, GET or POST, gets the same text: pointed at as if it were
Prometheus's API, it is an answer that is not JSON.  The Authorization
header of each POST (what a client of the API sent) is written to
AUTHFILE, when given (an empty AUTHFILE: not written).  With CERT and KEY
it serves https.
"""
import http.server
import os
import ssl
import sys

HEAD = ("# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).\n"
        "# TYPE DCGM_FI_DEV_FB_USED gauge\n")


class Handler(http.server.BaseHTTPRequestHandler):
    def answer(self):
        try:
            with open(self.server.series_file) as f:
                lines = [l.strip() for l in f if l.strip()]
        except OSError:
            lines = []
        body = (HEAD + "".join("DCGM_FI_DEV_FB_USED%s\n" % l
                               for l in lines)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.answer()

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(n)
        if self.server.auth_file:
            with open(self.server.auth_file, "w") as f:
                f.write(self.headers.get("Authorization") or "")
        self.answer()

    def log_message(self, *args):
        pass


def main():
    port_file, series_file = sys.argv[1], sys.argv[2]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.series_file = series_file
    server.auth_file = sys.argv[3] if len(sys.argv) > 3 else None
    if len(sys.argv) > 5:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(sys.argv[4], sys.argv[5])
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    tmp = port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % server.server_address[1])
    os.rename(tmp, port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
