"""net_peer.py — the reference's TransportServer as the net-chaos peer.

    python net_peer.py LOGDIR --port P

Runs dhp-protocol 1.3.0's own `dhp.net.TransportServer` (unchanged) on
127.0.0.1, appending shipped lines to LOGDIR/<hid>.log; the token is read
from DHP_TRANSPORT_TOKEN by the server itself. With --port 0 the system
picks a free port; once the socket is bound this prints
"listening on 127.0.0.1:PORT" (the reference logs the port it was given,
0), which is what dhp-chaos waits for.
"""
import argparse
import sys
import time

from dhp.net import TransportServer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("logdir")
    ap.add_argument("--port", type=int, default=0)
    a = ap.parse_args()
    srv = TransportServer(a.logdir, host="127.0.0.1", port=a.port)
    srv.start_background()
    while True:
        s = srv._sock
        port = 0
        if s is not None:
            try:
                port = s.getsockname()[1]
            except OSError:
                port = 0
        if port:
            break
        time.sleep(0.01)
    sys.stderr.write(f"net_peer: listening on 127.0.0.1:{port}\n")
    sys.stderr.flush()
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
