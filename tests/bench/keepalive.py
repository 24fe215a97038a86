#!/usr/bin/env python3
"""POST one body N times on one keep-alive connection, one after another.

    keepalive.py PORT PATH BODY CONTENT-TYPE N

make bench (tests/bench/bench.sh) drives a server under callgrind with it:
each request is sent in one write (headers and body together) and its
answer read whole before the next is sent, so the server does the same
work for each.  Fails when an answer's status or size is not the first
one's, or when the server closed the connection.
"""
import http.client
import sys


def main(argv):
    if len(argv) != 6:
        sys.exit(__doc__.strip().splitlines()[2].strip())
    port, path, body_file, ctype, n = argv[1:]
    with open(body_file, "rb") as f:
        body = f.read()
    conn = http.client.HTTPConnection("127.0.0.1", int(port), timeout=600)
    headers = {"Content-Type": ctype}
    first = None
    sock = None
    for i in range(int(n)):
        conn.request("POST", path, body, headers)
        if sock is None:
            sock = conn.sock
        answer = conn.getresponse()
        got = (answer.status, len(answer.read()))
        if first is None:
            first = got
        if got != first or conn.sock is not sock:
            sys.exit("keepalive.py: request %d: status %d, %d bytes, %s;"
                     " the first: status %d, %d bytes" %
                     (i + 1, got[0], got[1],
                      "same connection" if conn.sock is sock else
                      "connection closed", first[0], first[1]))
    conn.close()
    print("%d %d" % first)


if __name__ == "__main__":
    main(sys.argv)
